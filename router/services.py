"""Writes of the router: build a context (and its trace), record feedback on it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from core.db import execute_bound_by_server, set_locals_with_next_statement
from core.errors import Conflict, ValidationProblem
from core.jsonb import dumps, grouped_column, rows_as_table, rows_table, table_rows
from core.rounding import rounded
from procedural.services import procedure_outcome_record
from router.budgets import budget_plan
from router.exploration import explore
from router.features import age_days, logged_fields
from router.helper_threads import write_after_commit
from router.models import ContextFeedback, ContextTrace, FeedbackOutcome
from router.packing import assemble
from router.parts import packer_parts
from router.policy import get_policy
from router.pricing import line_tokens
from router.selectors import trace_get
from router.trial import MODEL, trial_build
from router.types import FORMATS, LAYERS, BuiltContext, Candidate, ContextRequest
from router.value import pool_of, revalue, serving_model, trial_model
from semantic.services import fact_mark_used
from tenants.locks import subject_lock
from tenants.models import Tenant

# How many left-out candidates a trace keeps (the best ones): enough to learn from, bounded in size.
MAX_CONSIDERED_IN_TRACE = 200


@dataclass(frozen=True)
class ContextResult:
    trace: ContextTrace
    built: BuiltContext
    # The chosen items as the answer shows them, by id.
    shown: dict[str, dict[str, Any]]


def item_dict(item: Candidate) -> dict[str, Any]:
    """An item as the answer shows it."""
    return {
        "id": item.id,
        "type": item.type,
        "layer": item.layer,
        "tokens": line_tokens(item),
        "score": round(item.score, 6),
        "value": round(item.value, 6),
        "score_parts": {k: round(float(v), 6) for k, v in sorted(item.score_parts.items())},
        "sources": [s.as_dict() for s in item.sources],
        "text": item.text,
    }


def traced_dict(item: Candidate, shown: dict[str, Any], *, propensity: float, now: datetime) -> dict[str, Any]:
    """An item served, as its trace keeps it: as the answer shows it, with what a value model learns from
    (router.features) and its chance of being served (router.exploration)."""
    return {**shown, **logged_fields(item, now=now), "propensity": round(propensity, 6)}


def served_rows(
    items: Sequence[Candidate],
    *,
    propensity: Mapping[str, float],
    now: datetime,
    by_policy: tuple[dict[str, float], dict[str, float]] | None = None,
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The served items as the answer shows them (item_dict), by id, and as the trace keeps them
    (traced_dict, their chance of being served from `propensity`, 1 when absent, and during a trial
    _chances): the same dicts, built a column at a time, their numbers rounded together
    (core.rounding.rounded, the same to the bit as round()) and their score parts by shared names."""
    n = len(items)
    head = rounded(
        [*[item.score for item in items], *[item.value for item in items], *[propensity.get(i.id, 1.0) for i in items]],
        6,
    )
    ages = rounded([age_days(item.occurred_at, now) for item in items], 4)
    shapes, shape, values = _parts_columns(items)
    place = [0] * len(shapes)
    shown: dict[str, dict[str, Any]] = {}
    rows: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        k = shape[i]
        names = shapes[k]
        start = place[k]
        place[k] = start + len(names)
        shown[item.id] = answer = {
            "id": item.id,
            "type": item.type,
            "layer": item.layer,
            "tokens": line_tokens(item),
            "score": head[i],
            "value": head[n + i],
            "score_parts": dict(zip(names, values[k][start : start + len(names)], strict=True)),
            "sources": [s.as_dict() for s in item.sources],
            "text": item.text,
        }
        rows.append(
            {
                **answer,
                "age_days": ages[i],
                "filler": item.filler,
                "requires": bool(item.requires),
                "covers": bool(item.covers),
                "propensity": head[2 * n + i],
            }
            | _chances(item, by_policy)
        )
    return shown, rows


