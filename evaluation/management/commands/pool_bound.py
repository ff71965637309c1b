"""What bounds recall (issue 41): served against the pool the router considered and the best any packer
could serve from it.

    manage.py pool_bound [--set locomo|techchat] [--tenant SLUG] [--dataset PATH] [--conversations N]
        [--every K] [--questions N] [--budgets 1000,2000,4000] [--json out.json] [--report out.md]
        [--command-line "..."]

The tenant must exist, written and consolidated through the real write path by memory_eval (the
default slug is memory_eval's for the set); nothing is written into it but the traces and a read key.
Every question is asked of POST /v1/context at each budget exactly as memory_eval asks it (its
`evaluate`, all layers), so the served figure is memory_eval's own; each request's trace (offered and
considered items) is then read, its items resolved to their texts and sources, and each question scored
by evaluation.pool_bound: served, pool coverage, the oracle ceiling (all items; episodic passages only)
and, with gold answers, answer containment served, in the pool and its ceiling.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from episodic.models import Session, SessionStatus
from evaluation.management.commands import memory_eval
from evaluation.pool_bound import (
    LOCOMO_CATEGORIES,
    MAX_NEEDED,
    Bound,
    answer_table,
    bound,
    bound_table,
    category_table,
    fidelity,
    pool_of,
    stored_items,
    tally,
)
from evaluation.recall import (
    CATEGORIES,
    HALVES,
    MULTI_SESSION,
    Question,
    Served,
    half_label,
    half_of,
)
from router import services
from router.helper_threads import close_readers
from router.models import ContextTrace, ValueModel
from router.services import MAX_CONSIDERED_IN_TRACE
from tenants.models import Tenant
from tenants.scope import tenant_scope

SET_NAMES = {"locomo": "LoCoMo", "techchat": "the technical set", "updates": "the knowledge-update set"}


class _TracedAsker(memory_eval._Asker):
    """memory_eval's asker, keeping each request's trace id."""

    def __init__(self, tenant: Tenant) -> None:
        super().__init__(tenant)
        self.traces: dict[tuple[str, int, int], str] = {}
        self.contained: dict[tuple[str, int, int], bool | None] = {}

    def engram(self, q: Question, budget: int, layers: Sequence[str] | None = None) -> Served:
        started = time.perf_counter()
        response = self.client.post("/v1/context", self.body(q, budget, layers), format="json")
        latency = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise CommandError(f"POST /v1/context answered {response.status_code}: {response.content[:300]!r}")
        data = response.json()
        self.traces[(q.sample_id, q.index, budget)] = str(data["trace_id"])
        return Served(memory_eval.served_items(data), data["tokens"]["total"], latency, data["prompt"])


class Command(memory_eval.Command):
    help = "What bounds recall: served, pool coverage and the oracle ceiling of the pool, per half and budget."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--set", dest="set_name", default="locomo", choices=tuple(SET_NAMES))
        parser.add_argument("--tenant", default="")
        parser.add_argument("--dataset", default=memory_eval.DEFAULT_DATASET)
        parser.add_argument("--conversations", type=int, default=0)
        parser.add_argument("--every", type=int, default=1)
        parser.add_argument("--questions", type=int, default=0)
        parser.add_argument("--budgets", default="1000,2000,4000")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--report", default="")
        parser.add_argument("--command-line", default="")
        parser.add_argument(
            "--value-model",
            default="",
            help="'newest' or a version: the tenant's value model serves every request (forced; exploration and "
            "trial off, the tenant's settings restored after); default: the formula, as the tenant is",
        )
        parser.add_argument(
            "--logged-pool",
            action="store_true",
            help="The pool as a trace keeps it by default (the best 200 considered), not the whole pool",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        options |= {"seed": 18, "seed_given": False, "no_consolidation": False, "reuse": True}
        options |= {"min_tokens": 400, "max_tokens": 800}
        set_name = options["set_name"]
        budgets = [int(b) for b in options["budgets"].split(",") if b.strip()]
        command = options["command_line"] or "manage.py pool_bound " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        conversations = self._conversations(set_name, options)
        slug = options["tenant"] or memory_eval.TENANTS[set_name]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}: write the set with memory_eval first (this command only asks).")
        wanted = {t.session for conv in conversations for t in conv.turns}
        with tenant_scope(tenant):
            ended = Session.objects.filter(external_id__in=wanted).exclude(status=SessionStatus.OPEN).count()
        if ended != len(wanted):
            raise CommandError(f"Tenant {slug!r} holds {ended} of the set's {len(wanted)} sessions ended: not written.")
        # memory_eval's own check (a turn stored with other text raises; nothing is left to write).
        tenant = self._tenant(slug, set_name, conversations, options)
        if self.write_report.episodes_posted or self.write_report.sessions_ended:
            raise CommandError("The tenant was written to: it was not complete.")
        # The whole pool: the trace keeps every candidate considered (in this process only; what is served
        # does not change). --logged-pool keeps the default cap.
        if not options["logged_pool"]:
            services.MAX_CONSIDERED_IN_TRACE = 1_000_000
        model = _value_model_of(tenant, options["value_model"]) if options["value_model"] else None
        saved = Tenant.objects.filter(id=tenant.id).values("settings", "serving_value_model", "trial_value_model")[0]
        if model is not None:
            Tenant.objects.filter(id=tenant.id).update(
                settings={**saved["settings"], "learned_value": True, "exploration": 0.0, "trial_share": 0.0},
                serving_value_model=model.id,
                trial_value_model=None,
            )
        asker = _TracedAsker(tenant)
        try:
            result = memory_eval.evaluate(
                conversations, budgets, asker.engram, methods=["engram"], progress=lambda m: self.stderr.write(m)
            )
        finally:
            asker.close()
            if model is not None:
                Tenant.objects.filter(id=tenant.id).update(**saved)
        close_readers()  # the traces' considered items are written after commit, by a writer thread
        reference = {
            (row["question"], row["budget"]): bool(row["grounded"])
            for row in result["scored"]
            if row["method"] == "engram"
        }
        contained = {
            (row["question"], row["budget"]): row["contained"] for row in result["scored"] if row["method"] == "engram"
        }
        rows: list[tuple[Question, int, str, Bound, bool | None]] = []
        missing: dict[str, int] = {}
        capped = 0
        rebuilt: dict[str, list[int]] = {}
        mismatched: list[str] = []
        for index, conv in enumerate(conversations):
            half = half_of(index, len(conversations))
            contents = conv.contents()
            terms = conv.evidence_terms()
            ids = {asker.traces[(q.sample_id, q.index, b)] for q in conv.questions for b in budgets}
            with tenant_scope(tenant):
                traces = {str(t.id): t for t in ContextTrace.objects.filter(id__in=ids)}
            stored = stored_items(
                tenant=tenant,
                ids={str(r["id"]) for t in traces.values() for r in (*t.offered, *t.considered)},
            )
            for q in conv.questions:
                for budget in budgets:
                    trace = traces[asker.traces[(q.sample_id, q.index, budget)]]
                    capped += len(trace.considered) > MAX_CONSIDERED_IN_TRACE
                    items, lost = pool_of(trace, stored)
                    for kind, counts in fidelity(trace, items, stored).items():
                        seen = rebuilt.setdefault(kind, [0, 0, 0])
                        seen[:] = [a + b for a, b in zip(seen, counts, strict=True)]
                    for kind, n in lost.items():
                        missing[kind] = missing.get(kind, 0) + n
                    key = (f"{q.sample_id}#{q.index}", budget)
                    b = bound(
                        q,
                        items,
                        limit=int(trace.budgets["memory"]),
                        contents=contents,
                        turn_terms=terms.__getitem__,
                        answer_served=contained.get(key),
                    )
                    ref = reference.get(key)
                    if ref is not None and ref != b.served:
                        mismatched.append(f"{key[0]}@{budget}")
                    rows.append((q, budget, half, b, ref))
            self.stderr.write(f"{conv.sample_id}: pools scored")
        summaries = {k: t.summary() for k, t in tally(rows).items()}
        halves = {h: half_label(conversations, h) for h in HALVES}
        out = {
            "benchmark": "pool-bound",
            "set": set_name,
            "command": command,
            "budgets": budgets,
            "halves": halves,
            "questions": sum(len(c.questions) for c in conversations),
            "served_mismatches": mismatched,
            "unresolved": missing,
            "considered_capped": capped,
            "rebuilt": rebuilt,
            "whole_pool": not options["logged_pool"],
            "value_model": (
                {"version": model.version, "state": model.state, "trained_on": model.trained_on} if model else None
            ),
            "requests": len(rows),
            "write_path": self.write_report.as_dict(),
            "summaries": [{"budget": b, "half": h, "group": g, **s} for (b, h, g), s in sorted(summaries.items())],
        }
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(out, indent=1))
        report = markdown(out, summaries, budgets, halves, conversations_count=len(conversations))
        if options["report"]:
            Path(options["report"]).write_text(report)
        self.stdout.write(report)
        if mismatched:
            raise CommandError(
                f"Served from the trace differs from memory_eval's figure on {len(mismatched)} requests "
                f"(first {mismatched[:5]})."
            )


def _value_model_of(tenant: Tenant, which: str) -> ValueModel:
    with tenant_scope(tenant):
        models = ValueModel.objects.order_by("-version")
        model = models.first() if which == "newest" else models.filter(version=int(which)).first()
    if model is None:
        raise CommandError(
            f"The tenant has no value model {which!r} (bench/memory_control.py --keep-models leaves one)."
        )
    return model


def markdown(
    out: dict[str, Any],
    summaries: dict[tuple[int, str, str], dict[str, Any]],
    budgets: Sequence[int],
    halves: dict[str, str],
    *,
    conversations_count: int,
) -> str:
    set_name = SET_NAMES[out["set"]]
    categories = (
        LOCOMO_CATEGORIES
        if out["set"] == "locomo"
        else sorted({g for (_, _, g) in summaries if g not in ("overall", "adversarial", MULTI_SESSION)})
    )
    served_by = (
        f", served by the learned value v{out['value_model']['version']} (forced)" if out.get("value_model") else ""
    )
    lines = [
        f"## {set_name}{served_by}: served, pool coverage and the oracle ceiling (grounded recall_all, categories 1-4)",
        "",
        f"Produced by `{out['command']}` on {timezone.now():%Y-%m-%d}; {out['questions']} questions, "
        f"{out['requests']} requests.",
        "",
        *bound_table(summaries, budgets=budgets, halves=halves),
        "",
    ]
    answers = answer_table(summaries, budgets=budgets, halves=halves)
    if len(answers) > 2:
        lines += [f"### {set_name}: answer containment, served, in the pool and its ceiling", "", *answers, ""]
    lines += [
        f"### {set_name}: per category at {budgets[-1]} (the largest pool), all conversations",
        "",
        *category_table(summaries, budget=budgets[-1], categories=categories),
        "",
    ]
    if any(g == MULTI_SESSION for (_, _, g) in summaries):
        lines += [
            f"### {set_name}: questions over many sessions (reported apart)",
            "",
            *bound_table(summaries, budgets=budgets, halves=halves, group=MULTI_SESSION),
            "",
        ]
    lines += [
        f"- memory_eval: grounded recall_all as memory_eval scores the same answers (its `evaluate`); "
        f"served: the same, recomputed from the trace's offered items; they differ on "
        f"{len(out['served_mismatches'])} requests.",
        (
            f"- The pool: every candidate the request considered (the trace's cap of {MAX_CONSIDERED_IN_TRACE} "
            f"considered items lifted in the bench's process); {out['considered_capped']} of {out['requests']} "
            f"requests considered more than {MAX_CONSIDERED_IN_TRACE}. `pool coverage, logged`: coverage within "
            f"what a trace keeps by default (served + the best {MAX_CONSIDERED_IN_TRACE} considered by value)."
            if out["whole_pool"]
            else f"- The pool as the trace keeps it (served + the best {MAX_CONSIDERED_IN_TRACE} considered by value)."
        ),
        f"- Questions whose evidence has more than {MAX_NEEDED} turns (covered, the cheapest cover not searched: "
        "not in the ceiling), requests: "
        + (
            ", ".join(
                f"{r['budget']} {r['half']}: {r['not_searched']}"
                for r in out["summaries"]
                if r["group"] == "overall" and r["half"] == "all" and r["not_searched"]
            )
            or "none"
        )
        + ".",
        f"- Items of the pool not resolved to a stored row (left out): {out['unresolved'] or 'none'}. Rebuilt from "
        "the stored rows, the served items (by kind: served, same text, same sources): "
        + "; ".join(f"{k} {v[0]} / {v[1]} / {v[2]}" for k, v in sorted(out["rebuilt"].items()))
        + " (the items left out are rebuilt the same way).",
        "- The rebuilt text of an item left out has no `(earlier)` label (the router adds it per request to an older "
        "statement that a newer one in the pool updates): its tokens are the logged ones, label included.",
        (
            f"- Categories: {', '.join(CATEGORIES.values())}; adversarial questions are not scored."
            if out["set"] == "locomo"
            else "- Overall: the single-statement questions; those over many sessions are reported apart."
        ),
    ]
    if conversations_count < 2:
        lines.append("- One conversation: the halves are not both present.")
    return "\n".join(lines) + "\n"
