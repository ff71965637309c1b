"""Every /v1/ operation, described once as a `Call`; `EngramClient` and `AsyncEngramClient` run them.

The keyword names are the API's field names (see the API contract); `None` means "not sent".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, TypeVar, cast
from urllib.parse import quote

import httpx

from engram_client import models as m
from engram_client._transport import Call, cursor_of
from engram_client.grounding import used_item_ids as used_item_ids_of

T = TypeVar("T")
Timestamp = datetime | str


@dataclasses.dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list; pass `next_cursor` as `cursor` for the next one (or use the `iter_*` methods)."""

    results: list[T]
    next_cursor: str | None
    previous_cursor: str | None


def _page(response: httpx.Response) -> Page[Any]:
    body = response.json()
    return Page(
        results=list(body["results"]),
        next_cursor=cursor_of(body.get("next")),
        previous_cursor=cursor_of(body.get("previous")),
    )


def _results(response: httpx.Response) -> list[Any]:
    return list(response.json()["results"])


def _matches(response: httpx.Response) -> list[Any]:
    return list(response.json()["matches"])


def _seg(value: str) -> str:
    """A path segment: external ids are the tenant's own strings and may hold any character."""
    return quote(str(value), safe="")


def _ts(value: Timestamp | None) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else value


def _body(**fields: Any) -> dict[str, Any]:
    return {k: (_ts(v) if isinstance(v, datetime) else v) for k, v in fields.items() if v is not None}


# Tenant ---------------------------------------------------------------------------------------


def tenant_get() -> Call[m.Tenant]:
    return Call("GET", "/v1/tenant")


# Episodes and sessions ------------------------------------------------------------------------


def episodes_append(episodes: Sequence[m.EpisodeIn], *, idempotency_key: str | None = None) -> Call[m.AppendResult]:
    items = [_body(**cast(dict[str, Any], e)) for e in episodes]
    return Call("POST", "/v1/episodes", json={"episodes": items}, idempotency_key=idempotency_key)


def episodes_list(
    *,
    subject: str | None = None,
    session: str | None = None,
    agent: str | None = None,
    kind: str | None = None,
    entity: str | None = None,
    topic: str | None = None,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    order: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[m.Episode]]:
    params = _body(
        subject=subject, session=session, agent=agent, kind=kind, entity=entity, topic=topic,
        since=since, until=until, order=order, limit=limit, cursor=cursor,
    )  # fmt: skip
    return Call("GET", "/v1/episodes", params=params, parse=_page)


def episodes_search(
    query: str,
    *,
    subject: str | None = None,
    session: str | None = None,
    agent: str | None = None,
    kinds: Sequence[str] | None = None,
    entities: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    limit: int | None = None,
    exclude_ids: Sequence[int] | None = None,
) -> Call[list[m.ScoredEpisode]]:
    body = _body(
        query=query, subject=subject, session=session, agent=agent,
        kinds=list(kinds) if kinds is not None else None,
        entities=list(entities) if entities is not None else None,
        topics=list(topics) if topics is not None else None,
        since=since, until=until, limit=limit,
        exclude_ids=list(exclude_ids) if exclude_ids is not None else None,
    )  # fmt: skip
    return Call("POST", "/v1/episodes/search", json=body, parse=_results)


def session_get(session: str) -> Call[m.Session]:
    return Call("GET", f"/v1/sessions/{_seg(session)}")


def session_end(
    session: str,
    *,
    outcome: str | None = None,
    outcome_signal: float | None = None,
    ended_at: Timestamp | None = None,
    idempotency_key: str | None = None,
) -> Call[m.Session]:
    return Call(
        "POST",
        f"/v1/sessions/{_seg(session)}/end",
        json=_body(outcome=outcome, outcome_signal=outcome_signal, ended_at=ended_at),
        idempotency_key=idempotency_key,
    )


def _if_match(version: int | None) -> dict[str, str]:
    return {"If-Match": f'"{version}"'} if version is not None else {}


def scratchpad_get(session: str) -> Call[m.Scratchpad]:
    return Call("GET", f"/v1/sessions/{_seg(session)}/scratchpad")


