"""History's ranking varied offline (issue 41): a sentence-level relevance, and the re-ranking's constants.

Every question of the set is asked of POST /v1/context in process, exactly as memory_eval asks it (its
`evaluate`, all layers, the whole budget), once per configuration, with
`router.candidates.episodic.pool_relevance` wrapped so that, for that run only,

- the passage's vector similarity (`vector`, the cosine of the query to the passage's one stored vector)
  is replaced by a blend with the best cosine between the query and the passage's sentences:
      blend:a       vector' = (1 - a) x passage cosine + a x best sentence cosine
      len:a         the same with a x clip((line tokens - 40) / 60, 0, 1): sentences only for long lines
      len@L-H:a     the same between L and H tokens
      blendnq:a, lennq:a, ...   the same, questions (sentences ending in "?") left out of the best
      w:0           the passage's vector unchanged
- and the re-ranking's constants are `lexical` (HeuristicWeights.fusion_lexical; the vector part takes
  the rest) and `session` (HeuristicWeights.session_weight).

A configuration is `mode:a:lexical:session`; `w:0:0.6:0.5` is main. Everything else (BM25 over the pool,
speakers, time frames, floors, facts, neighbours, every part of the packer) is the router's own, so the
figures are memory_eval's for that ranking. Sentences: the passage's content cut by the project's own
splitter (episodic.passages._sentences), each embedded by the project's embedder (core.embedding); a
one-sentence passage keeps its stored vector. They are computed once per database and kept beside the
output (`sentences.npz`), with what they cost (`cost.json`).

    set -a; . .data/engram.env; set +a
    psql .../postgres -c "CREATE DATABASE rank_locomo TEMPLATE engram_locomo_base"
    env -u PYTHONPATH -u DJANGO_SETTINGS_MODULE .venv/bin/python bench/rank_offline.py --set locomo \
        --db rank_locomo --every 2 --budgets 1000 --configs w:0:0.6:0.5,blend:1:0.6:0.5 --out .data/rank_locomo
    .venv/bin/python bench/paired_diff.py .data/rank_locomo/blend:1:0.6:0.5.json .data/rank_locomo/w:0:0.6:0.5.json

Each configuration's result is a memory_eval JSON (`<config>.json`: per-question scores, so
bench/paired_diff.py pairs two of them). Run it on a copy of a base database: it writes traces.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import ROOT, scratch_env  # noqa: E402


def sentence_vectors(tenant: Any, out: Path) -> tuple[dict[int, tuple[int, int]], np.ndarray]:
    """Per passage id, the rows [start, end) of its sentences' unit vectors, computed once (kept in `out`)."""
    from core.embedding import get_embedder
    from episodic.models import Passage
    from episodic.passages import _sentences, _trimmed
    from tenants.scope import tenant_scope

    cache = out / "sentences.npz"
    if not cache.exists():
        with tenant_scope(tenant):
            rows = list(
                Passage.objects.filter(embedding__isnull=False, summary=False)
                .order_by("id")
                .values_list("id", "content", "embedding")
            )
        blocks: dict[int, list[str]] = {}
        for pid, content, _ in rows:
            cut = [_trimmed(content, s, e) for s, e in _sentences(content)]
            blocks[pid] = [content[s:e] for s, e in cut if e > s]
        texts = [t for pid, _, _ in rows if len(blocks[pid]) > 1 for t in blocks[pid]]
        embedder = get_embedder()
        wall, cpu = time.perf_counter(), time.process_time()
        embedded = [np.asarray(embedder.embed(texts[k : k + 256]), dtype=np.float32) for k in range(0, len(texts), 256)]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        multi = iter(np.concatenate(embedded) if embedded else np.zeros((0, 384), dtype=np.float32))
        chunks, pids, starts, ends, at = [], [], [], [], 0
        for pid, _, stored in rows:
            n = len(blocks[pid])
            block = np.stack([next(multi) for _ in range(n)]) if n > 1 else np.asarray(stored, dtype=np.float32)[None]
            chunks.append(block)
            pids.append(pid)
            starts.append(at)
            at += len(block)
            ends.append(at)
        vecs = np.concatenate(chunks)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        np.savez(cache, pids=np.array(pids), starts=np.array(starts), ends=np.array(ends), vecs=vecs)
        counts = [max(len(b), 1) for b in blocks.values()]
        (out / "cost.json").write_text(
            json.dumps(
                {
                    "passages": len(rows),
                    "sentences_per_passage_mean": float(np.mean(counts)) if counts else 0.0,
                    "sentences_embedded": len(texts),
                    "embed_cpu_s": cpu,
                    "embed_wall_s": wall,
                    "ms_cpu_per_sentence": 1000 * cpu / max(len(texts), 1),
                },
                indent=1,
            )
        )
    z = np.load(cache)
    spans = {int(p): (int(s), int(e)) for p, s, e in zip(z["pids"], z["starts"], z["ends"], strict=True)}
    return spans, z["vecs"]


