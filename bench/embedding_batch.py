"""What running the int8 file one text at a time costs, and what it changes: the int8 file quantizes
activations on the fly with one scale for a run of the model, so a text's vector moved with the texts
it shared a run with; OnnxMiniLMEmbedder now runs each text alone with it (core.embedding.runs_alone).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/embedding_batch.py                  # 1,000 turns, 300 passages, 4 rounds

- CPU per text on two threads (the worker's drain), the two ways taking turns round by round, on
  LoCoMo turns and long-turn passages (as bench/embedding_engines.py samples them); the ratio of
  each round.
- Cosine of each way's vectors to the float file's, and of the two ways to each other.

No database; prints a Markdown table (docs/benchmarks/int8.md, "One text a run").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--passages", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    os.environ["ENGRAM_EMBED_THREADS"] = "2"
    import django

    django.setup()
    from django.conf import settings

    from core.embedding import OnnxMiniLMEmbedder
    from episodic.passages import split_passages
    from evaluation.recall import build_long, load_locomo

    conversations = load_locomo(LOCOMO)
    turns = [t.text for conv in conversations for t in conv.turns]
    long_episodes = [t.text for conv in build_long(conversations) for t in conv.turns]
    passages = [e[p.start : p.end] for e in long_episodes for p in split_passages(e)]
    questions = [q.text for conv in conversations for q in conv.questions]
    samples = {
        "LoCoMo turns": turns[:: max(1, len(turns) // args.turns)][: args.turns],
        "long-turn passages": [p for p in passages if len(p) > 300][:: max(1, len(passages) // args.passages)][
            : args.passages
        ],
        "LoCoMo questions": questions[:: max(1, len(questions) // 400)][:400],
    }
    int8_path = settings.ENGRAM["EMBEDDING_ONNX"]
    ways = {
        "one text a run": OnnxMiniLMEmbedder(path=int8_path, alone=True),
        "shared runs": OnnxMiniLMEmbedder(path=int8_path, alone=False),
    }
    exact = OnnxMiniLMEmbedder(path=settings.ENGRAM["EMBEDDING_ONNX_FLOAT"])
    for engine in (*ways.values(), exact):
        engine.embed(["warm up", "warm up again"])
    load_before = os.getloadavg()[0]
    print(f"int8 file {int8_path}; load average {load_before:.1f} at the start", file=sys.stderr)
    print("| texts | n | CPU a text, one text a run (ms) | CPU a text, shared runs (ms) | one / shared, per round |")
    print("|---|---:|---:|---:|---|")
    vectors: dict[tuple[str, str], np.ndarray] = {}
    for label in ("LoCoMo turns", "long-turn passages"):
        texts = samples[label]
        cpu: dict[str, list[float]] = {name: [] for name in ways}
        for r in range(args.rounds):
            order = list(ways.items())
            for name, engine in order if r % 2 == 0 else order[::-1]:
                started = time.process_time()
                vectors[(label, name)] = engine.embed(texts)
                cpu[name].append((time.process_time() - started) / len(texts) * 1000)
        ratios = [a / b for a, b in zip(cpu["one text a run"], cpu["shared runs"], strict=True)]
        print(
            f"| {label} | {len(texts)} | {statistics.median(cpu['one text a run']):.2f} | "
            f"{statistics.median(cpu['shared runs']):.2f} | {', '.join(f'{x:.2f}x' for x in ratios)} |"
        )
    for name, engine in ways.items():
        vectors[("LoCoMo questions", name)] = engine.embed(samples["LoCoMo questions"])
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end\n")
    print("| texts | n | cosine | min | p1 | mean |")
    print("|---|---:|---|---:|---:|---:|")
    for label, texts in samples.items():
        float_vectors = exact.embed(texts)
        pairs = {
            "one text a run to float32": (vectors[(label, "one text a run")], float_vectors),
            "shared runs to float32": (vectors[(label, "shared runs")], float_vectors),
            "one text a run to shared runs": (vectors[(label, "one text a run")], vectors[(label, "shared runs")]),
        }
        for pair, (a, b) in pairs.items():
            c = (a * b).sum(axis=1)
            print(f"| {label} | {len(c)} | {pair} | {c.min():.4f} | {np.percentile(c, 1):.4f} | {c.mean():.4f} |")


if __name__ == "__main__":
    main()
