"""Writes of episodic memory: appending episodes in batches and marking sessions ended. There is no update or
delete of episodes here, on purpose: they are append-only (see episodic.models)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.errors import Conflict, NotFound, ValidationProblem
from episodic.aliases import canonical_entities, has_aliases
from episodic.extraction import MAX_ENTITY_CHARS, normalise_terms
from episodic.models import Episode, Outcome, Session, SessionStatus
from episodic.passages import passages_create, passages_embed_inline
from episodic.validation import MAX_TERMS, EpisodeDraft, check_session_id, parse_items
from tenants.locks import subject_lock
from tenants.models import Tenant


def _session_subject_errors(
    drafts: Sequence[EpisodeDraft], sessions: dict[str, Session], first: dict[str, EpisodeDraft]
) -> list[dict[str, Any]]:
    errors: list[dict[str, Any]] = []
    for draft in drafts:
        owner = sessions[draft.session].subject if draft.session in sessions else first[draft.session].subject
        if draft.subject != owner:
            errors.append(
                {
                    "pointer": f"/episodes/{draft.index}/session",
                    "detail": f"Session {draft.session!r} belongs to another subject than {draft.subject!r}: "
                    "session ids are the tenant's, one subject each; use another id, or omit `session` for "
                    "the subject's session of the day.",
                }
            )
    return errors


def _resolve_sessions(*, tenant: Tenant, drafts: Sequence[EpisodeDraft], now: datetime) -> dict[str, Session]:
    """The batch's sessions by external id, creating the unknown ones; one query when all exist."""
    first: dict[str, EpisodeDraft] = {}
    earliest: dict[str, datetime] = {}
    for draft in drafts:
        first.setdefault(draft.session, draft)
        when = draft.occurred_at or now
        if draft.session not in earliest or when < earliest[draft.session]:
            earliest[draft.session] = when
    sessions = {s.external_id: s for s in Session.objects.filter(external_id__in=list(first))}
    errors = _session_subject_errors(drafts, sessions, first)
    if errors:
        raise ValidationProblem(errors[0]["detail"], errors=errors)
    missing = [key for key in first if key not in sessions]
    if missing:
        # ON CONFLICT DO NOTHING: a concurrent batch may create the same session; read back either way.
        Session.objects.bulk_create(
            [
                Session(
                    tenant=tenant,
                    external_id=key,
                    subject=first[key].subject,
                    agent=first[key].agent,
                    started_at=earliest[key],
                    created_at=now,
                )
                for key in missing
            ],
            ignore_conflicts=True,
        )
        sessions.update({s.external_id: s for s in Session.objects.filter(external_id__in=missing)})
        errors = _session_subject_errors(drafts, sessions, first)
        if errors:
            raise ValidationProblem(errors[0]["detail"], errors=errors)
    return sessions


def _known_external_ids(
    *, tenant: Tenant, drafts: Sequence[EpisodeDraft], sessions: dict[str, Session]
) -> set[tuple[int, str]]:
    wanted = {(sessions[d.session].pk, d.external_id) for d in drafts if d.external_id}
    if not wanted:
        return set()
    rows = Episode.objects.filter(
        session_id__in={s for s, _ in wanted}, external_id__in={e for _, e in wanted}
    ).values_list("session_id", "external_id")
    return {(s, e) for s, e in rows if e is not None and (s, e) in wanted}


def _ended_session_errors(drafts: Sequence[EpisodeDraft], sessions: dict[str, Session]) -> list[dict[str, Any]]:
    """One error per ended session of the batch, at its first episode."""
    errors = []
    named: set[str] = set()
    for draft in drafts:
        session = sessions[draft.session]
        if session.status == SessionStatus.ENDED and draft.session not in named:
            named.add(draft.session)
            ended = f" at {session.ended_at.isoformat(timespec='seconds')}" if session.ended_at else ""
            errors.append(
                {
                    "pointer": f"/episodes/{draft.index}/session",
                    "detail": f"Session {draft.session!r} ended{ended}: an ended session takes no new episodes "
                    "(its outcome, summary and consolidation are final). Send them under a new session id.",
                }
            )
    return errors