def question_rows(tenant: Any, spans: dict[int, tuple[int, int]], rows: int) -> np.ndarray:
    """Which rows of the sentence vectors are questions (a sentence ending in "?"), in sentence_vectors' order."""
    from episodic.models import Passage
    from episodic.passages import _sentences, _trimmed
    from tenants.scope import tenant_scope

    out = np.zeros(rows, dtype=bool)
    with tenant_scope(tenant):
        contents = Passage.objects.filter(id__in=list(spans)).values_list("id", "content")
        for pid, content in contents:
            cut = [_trimmed(content, s, e) for s, e in _sentences(content)]
            texts = [content[s:e] for s, e in cut if e > s]
            start, end = spans[pid]
            if len(texts) == end - start and len(texts) > 1:
                out[start:end] = [t.endswith("?") for t in texts]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="locomo", choices=("locomo", "techchat"))
    parser.add_argument("--db", required=True, help="a copy of a base database")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--budgets", default="1000")
    parser.add_argument("--configs", default="w:0:0.6:0.5", help="mode:a:lexical:session, comma-separated")
    parser.add_argument("--out", required=True, help="a directory: one memory_eval JSON per configuration")
    args = parser.parse_args()
    os.environ.update(scratch_env(args.db))
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()

    from core.embedding import get_embedder
    from evaluation.management.commands import memory_eval
    from evaluation.recall import evaluate
    from router.candidates import episodic
    from tenants.models import Tenant

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tenant = Tenant.objects.get(slug=memory_eval.TENANTS[args.set])
    options = {
        "every": args.every, "questions": 0, "conversations": 0, "dataset": memory_eval.DEFAULT_DATASET,
        "seed": 18, "seed_given": False, "min_tokens": 400, "max_tokens": 800,
    }  # fmt: skip
    conversations = memory_eval.Command()._conversations(args.set, options)
    budgets = [int(b) for b in args.budgets.split(",")]
    spans, vecs = sentence_vectors(tenant, out)
    asks = question_rows(tenant, spans, len(vecs)) if "nq" in args.configs else np.zeros(len(vecs), dtype=bool)
    original = episodic.pool_relevance
    queries: dict[str, np.ndarray] = {}
    config: dict[str, Any] = {}

    def best_sentence(query: str, passage_ids: list[int], fallback: np.ndarray) -> np.ndarray:
        q = queries.get(query)
        if q is None:
            q = np.asarray(get_embedder().embed([query])[0], dtype=np.float32)
            q = queries[query] = q / max(float(np.linalg.norm(q)), 1e-12)
        best = fallback.copy()
        for i, pid in enumerate(passage_ids):
            span = spans.get(int(pid))
            if span is not None:
                told = ~asks[span[0] : span[1]] if config["mode"].endswith("nq") else slice(None)
                cosines = vecs[span[0] : span[1]][told] @ q
                if len(cosines):
                    best[i] = float(cosines.max())
        return best

    def relevance(query: str, pool: Any, *, w: Any, frame: Any = None) -> np.ndarray:
        w = dataclasses.replace(
            w, fusion_lexical=config["lexical"], fusion_vector=1 - config["lexical"], session_weight=config["session"]
        )
        a, mode = config["a"], config["mode"]
        if mode == "w" or a == 0.0 or not len(pool):
            return original(query, pool, w=w, frame=frame)
        v = np.asarray(pool.vector, dtype=np.float64)
        s = best_sentence(query, list(pool.passage_id), v)
        if mode.startswith("len"):
            low, high = (float(x) for x in (mode.removesuffix("nq").partition("@")[2] or "40-100").split("-"))
            tokens = np.asarray(pool.line_tokens, dtype=np.float64)
            share = a * np.clip((tokens - low) / (high - low), 0.0, 1.0)
        elif mode in ("blend", "blendnq"):
            share = np.full(len(v), a)
        else:
            raise ValueError(f"unknown mode {mode!r}")
        vector = ((1 - share) * v + share * s).tolist()
        return original(query, dataclasses.replace(pool, vector=vector), w=w, frame=frame)

    episodic.pool_relevance = relevance  # type: ignore[assignment]
    asker = memory_eval._Asker(tenant)
    try:
        for name in [c for c in args.configs.split(",") if c]:
            mode, a, lexical, session = name.split(":")
            config.update(mode=mode, a=float(a), lexical=float(lexical), session=float(session))
            cpu = time.process_time()
            result = evaluate(conversations, budgets, asker.engram, methods=["engram"])
            result["config"] = name
            result["cpu_s"] = time.process_time() - cpu
            (out / f"{name}.json").write_text(json.dumps(result, indent=1))
            for row in result["results"]:
                if row["group"] == "overall":
                    contained = row["answer_containment"]
                    print(
                        f"{name} {row['budget']} {row['half']}: grounded recall_all {row['grounded_recall_all']:.3f} "
                        f"plain {row['recall_all']:.3f}"
                        + (f" answer containment {contained:.3f}" if contained is not None else ""),
                        flush=True,
                    )
    finally:
        asker.close()
        episodic.pool_relevance = original


if __name__ == "__main__":
    main()