def scratchpad_put(
    session: str, document: Mapping[str, Any], *, if_match: int | None = None, create_only: bool = False
) -> Call[m.Scratchpad]:
    headers = _if_match(if_match)
    if create_only:
        headers["If-None-Match"] = "*"
    return Call("PUT", f"/v1/sessions/{_seg(session)}/scratchpad", json=dict(document), headers=headers)


def scratchpad_patch(session: str, patch: Mapping[str, Any], *, if_match: int | None = None) -> Call[m.Scratchpad]:
    return Call(
        "PATCH",
        f"/v1/sessions/{_seg(session)}/scratchpad",
        json=dict(patch),
        headers=_if_match(if_match),
        content_type="application/merge-patch+json",
    )


def scratchpad_delete(
    session: str, *, summarise: bool = False, if_match: int | None = None
) -> Call[m.ScratchpadDeleted]:
    return Call(
        "DELETE",
        f"/v1/sessions/{_seg(session)}/scratchpad",
        params={"summarise": summarise},
        headers=_if_match(if_match),
    )


# Facts ----------------------------------------------------------------------------------------


def fact_upsert(
    *,
    entity: str,
    attribute: str,
    value: str,
    statement: str,
    subject: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    valid_from: Timestamp | None = None,
    source_episode_ids: Sequence[int] | None = None,
    cardinality: str | None = None,
    object_entity: str | None = None,
    idempotency_key: str | None = None,
) -> Call[m.FactUpsertResult]:
    body = _body(
        entity=entity, attribute=attribute, value=value, statement=statement, subject=subject,
        category=category, confidence=confidence, valid_from=valid_from,
        source_episode_ids=list(source_episode_ids) if source_episode_ids is not None else None,
        cardinality=cardinality, object_entity=object_entity,
    )  # fmt: skip
    return Call("POST", "/v1/facts", json=body, idempotency_key=idempotency_key)


def facts_list(
    *,
    subject: str | None = None,
    entity: str | None = None,
    attribute: str | None = None,
    category: str | None = None,
    status: str | None = None,
    as_of: Timestamp | None = None,
    needs_confirmation: bool | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[m.Fact]]:
    """`needs_confirmation=True`: the facts to put to the subject again (not confirmed within their
    category's horizon, or waiting in pending_review)."""
    params = _body(
        subject=subject, entity=entity, attribute=attribute, category=category, status=status,
        as_of=as_of, needs_confirmation=needs_confirmation, limit=limit, cursor=cursor,
    )  # fmt: skip
    return Call("GET", "/v1/facts", params=params, parse=_page)


def fact_get(fact_id: str) -> Call[m.Fact]:
    return Call("GET", f"/v1/facts/{_seg(fact_id)}")


def fact_edit(
    fact_id: str,
    *,
    value: str | None = None,
    statement: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    reason: str | None = None,
) -> Call[m.Fact]:
    body = _body(value=value, statement=statement, category=category, confidence=confidence, reason=reason)
    return Call("PATCH", f"/v1/facts/{_seg(fact_id)}", json=body)


def fact_retract(fact_id: str, *, reason: str | None = None) -> Call[m.Fact]:
    return Call("DELETE", f"/v1/facts/{_seg(fact_id)}", params={"reason": reason})


def fact_confirm(fact_id: str, *, idempotency_key: str | None = None) -> Call[m.Fact]:
    return Call("POST", f"/v1/facts/{_seg(fact_id)}/confirm", json={}, idempotency_key=idempotency_key)


def fact_history(fact_id: str) -> Call[m.FactHistory]:
    return Call("GET", f"/v1/facts/{_seg(fact_id)}/history")


def fact_review(
    fact_id: str,
    *,
    approve: bool,
    value: str | None = None,
    statement: str | None = None,
    reason: str | None = None,
    idempotency_key: str | None = None,
) -> Call[m.Fact]:
    body = _body(approve=approve, value=value, statement=statement, reason=reason)
    return Call("POST", f"/v1/facts/{_seg(fact_id)}/review", json=body, idempotency_key=idempotency_key)


def fact_change_revert(
    change_id: int, *, reason: str | None = None, idempotency_key: str | None = None
) -> Call[m.FactUpsertResult]:
    return Call(
        "POST", f"/v1/fact-changes/{int(change_id)}/revert", json=_body(reason=reason), idempotency_key=idempotency_key
    )