def _parts_columns(items: Sequence[Candidate]) -> tuple[list[list[str]], list[int], list[list[float]]]:
    """The items' score parts by shared names (most of a pool's have the same six): each set of names,
    sorted (`shapes`), each item's set by position (`shape`), and per set its items' values one after
    the other, rounded to 6 decimals as round() rounds them."""
    by_names: dict[tuple[str, ...], int] = {}
    shape: list[int] = []
    members: list[list[Candidate]] = []
    for item in items:
        k = by_names.setdefault(tuple(item.score_parts), len(by_names))
        if k == len(members):
            members.append([])
        members[k].append(item)
        shape.append(k)
    shapes = [sorted(names) for names in by_names]
    values = [
        rounded([float(item.score_parts[name]) for item in group for name in ordered], 6)
        for ordered, group in zip(shapes, members, strict=True)
    ]
    return shapes, shape, values


def considered_dict(item: Candidate, *, propensity: float, now: datetime) -> dict[str, Any]:
    """A candidate left out, as its trace keeps it: what a policy learns from (its value, cost, score
    parts and features, and its chance of having been served), without the text and sources, which its
    id leads back to: about 40% smaller than the item."""
    return considered_dicts([item], propensity={item.id: propensity}, now=now)[0]


def considered_dicts(
    items: Sequence[Candidate], *, propensity: Mapping[str, float], now: datetime
) -> list[dict[str, Any]]:
    """considered_dict of each item (its chance of having been served from `propensity`, 0 when absent):
    the rows of considered_table."""
    return table_rows(considered_table(items, propensity=propensity, now=now))


def considered_table(
    items: Sequence[Candidate],
    *,
    propensity: Mapping[str, float],
    now: datetime,
    by_policy: tuple[dict[str, float], dict[str, float]] | None = None,
) -> dict[str, Any]:
    """The left-out items' rows (considered_dict of each, and during a trial each one's chances under
    both policies, _chances) as the trace stores them: their columns (core.jsonb.rows_table), each key
    written once instead of once per row, built a column at a time: the numbers rounded together
    (core.rounding.rounded, the same to the bit as round(): a trace keeps MAX_CONSIDERED_IN_TRACE of
    them, about ten numbers each), the score parts of the items that have the same names (most of a
    pool: every search hit has the same six) as one column of values, their names sorted once."""
    n = len(items)
    chance = propensity.get
    head = rounded(
        [*[item.score for item in items], *[item.value for item in items], *[chance(item.id, 0.0) for item in items]],
        6,
    )
    shapes, shape, values = _parts_columns(items)
    columns: dict[str, Any] = {
        "id": [item.id for item in items],
        "type": [item.type for item in items],
        "tokens": [line_tokens(item) for item in items],
        "score": head[:n],
        "value": head[n : 2 * n],
        "score_parts": grouped_column(shapes, shape, values),
        "layer": [item.layer for item in items],
        "age_days": rounded([age_days(item.occurred_at, now) for item in items], 4),
        "filler": [item.filler for item in items],
        "requires": [bool(item.requires) for item in items],
        "covers": [bool(item.covers) for item in items],
        "propensity": head[2 * n :],
    }
    if by_policy is not None:
        columns["p_formula"] = rounded([by_policy[0].get(item.id, 0.0) for item in items], 6)
        columns["p_model"] = rounded([by_policy[1].get(item.id, 0.0) for item in items], 6)
    return rows_table(n, columns)


def _bookkeeping_commit() -> AbstractContextManager[None]:
    """The block's first statement carries the setting (one round trip): a context request writes only
    its trace, bookkeeping that may be lost in a crash of the server (the last few hundred
    milliseconds of such commits), never half-written. Its commit need not wait for the WAL to reach
    the disk."""
    return set_locals_with_next_statement({"synchronous_commit": "off"})