def _bump_session_counters(*, tenant: Tenant, episodes: Sequence[Episode], open_only: bool = False) -> None:
    """One UPDATE for every session of the batch: count, first and last event times. With `open_only`,
    a session ended meanwhile is a 409 (the transaction rolls back): the UPDATE waits for the end's lock
    on the row and then sees the ended status, which the batch's earlier read could not."""
    per_session: dict[int, list[Any]] = {}
    for episode in episodes:
        entry = per_session.setdefault(episode.session_id, [0, episode.occurred_at, episode.occurred_at])
        entry[0] += 1
        entry[1] = min(entry[1], episode.occurred_at)
        entry[2] = max(entry[2], episode.occurred_at)
    values = ", ".join(["(%s::bigint, %s::integer, %s::timestamptz, %s::timestamptz)"] * len(per_session))
    params: list[Any] = []
    for session_id, (count, first, last) in per_session.items():
        params.extend([session_id, count, first, last])
    params.append(tenant.id)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE episodic_session AS s SET episode_count = s.episode_count + v.n, "  # noqa: S608
            "last_event_at = GREATEST(s.last_event_at, v.last), started_at = LEAST(s.started_at, v.first) "
            f"FROM (VALUES {values}) AS v(id, n, first, last) WHERE s.id = v.id AND s.tenant_id = %s"
            + (" AND s.status <> 'ended'" if open_only else ""),
            params,
        )
        if open_only and cursor.rowcount != len(per_session):
            raise Conflict("A session of this batch ended while it was being stored; send it under a new session id.")


# A draft's fields of the episode's own names; the time of the write fills the two times it may lack.
_DRAFTED = tuple(f for f in Episode.RECORD_FIELDS if f not in ("occurred_at", "created_at"))


def _vector(embedding: Sequence[float] | None) -> str | None:
    return None if embedding is None else "[" + ",".join(repr(float(x)) for x in embedding) + "]"


# The bulk insert's columns: the episode's own (Episode.RECORD_FIELDS) but created_at, one value for the
# whole batch, between the session and the embedding. Each travels as an array of text unless named in
# _ARRAY_TYPE, is encoded by _ENCODE on the way, and is stored as v.<column> unless named in _STORED.
_INSERTED = ("session_id", *(f for f in Episode.RECORD_FIELDS if f != "created_at"), "embedding")
_ARRAY_TYPE = {
    "session_id": "bigint",
    "occurred_at": "timestamptz",
    "token_count": "integer",
    "outcome_signal": "float8",
}
_ENCODE: dict[str, Callable[[Any], Any]] = {
    "payload": lambda payload: json.dumps(payload, separators=(",", ":"), default=str),
    "entities": json.dumps,
    "topics": json.dumps,
    "embedding": _vector,
}
_STORED = {
    "payload": "v.payload::jsonb",
    "entities": "ARRAY(SELECT jsonb_array_elements_text(v.entities::jsonb))::varchar(200)[]",
    "topics": "ARRAY(SELECT jsonb_array_elements_text(v.topics::jsonb))::varchar(100)[]",
    "embedding": "v.embedding::vector",
}
_INSERT_SQL = f"""
INSERT INTO episodic_episode (tenant_id, created_at, {", ".join(_INSERTED)})
SELECT %s::uuid, %s::timestamptz, {", ".join(_STORED.get(c, f"v.{c}") for c in _INSERTED)}
FROM unnest({", ".join(f"%s::{_ARRAY_TYPE.get(c, 'text')}[]" for c in _INSERTED)})
    WITH ORDINALITY AS v({", ".join(_INSERTED)}, ord)
ORDER BY v.ord
RETURNING id
"""  # noqa: S608 - the column names are the model's own, never input


def _insert(*, tenant: Tenant, episodes: Sequence[Episode]) -> None:
    """One INSERT ... SELECT FROM unnest() for the whole batch: one array per column instead of one
    parameter per cell, which is what makes 1,000 episodes per call cheap (bulk_create spends most of
    its time building and quoting 18 x 1,000 placeholders). Ids come back in insertion order, as
    bulk_create relies on too."""
    columns: list[list[Any]] = []
    for name in _INSERTED:
        values = [getattr(e, name) for e in episodes]
        encode = _ENCODE.get(name)
        columns.append(values if encode is None else [encode(v) for v in values])
    connection.ensure_connection()
    # Server-side binding: the arrays travel as parameters, not quoted into the statement by Python.
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(_INSERT_SQL, [tenant.id, episodes[0].created_at, *columns])
        ids = [row[0] for row in cursor.fetchall()]
    for episode, pk in zip(episodes, ids, strict=True):
        episode.pk = pk
        episode._state.adding = False
        episode._state.db = connection.alias