def facts_search(
    query: str,
    *,
    subject: str | None = None,
    entity: str | None = None,
    category: str | None = None,
    k: int | None = None,
    min_score: float | None = None,
    as_of: Timestamp | None = None,
) -> Call[list[m.ScoredFact]]:
    body = _body(query=query, subject=subject, entity=entity, category=category, k=k, min_score=min_score, as_of=as_of)
    return Call("POST", "/v1/facts/search", json=body, parse=_results)


def entity_graph(entity: str, *, depth: int | None = None) -> Call[m.EntityGraph]:
    return Call("GET", f"/v1/entities/{_seg(entity)}/graph", params={"depth": depth})


def entity_aliases_list(
    *,
    entity: str | None = None,
    alias: str | None = None,
    source: m.AliasSource | None = None,
    subject: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[m.EntityAlias]]:
    params = _body(entity=entity, alias=alias, source=source, subject=subject, limit=limit, cursor=cursor)
    return Call("GET", "/v1/entities/aliases", params=params, parse=_page)


def entity_alias_set(alias: str, entity: str, *, idempotency_key: str | None = None) -> Call[m.EntityAliasSetResult]:
    """An operator's alias (admin scope): `alias` names `entity`; the facts filed under it move."""
    return Call(
        "POST", "/v1/entities/aliases", json={"alias": alias, "entity": entity}, idempotency_key=idempotency_key
    )


def entity_alias_delete(alias_id: int) -> Call[m.EntityAlias]:
    return Call("DELETE", f"/v1/entities/aliases/{int(alias_id)}")


# Procedures -----------------------------------------------------------------------------------


def procedures_list(
    *,
    status: str | None = None,
    source: str | None = None,
    agent: str | None = None,
    lineage: str | None = None,
    all_versions: bool | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[m.Procedure]]:
    params = _body(
        status=status, source=source, agent=agent, lineage=lineage, all_versions=all_versions, limit=limit,
        cursor=cursor,
    )  # fmt: skip
    return Call("GET", "/v1/procedures", params=params, parse=_page)


def procedure_create(
    *,
    name: str,
    behaviour: str,
    trigger: Mapping[str, Any],
    description: str | None = None,
    steps: Sequence[str] | None = None,
    agent: str | None = None,
    source: str | None = None,
    status: str | None = None,
    idempotency_key: str | None = None,
) -> Call[m.Procedure]:
    body = _body(
        name=name, behaviour=behaviour, trigger=dict(trigger), description=description,
        steps=list(steps) if steps is not None else None, agent=agent, source=source, status=status,
    )  # fmt: skip
    return Call("POST", "/v1/procedures", json=body, idempotency_key=idempotency_key)


def procedure_get(procedure_id: int | str) -> Call[m.Procedure]:
    return Call("GET", f"/v1/procedures/{_seg(str(procedure_id))}")


def procedure_history(procedure_id: int | str) -> Call[dict[str, Any]]:
    return Call("GET", f"/v1/procedures/{_seg(str(procedure_id))}/history")


def procedure_update(
    procedure_id: int | str,
    *,
    name: str | None = None,
    description: str | None = None,
    agent: str | None = None,
    trigger: Mapping[str, Any] | None = None,
    behaviour: str | None = None,
    steps: Sequence[str] | None = None,
    status: str | None = None,
    reason: str | None = None,
) -> Call[m.Procedure]:
    body = _body(
        name=name, description=description, agent=agent, trigger=dict(trigger) if trigger is not None else None,
        behaviour=behaviour, steps=list(steps) if steps is not None else None, status=status, reason=reason,
    )  # fmt: skip
    return Call("PATCH", f"/v1/procedures/{_seg(str(procedure_id))}", json=body)


def procedure_deprecate(procedure_id: int | str, *, reason: str | None = None) -> Call[m.Procedure]:
    return Call("DELETE", f"/v1/procedures/{_seg(str(procedure_id))}", params={"reason": reason})