def _validate(request: ContextRequest) -> None:
    if not request.subject.strip():
        raise ValidationProblem.at("/subject", "A subject is required.")
    for index, layer in enumerate(request.layers):
        if layer not in LAYERS:
            raise ValidationProblem.at(f"/layers/{index}", f"Unknown layer; use one of {', '.join(LAYERS)}.")
    if request.format not in FORMATS:
        raise ValidationProblem.at("/format", f"Unknown format; use one of {', '.join(FORMATS)}.")


@transaction.atomic
def context_build(*, tenant: Tenant, request: ContextRequest) -> ContextResult:
    """The layered, budgeted context for one model call, and its trace."""

    started = time.perf_counter()
    _validate(request)
    plan = budget_plan(
        config=tenant.config, max_tokens=request.max_tokens, overrides=request.budgets, layers=request.layers
    )
    policy = get_policy()
    offered = policy.offer(tenant=tenant, request=request, plan=plan)
    now = request.as_of or timezone.now()
    model = serving_model(tenant=tenant)
    if model is not None:
        revalue(model=model, pool=pool_of(offered), now=now)
    chance = tenant.config.exploration
    on_trial = trial_model(tenant=tenant)
    request_key = json.dumps(request.as_json(), sort_keys=True) if chance > 0 or on_trial is not None else ""
    label = f"{policy.name}+{model.label}" if model is not None else policy.name
    trial: dict[str, Any] = {}
    by_policy = None
    if on_trial is None:
        built = assemble(offered=offered, plan=plan, fmt=request.format, parts=packer_parts())
        explored = explore(built=built, chance=chance, request_key=request_key, fmt=request.format)
    else:
        trialled = trial_build(
            offered=offered,
            plan=plan,
            fmt=request.format,
            parts=packer_parts(),
            model=on_trial,
            share=tenant.config.trial_share,
            chance=chance,
            request_key=request_key,
            now=now,
        )
        explored, by_policy = trialled.explored, (trialled.by_formula, trialled.by_model)
        trial = {"model": on_trial.label, "arm": trialled.arm, "share": trialled.share}
        if trialled.arm == MODEL:
            label = f"{policy.name}+{on_trial.label}"
    built, propensity = explored.built, explored.propensity
    chosen = [item for layer in LAYERS for item in built.chosen[layer]]
    considered = sorted(built.considered, key=lambda c: (-c.value, *c.tie()))[:MAX_CONSIDERED_IN_TRACE]
    latency_ms = (time.perf_counter() - started) * 1000
    # What feedback needs (the ids offered, subject, session) is written with the answer; the items'
    # details (tens of kilobytes of JSON, most of the cost of the row) just after it, off the client's time.
    with _bookkeeping_commit():
        # The trace is the subject's data: not written beside its erasure (tenants.locks).
        subject_lock(tenant.id, [request.subject])
    trace = ContextTrace.objects.create(
        tenant=tenant,
        subject=request.subject,
        session=request.session,
        agent=request.agent,
        query=request.query,
        request=request.as_json(),
        policy=label,
        trial=trial,
        budgets={**plan.as_dict(), "granted": built.granted},
        tokens=built.tokens,
        total_tokens=built.tokens["total"],
        offered_ids=[item.id for item in chosen],
        latency_ms=round(latency_ms, 3),
    )
    shown, trace.offered = served_rows(chosen, propensity=propensity, now=now, by_policy=by_policy)
    write_after_commit(
        trace_items_record,
        tenant=tenant,
        trace_id=trace.id,
        offered=trace.offered,
        considered=considered,
        propensity=propensity,
        now=now,
        by_policy=by_policy,
    )
    return ContextResult(trace=trace, built=built, shown=shown)


def _chances(item: Candidate, by_policy: tuple[dict[str, float], dict[str, float]] | None) -> dict[str, float]:
    """During a trial (router.trial), an item's chance of being served by the formula's policy and by the
    model's, which the trial's estimate weighs it by."""
    if by_policy is None:
        return {}
    return {"p_formula": round(by_policy[0].get(item.id, 0.0), 6), "p_model": round(by_policy[1].get(item.id, 0.0), 6)}


