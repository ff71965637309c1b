"""The CPU of scoring a request's candidates with a tenant's value model (router.value.revalue): the
feature matrix (router.features.candidate_matrix), the model's prediction, and the values written back,
at 100 to 800 candidates. Issue 41's target: at most 1 ms of CPU per request at 400 candidates. And what
a trial (router.trial) adds to a request: packing the same candidates into the formula's context with
margin exploration (router.packing.assemble, router.exploration.explore), against router.trial.trial_build
(both contexts, each explored, the model's scoring between them), at a 2,000-token request.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/value_scoring.py                   # writes docs/benchmarks/value_scoring.md
    .venv/bin/python bench/value_scoring.py --repeats 200 --no-write

The candidates are built as the router builds them, without a database: about 70% passages of
episodes (score parts text, vector, overlap, fused, relevance, recency and a passage id), 25% facts
(with their confidence and match parts) and 5% summaries, with their line's tokens counted once (as the
candidates carry them when the packer reads them). The model is a LoadedModel over the columns a
training on their logged rows would choose (router.features: the fixed columns and the measured score
parts, ids left out). CPU time (time.process_time) per call, the median of --rounds rounds of --repeats
calls each, so a loaded machine inflates it less than wall time would.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from router.budgets import budget_plan  # noqa: E402
from router.candidates.episodic import beside_relevance  # noqa: E402
from router.exploration import explore  # noqa: E402
from router.features import candidate_matrix, feature_names, measured_parts  # noqa: E402
from router.packing import assemble  # noqa: E402
from router.parts import packer_parts  # noqa: E402
from router.pricing import line_tokens  # noqa: E402
from router.services import considered_dict  # noqa: E402
from router.trial import trial_build  # noqa: E402
from router.types import LAYERS, Candidate, LayerCandidates  # noqa: E402
from router.value import LoadedModel, revalue  # noqa: E402
from tenants.models import TenantSettings  # noqa: E402

NOW = datetime(2026, 12, 6, tzinfo=UTC)
OUT = ROOT / "docs" / "benchmarks" / "value_scoring.md"


def pool(n: int, seed: int) -> list[Candidate]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = rng.random()
        relevance = rng.random()
        if kind < 0.70:
            parts = {
                "text": rng.random(),
                "vector": rng.random(),
                "overlap": rng.random(),
                "fused": rng.random() / 30,
                "relevance": relevance,
                "recency": rng.random(),
                "passage": float(10_000 + i),
                # Where the hit sits (router.candidates.episodic.beside_relevance), as a learning tenant's carry.
                "beside": rng.random(),
                "session_best": rng.random(),
            }
            item = Candidate(
                id=f"passage:{i}", type="episode", layer="episodic", section="Relevant history",
                text=f"Caroline: I went to the support group on the {i}th, it was powerful " * rng.randint(1, 3),
                value=relevance * rng.random(), score=relevance, score_parts=parts,
                occurred_at=NOW - timedelta(days=rng.random() * 400), group=f"2026-{1 + i % 12:02d}-01",
            )  # fmt: skip
        elif kind < 0.95:
            parts = {"match": rng.random(), "confidence": rng.random(), "relevance": relevance, "vector": rng.random()}
            item = Candidate(
                id=f"fact:{uuid.UUID(int=i)}", type="fact", layer="semantic", section="Known facts",
                text=f"Caroline is researching adoption agencies (since {i})", value=relevance * rng.random(),
                score=relevance, score_parts=parts, occurred_at=NOW - timedelta(days=rng.random() * 400),
                covers=frozenset({f"passage:{i - 1}"}) if rng.random() < 0.3 else frozenset(),
            )  # fmt: skip
        else:
            parts = {"relevance": relevance, "vector": rng.random(), "text": rng.random()}
            item = Candidate(
                id=f"summary:{i}", type="summary", layer="episodic", section="Relevant history",
                text="Session summary: Caroline and Melanie talk about painting and a charity race. " * 2,
                value=relevance * rng.random() / 2, score=relevance, score_parts=parts, filler=True,
                occurred_at=NOW - timedelta(days=rng.random() * 400),
            )  # fmt: skip
        line_tokens(item)
        out.append(item)
    return out


def model_for(items: list[Candidate]) -> LoadedModel:
    rows = [considered_dict(c, propensity=0.0, now=NOW) for c in items]
    names = feature_names(measured_parts(rows))
    rng = np.random.default_rng(0)
    return LoadedModel(
        id=uuid.UUID(int=1), label="value-v1", features=tuple(names), weights=rng.normal(size=len(names)),
        intercept=-3.0, means=rng.normal(size=len(names)), scales=np.abs(rng.normal(size=len(names))) + 0.5,
    )  # fmt: skip


def packing_ms(n: int, repeats: int, rounds: int) -> tuple[float, float]:
    """CPU per request of packing `n` candidates the formula's way (with exploration) and a trial's way."""
    items = pool(n, seed=n)
    model = model_for(items)
    offered = LayerCandidates(
        semantic=[c for c in items if c.layer == "semantic"], episodic=[c for c in items if c.layer == "episodic"]
    )
    plan = budget_plan(config=TenantSettings(), max_tokens=2000, overrides={}, layers=tuple(LAYERS))
    values = [c.value for c in items]

    def formula() -> None:
        for item, value in zip(items, values, strict=True):
            item.value = value
        built = assemble(offered=offered, plan=plan, fmt="markdown", parts=packer_parts())
        explore(built=built, chance=0.2, request_key="a request", fmt="markdown")

    def trial() -> None:
        for item, value in zip(items, values, strict=True):
            item.value = value
        trial_build(
            offered=offered, plan=plan, fmt="markdown", parts=packer_parts(), model=model, share=0.2, chance=0.2,
            request_key="a request", now=NOW,
        )  # fmt: skip

    return cpu_ms(formula, repeats, rounds), cpu_ms(trial, repeats, rounds)


def cpu_ms(call: Callable[[], object], repeats: int, rounds: int) -> float:
    per_round = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(repeats):
            call()
        per_round.append((time.process_time() - start) / repeats * 1000)
    return statistics.median(per_round)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,200,400,800")
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    lines = [
        "| candidates | columns | feature matrix (ms CPU) | prediction (ms CPU) | revalue in all (ms CPU) "
        "| beside and session_best of the pool (ms CPU) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        items = pool(n, seed=n)
        model = model_for(items)
        tokens = [line_tokens(c) for c in items]
        x = candidate_matrix(items, model.features, tokens=tokens, now=NOW)
        matrix = cpu_ms(
            partial(candidate_matrix, items, model.features, tokens=tokens, now=NOW), args.repeats, args.rounds
        )
        predict = cpu_ms(partial(model.predict, x), args.repeats, args.rounds)
        whole = cpu_ms(partial(revalue, model=model, pool=items, now=NOW), args.repeats, args.rounds)
        rng = np.random.default_rng(n)
        hits = (rng.choice(np.arange(1, 20 * n), size=n, replace=False), [f"s-{k}" for k in rng.integers(0, 40, n)])
        where = cpu_ms(partial(beside_relevance, *hits, rng.random(n)), args.repeats, args.rounds)
        lines.append(f"| {n} | {len(model.features)} | {matrix:.3f} | {predict:.3f} | {whole:.3f} | {where:.3f} |")
        print(lines[-1], flush=True)
    packing = [
        "| candidates | the formula's context, explored (ms CPU) | a trial's two contexts (ms CPU) | ratio |",
        "|---:|---:|---:|---:|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        alone, trial = packing_ms(n, max(1, args.repeats // 10), args.rounds)
        packing.append(f"| {n} | {alone:.2f} | {trial:.2f} | {trial / alone:.2f} |")
        print(packing[-1], flush=True)
    if args.no_write:
        return
    command = " ".join(["bench/value_scoring.py", *(shlex.quote(a) for a in sys.argv[1:])])
    OUT.write_text(
        "# Scoring the candidates with a value model: CPU per request\n\n"
        f"Produced by `.venv/bin/python {command}` on {datetime.now(UTC).date().isoformat()} (2 cores shared "
        "with other work: a loaded machine; CPU time, median of the rounds).\n\n"
        "`router.value.revalue` as a request calls it: the feature matrix of the pool "
        "(`router.features.candidate_matrix`), the model's prediction, and the values written back "
        "(the formula's kept among the score parts). Issue 41's target: at most 1 ms of CPU at 400 "
        "candidates.\n\n" + "\n".join(lines) + "\n\n"
        "What a trial adds: packing the candidates into a 2,000-token request's context the formula's way, "
        "with margin exploration at 0.2, against `router.trial.trial_build` (both contexts, each explored, "
        "the model's scoring between them), which every request of a tenant with a model on trial runs.\n\n"
        + "\n".join(packing)
        + "\n\n"
        + (__doc__ or "").split("\n\n", 2)[2].strip()
        + "\n"
    )
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