def _add_canonical_names(*, tenant: Tenant, drafts: Sequence[EpisodeDraft]) -> None:
    """An entity named by one of its aliases is also carried under its canonical name
    (episodic.aliases): "Thanks, Mel!" carries "mel" and "melanie". One query for the batch."""
    if not has_aliases(tenant):
        return
    canonical = canonical_entities(tenant=tenant, entities_by_subject=[(d.subject, d.entities) for d in drafts])
    for draft, names in zip(drafts, canonical, strict=True):
        if names:
            draft.entities = normalise_terms([*draft.entities, *names], max_chars=MAX_ENTITY_CHARS)[:MAX_TERMS]


@transaction.atomic
def episodes_append(
    *,
    tenant: Tenant,
    items: list[dict[str, Any]],
    skip_existing: bool = False,
    embed_inline: bool = False,
    refuse_ended: bool = False,
) -> list[Episode]:
    """Validate and store a batch of 1 to MAX_BATCH episodes, all or nothing.

    Unknown sessions are created (with the subject and agent of their first episode); an item without
    one joins its subject's session of the day (validation.session_default_id). A session that belongs
    to another subject is a 400. An external_id repeated in a session, within the batch or
    against stored episodes, is a 409; with `skip_existing` (imports) the stored ones are skipped
    instead and are not in the result. With `embed_inline`, a batch of at most
    ENGRAM["INLINE_EMBED_MAX_PASSAGES"] passages is embedded before it commits (read-your-writes:
    found by meaning at once); a bigger one waits in the backlog. With `refuse_ended` (the API's
    writers), an episode for an ended session is a 409 naming it: the session's outcome, summary and
    consolidation are final; Engram's own writers (a session's summary, imports) may still add to it.
    Returns the new episodes in the order of `items`.
    """
    now = timezone.now()
    drafts = parse_items(items, config=tenant.config, now=now)
    # Before the sessions are read: an erasure of one of these subjects runs wholly before or after
    # this batch (tenants.locks), so that a session it deleted is created afresh, never referenced.
    subject_lock(tenant.id, {d.subject for d in drafts})
    _add_canonical_names(tenant=tenant, drafts=drafts)
    sessions = _resolve_sessions(tenant=tenant, drafts=drafts, now=now)
    if refuse_ended and (ended := _ended_session_errors(drafts, sessions)):
        raise Conflict(ended[0]["detail"], errors=ended)

    seen: dict[tuple[str, str], int] = {}
    conflicts: list[dict[str, Any]] = []
    for draft in drafts:
        if draft.external_id:
            key = (draft.session, draft.external_id)
            if key in seen:
                conflicts.append(
                    {
                        "pointer": f"/episodes/{draft.index}/external_id",
                        "detail": f"external_id {draft.external_id!r} repeats item {seen[key]} of this batch.",
                    }
                )
            seen.setdefault(key, draft.index)
    if conflicts:
        raise Conflict(conflicts[0]["detail"], errors=conflicts)
    known = _known_external_ids(tenant=tenant, drafts=drafts, sessions=sessions)
    if known:
        stored = [d for d in drafts if d.external_id and (sessions[d.session].pk, d.external_id) in known]
        if not skip_existing:
            errors = [
                {
                    "pointer": f"/episodes/{d.index}/external_id",
                    "detail": f"Session {d.session!r} already has an episode with external_id {d.external_id!r}.",
                }
                for d in stored
            ]
            raise Conflict(errors[0]["detail"], errors=errors)
        skipped = {d.index for d in stored}
        drafts = [d for d in drafts if d.index not in skipped]
        if not drafts:
            return []

    episodes = [
        Episode(
            tenant=tenant,
            session=sessions[d.session],
            **{name: getattr(d, name) for name in _DRAFTED},
            occurred_at=d.occurred_at or now,
            created_at=now,
            embedding=d.embedding,
        )
        for d in drafts
    ]
    try:
        with transaction.atomic():
            _insert(tenant=tenant, episodes=episodes)
    except IntegrityError as exc:
        # Another request stored the same (session, external_id) between our check and the insert.
        raise Conflict("An episode with one of these external_ids was stored concurrently; retry.") from exc
    passages_create(tenant=tenant, episodes=episodes)
    _bump_session_counters(tenant=tenant, episodes=episodes, open_only=refuse_ended)
    if embed_inline:
        passages_embed_inline(
            tenant=tenant,
            episode_ids=[e.pk for e in episodes],
            max_passages=settings.ENGRAM["INLINE_EMBED_MAX_PASSAGES"],
        )
    return episodes