_TRACE_ITEMS_UPDATE = "UPDATE router_contexttrace SET offered = %s, considered = %s WHERE id = %s AND tenant_id = %s"


def trace_items_record(
    *,
    tenant: Tenant,
    trace_id: uuid.UUID,
    offered: list[dict[str, Any]],
    considered: Sequence[Candidate],
    propensity: dict[str, float],
    now: datetime,
    by_policy: tuple[dict[str, float], dict[str, float]] | None = None,
) -> None:
    """The items of a trace: those offered as the answer showed them, and the best of those left out,
    each with its chance of having been served (and during a trial, under each policy)."""
    # Both stored as columns, each key once instead of once per row (core.jsonb.RowsField reads them back
    # as the rows): about half the text of the left-out rows, a third of the served ones' (their lines).
    considered_items = considered_table(considered, propensity=propensity, now=now, by_policy=by_policy)
    # The documents as parameters, not quoted into the statement's text as literals, in one statement
    # without the ORM's compilation. On the writer thread, its transaction's commit does not wait for the
    # disk (router.helper_threads.WRITE_SETTINGS); in line, the request's transaction set it.
    execute_bound_by_server(
        _TRACE_ITEMS_UPDATE,
        [Jsonb(rows_as_table(offered), dumps=dumps), Jsonb(considered_items, dumps=dumps), trace_id, tenant.id],
    )


def _procedure_success(outcome: str) -> bool | None:
    if outcome == FeedbackOutcome.SUCCESS:
        return True
    if outcome == FeedbackOutcome.FAILURE:
        return False
    return None


@transaction.atomic
def context_feedback_record(
    *,
    tenant: Tenant,
    trace_id: uuid.UUID,
    used_item_ids: Sequence[str],
    outcome: str = FeedbackOutcome.UNKNOWN,
    signal: float | None = None,
    asked_to_repeat: bool = False,
) -> ContextFeedback:
    """What the caller used of a context: marks the facts used, records the outcome of the procedures
    offered (applied when used), and feeds the hit rates. One feedback per trace."""

    trace = trace_get(tenant=tenant, trace_id=trace_id)
    offered = set(trace.offered_ids)
    used: list[str] = []
    for index, item_id in enumerate(used_item_ids):
        if item_id not in offered:
            raise ValidationProblem.at(f"/used_item_ids/{index}", "This item was not offered in this context.")
        if item_id not in used:
            used.append(item_id)
    if outcome not in FeedbackOutcome.values:
        raise ValidationProblem.at("/outcome", f"Use one of {', '.join(FeedbackOutcome.values)}.")
    if signal is not None and not -1.0 <= signal <= 1.0:
        raise ValidationProblem.at("/signal", "The signal is between -1 and 1.")
    try:
        with transaction.atomic():
            feedback = ContextFeedback.objects.create(
                tenant=tenant,
                trace=trace,
                subject=trace.subject,
                session=trace.session,
                used_item_ids=used,
                offered_count=len(offered),
                used_count=len(used),
                outcome=outcome,
                signal=signal,
                asked_to_repeat=asked_to_repeat,
            )
    except IntegrityError as exc:
        raise Conflict("Feedback on this context was already recorded.") from exc
    fact_ids = [uuid.UUID(i.split(":", 1)[1]) for i in used if i.startswith("fact:")]
    if fact_ids:
        fact_mark_used(tenant=tenant, fact_ids=fact_ids)
    success = _procedure_success(outcome)
    for item_id in trace.offered_ids:
        if item_id.startswith("procedure:"):
            procedure_outcome_record(
                tenant=tenant,
                procedure_id=int(item_id.split(":", 1)[1]),
                applied=item_id in used,
                success=success if item_id in used else None,
                signal=signal,
                session_external_id=trace.session or None,
                episode_id=None,
            )
    return feedback
