"""What bounds the learned value (issue 41): on the logged contexts of one feedback half, what a value could
gain at most over the formula, in grounded recall_all, with the same replay of the packing.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/memory_control.py --set locomo --db COPY --reuse --budgets 1000 --trial-part 1 \
        --no-curve --keep-logs LOGS --json RUN.json
    .venv/bin/python bench/value_bound.py --set locomo --db COPY --logs LOGS [--budget 1000]

LOGS holds each feedback half's logged contexts as `--keep-logs` keeps them (each with its question and
request budget). The items a context considered and did not serve are logged by id only: they are
resolved to their text and sources from the stored rows of COPY (the written memory the run asked;
evaluation.pool_bound.stored_items, pool_of), and every item of the pool gets the evidence turns of the
question it grounds (evaluation.pool_bound.evidence_masks: the simulated agent's rule). Then, on each
context of the half at --budget whose question is answerable, each policy's values are replayed as the
training job replays them (router.learning.replay: greedy by value per token within the tokens the
context served), and the question counts when the chosen items ground all of its evidence:

- formula: the formula's logged value;
- other half's model: router.learning.fit on the oldest 70% of the *other* half's contexts (the job's
  model in the bench's direction other half -> this half: what was measured);
- in-sample, served labels: the same fit on all of this half's own contexts (the items it served,
  labelled by the feedback, inverse-propensity weighted): the ceiling of the feature set with this
  model class on the labels the feedback gives;
- in-sample, every item labelled: the same regression on every item of this half's pools (served or
  not), labelled by whether it grounds some evidence, unweighted: the ceiling of the feature set; and
  the same with the formula's terms penalised as the others and a weak penalty (C=10);
- oracle: the labelled evidence items first (cheapest first), then the formula's order: the ceiling of
  any value in this replay;
- in the pool: the pool holds all of the evidence, whatever it costs.

Each policy against the formula, paired by question, with the 95% bootstrap interval. --beside adds each
fit again with the score parts `beside` and `session_best`, computed from the logged pool as the read path
computes them where the logs do not carry them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DATASET, ROOT, scratch_env  # noqa: E402


@dataclass
class Context:
    question: str
    request_budget: int
    logged: Any  # router.learning.LoggedContext
    masks: np.ndarray  # per row: the evidence bits it grounds
    need: int


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="locomo", choices=("locomo", "techchat"))
    parser.add_argument("--db", required=True, help="the copy the run asked (its written memory)")
    parser.add_argument("--logs", required=True, help="the run's --keep-logs folder")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--json", default="")
    parser.add_argument(
        "--beside",
        action="store_true",
        help="also the fits with the parts beside and session_best, computed from the logged pool as the read "
        "path computes them (router.candidates.episodic.beside_relevance) where the logs do not carry them",
    )
    args = parser.parse_args()
    os.environ.update(scratch_env(args.db))
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()

    from evaluation.management.commands import memory_eval
    from evaluation.memory_control import paired_arrays
    from evaluation.pool_bound import evidence_masks, pool_of, stored_items
    from router.features import feature_names, logged_matrix, measured_parts
    from router.learning import HOLDOUT, LoggedContext, _formula_values, _tokens, fit, loaded, replay
    from tenants.models import Tenant

    tenant = Tenant.objects.get(slug=memory_eval.TENANTS[args.set])
    options = {
        "every": 1, "questions": 0, "conversations": 0, "dataset": args.dataset, "seed": 18, "seed_given": False,
        "min_tokens": 400, "max_tokens": 800,
    }  # fmt: skip
    conversations = memory_eval.Command()._conversations(args.set, options)
    questions = {f"{q.sample_id}#{q.index}": q for conv in conversations for q in conv.questions}
    contents = {conv.sample_id: conv.contents() for conv in conversations}
    terms = {conv.sample_id: conv.evidence_terms() for conv in conversations}

    halves: dict[str, list[Context]] = {}
    for path in sorted(Path(args.logs).glob("*.jsonl")):
        raw = _read(path)
        if any(not r.get("question") for r in raw):
            sys.exit(f"{path}: a context without its question (kept by an older memory_control_eval)")
        stored = stored_items(tenant=tenant, ids={str(row["id"]) for r in raw for row in r["rows"]})
        out = []
        for r in raw:
            q = questions[r["question"]]
            served = np.array(r["served"])
            trace = _Trace(
                [row for row, s in zip(r["rows"], served, strict=True) if s],
                [row for row, s in zip(r["rows"], served, strict=True) if not s],
            )
            items, _ = pool_of(trace, stored)
            by_id = dict(
                zip(
                    [i.id for i in items],
                    evidence_masks(q, items, contents[q.sample_id], terms[q.sample_id].__getitem__),
                    strict=True,
                )
            )
            ctx = LoggedContext(
                r["trace_id"], r["policy"], r["rows"], served, np.array(r["propensity"]), np.array(r["used"]),
                r["budget"],
            )  # fmt: skip
            masks = np.array([by_id.get(str(row["id"]), 0) for row in r["rows"]], dtype=object)
            if args.beside:
                _add_beside(r["rows"], stored)
            out.append(Context(r["question"], int(r["request_budget"]), ctx, masks, (1 << len(q.evidence)) - 1))
        halves[path.stem] = out
        print(f"{path.stem}: {len(out)} contexts resolved", file=sys.stderr, flush=True)

    def labelled(contexts: list[Context]) -> list[Any]:
        """Every item of each pool labelled by whether it grounds evidence, as if all were served with chance 1."""
        return [
            LoggedContext(
                c.logged.trace_id,
                c.logged.policy,
                c.logged.rows,
                np.ones(len(c.logged.rows), dtype=bool),
                np.ones(len(c.logged.rows)),
                np.array([m != 0 for m in c.masks]),
                c.logged.budget,
            )  # fmt: skip
            for c in contexts
        ]

    def found(chosen: np.ndarray, c: Context) -> float:
        have = 0
        for m in c.masks[chosen]:
            have |= m
        return float(have & c.need == c.need)

    result: dict[str, Any] = {"set": args.set, "budget": args.budget, "halves": {}}
    names = list(halves)
    for name in names:
        others = [n for n in names if n != name]
        own = halves[name]
        measured = [c for c in own if c.request_budget == args.budget and "overall" in questions[c.question].groups]
        models: dict[str, Any] = {}
        served_rows = [r for c in own for r, s in zip(c.logged.rows, c.logged.served, strict=True) if s]
        every = feature_names(measured_parts(served_rows))
        today = [f for f in every if f not in NEW_COLUMNS]
        columns = {"": today, ", + beside, session_best": today + [f for f in NEW_COLUMNS if f in every]}
        for suffix, names_ in columns.items() if args.beside else [("", today)]:
            if others:
                other = [c.logged for c in halves[others[0]]]
                cut = len(other) - max(1, math.ceil(HOLDOUT * len(other)))
                fitted = fit(other[:cut], columns=names_)
                if fitted is not None:
                    models[f"model of {others[0]} (the bench's){suffix}"] = loaded(fitted, "other")
            fitted = fit([c.logged for c in own], columns=names_)
            if fitted is not None:
                models[f"in-sample, served labels{suffix}"] = loaded(fitted, "own")
            fitted = fit(labelled(own), columns=names_)
            if fitted is not None:
                models[f"in-sample, every item labelled{suffix}"] = loaded(fitted, "all")
            # The same columns with the formula's terms no less penalised than the others and a weak penalty.
            fitted = fit(labelled(own), columns=names_, prior_weight=1.0, penalties=(10.0,))
            if fitted is not None:
                models[f"in-sample, every item labelled, no prior, C=10{suffix}"] = loaded(fitted, "loose")

        scores: dict[str, np.ndarray] = {k: np.zeros(len(measured)) for k in ("formula", *models, "oracle", "pool")}
        for k, c in enumerate(measured):
            tokens = _tokens(c.logged)
            formula = _formula_values(c.logged)
            scores["formula"][k] = found(replay(formula, tokens, c.logged.budget), c)
            for label, model in models.items():
                values = model.predict(logged_matrix(c.logged.rows, model.features))
                scores[label][k] = found(replay(values, tokens, c.logged.budget), c)
            evidence = np.array([m != 0 for m in c.masks])
            scores["oracle"][k] = found(replay(formula + 1e6 * evidence, tokens, c.logged.budget), c)
            scores["pool"][k] = found(np.ones(len(c.masks), dtype=bool), c)
        rows = {}
        print(f"\n{name} at {args.budget} ({len(measured)} answerable questions):")
        for label, s in scores.items():
            p = paired_arrays(s, scores["formula"])
            rows[label] = p.as_dict()
            print(
                f"| {name} | {label} | {p.model:.3f} | {p.difference:+.3f} [{p.low:+.3f}, {p.high:+.3f}] |", flush=True
            )
        result["halves"][name] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


NEW_COLUMNS = ("part:beside", "part:session_best")


def _add_beside(rows: list[dict[str, Any]], stored: Any) -> None:
    """The parts beside and session_best of each logged row, from the logged pool (its hits' passage ids,
    relevance and sessions), where the row does not carry them."""
    from router.candidates.episodic import beside_relevance

    if any("beside" in (r.get("score_parts") or {}) for r in rows):
        return
    hits = [k for k, r in enumerate(rows) if {"passage", "relevance"} <= set(r.get("score_parts") or {})]
    if not hits:
        return
    parts = [rows[k]["score_parts"] for k in hits]
    passages = [int(p["passage"]) for p in parts]
    sessions = [getattr(stored.get(str(rows[k]["id"])), "session", "") or f"?{k}" for k in hits]
    relevance = np.array([float(p["relevance"]) for p in parts])
    near, best = beside_relevance(passages, sessions, relevance)
    by_passage = dict(zip(passages, relevance.tolist(), strict=True))
    top: dict[str, float] = {}
    for session, rel in zip(sessions, relevance.tolist(), strict=True):
        top[session] = max(top.get(session, 0.0), rel)
    for p, b, s in zip(parts, near.tolist(), best.tolist(), strict=True):
        p["beside"], p["session_best"] = round(b, 6), round(s, 6)
    for r in rows:
        p = r.get("score_parts") or {}
        if "neighbour_of" in p:
            found = stored.get(str(r["id"]))
            p["beside"] = round(by_passage.get(int(p["neighbour_of"]), 0.0), 6)
            p["session_best"] = round(top.get(getattr(found, "session", ""), 0.0), 6)


@dataclass(frozen=True)
class _Trace:
    offered: list[dict[str, Any]]
    considered: list[dict[str, Any]]


if __name__ == "__main__":
    main()