def _check_outcome(outcome: str | None, outcome_signal: float | None) -> None:
    if outcome is not None and outcome not in Outcome.values:
        raise ValidationProblem.at("/outcome", f"Unknown outcome {outcome!r}; one of {sorted(Outcome.values)}.")
    if outcome_signal is not None and (
        isinstance(outcome_signal, bool)
        or not isinstance(outcome_signal, (int, float))
        or not math.isfinite(outcome_signal)
    ):
        raise ValidationProblem.at("/outcome_signal", "Must be a finite number.")


# A client's clock may run a little ahead of the server's.
END_CLOCK_SKEW = timedelta(minutes=5)


def session_lock_for_end(
    *,
    tenant: Tenant,
    external_id: str,
    outcome: str | None,
    outcome_signal: float | None,
    ended_at: datetime | None = None,
) -> tuple[Session, bool]:
    """The session to end, locked until the transaction ends, and whether it has already ended with
    this outcome (a retry, which changes nothing). Ended with another outcome: 409. `ended_at`, when a
    replay or an import says when the session ended, may not lie before its last event nor in the
    future. Call inside a transaction (consolidation.sessions.session_close is the one caller that
    orchestrates the end)."""
    _check_outcome(outcome, outcome_signal)
    check_session_id(external_id)
    owner = Session.objects.filter(external_id=external_id).values_list("subject", flat=True).first()
    if owner is None:
        raise NotFound(f"No session {external_id!r}.")
    # The subject's slot before the session's row (tenants.locks): the end summarises the scratchpad
    # into an episode, a write of the subject.
    subject_lock(tenant.id, [owner])
    session = Session.objects.select_for_update().filter(external_id=external_id).first()
    if session is None:  # erased meanwhile
        raise NotFound(f"No session {external_id!r}.")
    if session.status == SessionStatus.ENDED:
        if (session.outcome, session.outcome_signal) == (outcome, outcome_signal):
            return session, True
        raise Conflict(
            f"Session {external_id!r} already ended with outcome {session.outcome!r} ({session.outcome_signal})."
        )
    if ended_at is not None:
        if ended_at > timezone.now() + END_CLOCK_SKEW:
            raise ValidationProblem.at("/ended_at", f"ended_at {ended_at.isoformat()} is in the future.")
        if session.last_event_at is not None and ended_at < session.last_event_at:
            raise ValidationProblem.at(
                "/ended_at", f"ended_at is before the session's last event ({session.last_event_at.isoformat()})."
            )
    return session, False


def session_mark_ended(
    *,
    session: Session,
    outcome: str | None,
    outcome_signal: float | None,
    appended: bool = False,
    ended_at: datetime | None = None,
) -> Session:
    """Record the end of a session locked by session_lock_for_end, now or at `ended_at` (checked
    there); `appended` when episodes were added to it since it was locked (its counters moved in the
    database)."""
    if appended:
        session.refresh_from_db(fields=["episode_count", "last_event_at", "started_at"])
    session.status = SessionStatus.ENDED
    session.ended_at = ended_at or timezone.now()
    session.outcome = outcome
    session.outcome_signal = None if outcome_signal is None else float(outcome_signal)
    session.save(update_fields=["status", "ended_at", "outcome", "outcome_signal"])
    return session


def session_summary_set(*, tenant: Tenant, session_id: int, summary: str) -> None:
    """Record the session's summary (written by consolidation as a `summary` episode) on the session,
    where the API, the dashboard and the router read it."""
    Session.objects.filter(pk=session_id).update(summary=summary)