def procedures_match(
    *,
    message: str | None = None,
    tool_events: Sequence[Mapping[str, Any]] | None = None,
    entities: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    agent: str | None = None,
    session_kind: str | None = None,
    limit: int | None = None,
) -> Call[list[m.ProcedureMatch]]:
    body = _body(
        message=message, tool_events=[dict(e) for e in tool_events] if tool_events is not None else None,
        entities=list(entities) if entities is not None else None,
        topics=list(topics) if topics is not None else None, agent=agent, session_kind=session_kind, limit=limit,
    )  # fmt: skip
    return Call("POST", "/v1/procedures/match", json=body, parse=_matches)


def procedure_outcome_record(
    procedure_id: int | str,
    *,
    applied: bool,
    success: bool | None = None,
    signal: float | None = None,
    session: str | None = None,
    episode: int | None = None,
    idempotency_key: str | None = None,
) -> Call[m.ProcedureOutcome]:
    body = _body(applied=applied, success=success, signal=signal, session=session, episode=episode)
    return Call(
        "POST", f"/v1/procedures/{_seg(str(procedure_id))}/outcomes", json=body, idempotency_key=idempotency_key
    )


# Context, feedback, traces, stats ---------------------------------------------------------------


def context_get(
    subject: str,
    *,
    query: str | None = None,
    session: str | None = None,
    agent: str | None = None,
    max_tokens: int | None = None,
    budgets: Mapping[str, int] | None = None,
    layers: Sequence[m.Layer] | None = None,
    as_of: Timestamp | None = None,
    format: str | None = None,
    now: Timestamp | None = None,
    transcript_turns: int | None = None,
) -> Call[m.Context]:
    body = _body(
        subject=subject, query=query, session=session, agent=agent, max_tokens=max_tokens,
        budgets=dict(budgets) if budgets is not None else None,
        layers=list(layers) if layers is not None else None, as_of=as_of, format=format, now=now,
        transcript_turns=transcript_turns,
    )  # fmt: skip
    return Call("POST", "/v1/context", json=body)


def context_feedback(
    trace_id: str,
    *,
    used_item_ids: Sequence[str] | None = None,
    answer: str | None = None,
    offered: m.Context | Iterable[Mapping[str, Any]] | None = None,
    outcome: str | None = None,
    signal: float | None = None,
    asked_to_repeat: bool | None = None,
    idempotency_key: str | None = None,
) -> Call[m.Feedback]:
    """What was used of a context: `used_item_ids`, or `answer` (the text the model wrote from the
    context) with `offered` (the context, or its items): then the items the answer cites or restates
    (`engram_client.used_item_ids`). Ids given win over an answer."""
    if used_item_ids is None and answer is not None:
        if offered is None:
            raise ValueError("answer= needs offered=: the context (or its items) the answer was written from.")
        used_item_ids = used_item_ids_of(answer, offered)
    body = _body(
        used_item_ids=list(used_item_ids) if used_item_ids is not None else None,
        outcome=outcome, signal=signal, asked_to_repeat=asked_to_repeat,
    )  # fmt: skip
    return Call("POST", f"/v1/context/{_seg(trace_id)}/feedback", json=body, idempotency_key=idempotency_key)


def traces_list(
    *,
    subject: str | None = None,
    session: str | None = None,
    since: Timestamp | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[Page[dict[str, Any]]]:
    params = _body(subject=subject, session=session, since=since, limit=limit, cursor=cursor)
    return Call("GET", "/v1/traces", params=params, parse=_page)


def trace_get(trace_id: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/v1/traces/{_seg(trace_id)}")


def stats_get() -> Call[dict[str, Any]]:
    return Call("GET", "/v1/stats")


# Subjects: erasure and export -----------------------------------------------------------------


def subject_erase(
    subject: str, *, reason: str | None = None, idempotency_key: str | None = None
) -> Call[m.ErasureRequest]:
    return Call(
        "POST", f"/v1/subjects/{_seg(subject)}/erasure", json=_body(reason=reason), idempotency_key=idempotency_key
    )


def erasure_request_get(request_id: str) -> Call[m.ErasureRequest]:
    return Call("GET", f"/v1/erasure-requests/{_seg(request_id)}")


def subject_export(subject: str) -> Call[dict[str, Any]]:
    return Call("GET", f"/v1/subjects/{_seg(subject)}/export")
