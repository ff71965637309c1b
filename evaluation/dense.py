"""A tenant as dense as a heavy user's, built from real conversations at load speed (bench/dense_locomo.py).

Writing a million passages through the write path costs an embedding each, hours on two cores. A dense
tenant of real text repeats the texts of the LoCoMo conversations instead, so each distinct text is
embedded once, with the product's embedder, and given once the columns the write path stores for it:
entities, topics, token count and hash as `episodic.validation.parse_items` makes them; spans, line,
line tokens and index terms as `episodic.passages.passage_rows` makes them; an episode's vector is the
mean of its passages' (`episodic.passages`); the database computes the tsvectors and sign codes itself
(generated columns). Copies are then written with COPY under the tenant's scope, with ids reserved from
the tables' own sequences, in the order a subject said them.

Subject k is conversation k mod n ("<sample_id>.k<k>"): its own sessions at their dates, and before them,
as its earlier history, the sessions of the other conversations in turn (cycling, a day apart), until it
holds `passages` passages (the last of them cut to fit); every whole session is ended with its LoCoMo
summary, stored as the consolidation stores one (a `summary` episode and Session.summary). Its facts are
the LoCoMo observations, its own conversation's first and then the others', one active fact each (the
speaker's, multi-valued attribute "observation"), sourced to the turn the observation cites.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Episode, EpisodeKind
from episodic.passages import passage_rows
from episodic.validation import parse_items
from evaluation.recall import load_locomo
from semantic.models import Cardinality, FactOrigin, FactStatus
from semantic.normalise import normalise_entity, value_key
from tenants.models import Tenant

_SESSION_KEY = re.compile(r"^session_(\d+)$")
OBSERVATION = "observation"
HISTORY_GAP = timedelta(days=1)


@dataclass(frozen=True)
class DenseShape:
    subjects: int
    passages: int  # per subject, summaries' passages included
    facts: int  # per subject


@dataclass(frozen=True)
class SourceTurn:
    dia_id: str
    speaker: str
    text: str


@dataclass(frozen=True)
class SourceSession:
    key: str
    started: datetime
    turns: tuple[SourceTurn, ...]
    summary: str


@dataclass(frozen=True)
class SourceConversation:
    sample_id: str
    sessions: tuple[SourceSession, ...]
    observations: tuple[tuple[str, str, str, datetime], ...]  # speaker, text, dia_id, session start


def locomo_sources(path: Path) -> list[SourceConversation]:
    """The conversations of the LoCoMo file: turns as the evaluation stores them (evaluation.recall:
    the photo's caption in the text), each session's summary, and the observations."""
    raw = {str(s["sample_id"]): s for s in json.loads(path.read_text(encoding="utf-8"))}
    out = []
    for conv in load_locomo(path):
        sample = raw[conv.sample_id]
        by_session: dict[str, list[SourceTurn]] = {}
        started: dict[str, datetime] = {}
        for turn in conv.turns:
            key = turn.session.partition(":")[2]
            by_session.setdefault(key, []).append(SourceTurn(turn.external_id, turn.speaker, turn.text))
            started.setdefault(key, turn.when)
        sessions = tuple(
            SourceSession(key, started[key], tuple(turns), str(sample["session_summary"].get(f"{key}_summary", "")))
            for key, turns in by_session.items()
        )
        observations = []
        for name, by_speaker in sample["observation"].items():
            key = name.removesuffix("_observation")
            for speaker, said in by_speaker.items():
                for text, cited in said:
                    dia = cited[0] if isinstance(cited, list) and cited else cited
                    if key in started:
                        observations.append((speaker, str(text), str(dia), started[key]))
        out.append(SourceConversation(conv.sample_id, sessions, tuple(observations)))
    return out


@dataclass
class StoredText:
    """What the write path stores for one distinct (kind, role, text), computed once."""

    kind: str
    role: str
    content: str
    entities: list[str]
    topics: list[str]
    token_count: int
    content_hash: str
    # Per passage: position, char_start, char_end, last, content, token_count, line, line_tokens, index_terms
    passages: list[tuple[Any, ...]] = field(default_factory=list)


def stored_text(*, tenant: Tenant, kind: str, role: str, content: str) -> StoredText:
    at = datetime(2000, 1, 1, tzinfo=UTC)
    [draft] = parse_items(
        [{"subject": "s", "session": "s", "kind": kind, "role": role, "content": content}], config=tenant.config, now=at
    )
    episode = Episode(
        pk=0, session_id=0, subject="s", kind=draft.kind, role=draft.role, content=draft.content,
        token_count=draft.token_count, occurred_at=at,
    )  # fmt: skip
    out = StoredText(
        draft.kind, draft.role, draft.content, draft.entities, draft.topics, draft.token_count, draft.content_hash
    )
    for row in passage_rows([episode]):
        out.passages.append((*row[4:10], *row[11:14]))
    return out


@dataclass(frozen=True)
class PlannedEpisode:
    text: StoredText
    occurred_at: datetime
    external_id: str


@dataclass
class PlannedSession:
    external_id: str
    sample_id: str
    started: datetime
    episodes: list[PlannedEpisode]
    summary: str = ""


@dataclass
class SubjectPlan:
    subject: str
    sessions: list[PlannedSession]
    facts: list[tuple[str, str, str, datetime]]  # speaker, statement, cited dia_id, when


def _said(texts: dict[tuple[str, str, str], StoredText], tenant: Tenant, kind: str, role: str, text: str) -> StoredText:
    key = (kind, role, text)
    if key not in texts:
        texts[key] = stored_text(tenant=tenant, kind=kind, role=role, content=text)
    return texts[key]


def dense_plan(
    *, tenant: Tenant, sources: Sequence[SourceConversation], shape: DenseShape
) -> tuple[list[SubjectPlan], dict[tuple[str, str, str], StoredText]]:
    """Every subject's sessions, episodes and facts, and the distinct texts they use."""
    texts: dict[tuple[str, str, str], StoredText] = {}
    plans = []
    n = len(sources)
    for k in range(shape.subjects):
        own = sources[k % n]
        subject = f"{own.sample_id}.k{k}"
        count = 0
        own_sessions: list[PlannedSession] = []
        for s in own.sessions:
            planned = _session(texts, tenant, f"{subject}:{s.key}", own.sample_id, s)
            own_sessions.append(planned)
            count += _passages(planned)
        history: list[PlannedSession] = []
        order = [sources[(k + j) % n] for j in range(1, n)] or [own]
        cycle = 0
        while count < shape.passages:
            for conv in order:
                for s in conv.sessions:
                    if count >= shape.passages:
                        break
                    planned = _session(texts, tenant, f"{subject}:h{cycle}:{conv.sample_id}:{s.key}", conv.sample_id, s)
                    count += _passages(planned)
                    history.append(planned)
            cycle += 1
        _cut(history, count - shape.passages)
        first = min((s.started for s in own_sessions), default=datetime(2023, 1, 1, tzinfo=UTC))
        for back, planned in enumerate(reversed(history), start=1):
            _move(planned, first - back * HISTORY_GAP)
        facts: list[tuple[str, str, str, datetime]] = []
        seen: set[tuple[str, str]] = set()
        for conv in [own, *order]:
            for speaker, text, dia, when in conv.observations:
                if len(facts) < shape.facts and (speaker, value_key(text)) not in seen:
                    seen.add((speaker, value_key(text)))
                    facts.append((speaker, text, f"{conv.sample_id}:{dia}", when))
        if len(facts) < shape.facts:
            raise ValueError(f"{len(facts)} distinct observations; {shape.facts} facts per subject asked")
        plans.append(SubjectPlan(subject, [*history, *own_sessions], facts))
    return plans, texts


def _session(
    texts: dict[tuple[str, str, str], StoredText], tenant: Tenant, external_id: str, sample_id: str, s: SourceSession
) -> PlannedSession:
    start = s.started
    episodes = [
        PlannedEpisode(
            _said(texts, tenant, EpisodeKind.MESSAGE, t.speaker, t.text), start + timedelta(seconds=i), t.dia_id
        )
        for i, t in enumerate(s.turns)
    ]
    planned = PlannedSession(external_id, sample_id, start, episodes, s.summary)
    if s.summary:
        planned.episodes.append(
            PlannedEpisode(
                _said(texts, tenant, EpisodeKind.SUMMARY, "system", s.summary),
                start + timedelta(seconds=len(s.turns)),
                SESSION_SUMMARY_EXTERNAL_ID,
            )
        )
    return planned


def _passages(planned: PlannedSession) -> int:
    return sum(len(e.text.passages) for e in planned.episodes)


def _cut(history: list[PlannedSession], excess: int) -> None:
    """Drop `excess` passages from the end of the last session (its summary first: a cut session has none)."""
    if excess <= 0:
        return
    last = history[-1]
    if last.summary:
        before = _passages(last)
        last.episodes = [e for e in last.episodes if e.external_id != SESSION_SUMMARY_EXTERNAL_ID]
        last.summary = ""
        excess -= before - _passages(last)
    while excess > 0 and last.episodes:
        excess -= len(last.episodes.pop().text.passages)


def _move(planned: PlannedSession, start: datetime) -> None:
    shift = start - planned.started
    planned.started = start
    planned.episodes = [PlannedEpisode(e.text, e.occurred_at + shift, e.external_id) for e in planned.episodes]


def vector_literal(vector: np.ndarray) -> str:
    # Nine significant digits give back the same float4 the write path stores, in half the characters.
    return "[" + ",".join(f"{x:.9g}" for x in vector.tolist()) + "]"


def dense_texts_to_embed(texts: dict[tuple[str, str, str], StoredText]) -> list[str]:
    """The distinct passage contents and fact statements are embedded; this is the first half."""
    return sorted({p[4] for t in texts.values() for p in t.passages})


def dense_statements(plans: Sequence[SubjectPlan]) -> list[str]:
    return sorted({statement for plan in plans for _, statement, _, _ in plan.facts})


Progress = Callable[[str, int, int], None]

_SESSION_COLUMNS = (
    "id", "tenant_id", "external_id", "subject", "agent", "status", "started_at", "ended_at", "last_event_at",
    "summary", "episode_count", "created_at",
)  # fmt: skip
_EPISODE_COLUMNS = (
    "id", "tenant_id", "session_id", "subject", "agent", "kind", "role", "content", "payload", "entities", "topics",
    "occurred_at", "created_at", "external_id", "token_count", "content_hash", "embedding",
)  # fmt: skip
_PASSAGE_COLUMNS = (
    "id", "tenant_id", "episode_id", "session_id", "subject", "occurred_at", "position", "char_start", "char_end",
    "last", "content", "token_count", "summary", "entities", "topics", "embedding", "line", "line_tokens",
    "index_terms",
)  # fmt: skip
_FACT_COLUMNS = (
    "id", "tenant_id", "subject", "entity", "attribute", "value", "value_key", "statement", "category", "cardinality",
    "confidence", "status", "valid_from", "recorded_at", "last_confirmed_at", "use_count", "confirmation_count",
    "origin", "embedding", "updated_at",
)  # fmt: skip


def _reserve(cursor: Any, table: str, n: int) -> int:
    """The first of `n` ids taken from the table's own sequence."""
    cursor.execute(
        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), nextval(pg_get_serial_sequence('{table}', 'id')) + %s - 1)",
        [n],
    )  # noqa: S608,E501
    return int(cursor.fetchone()[0]) - n + 1


def _copy(
    cursor: Any,
    table: str,
    columns: Sequence[str],
    rows: Iterator[tuple[Any, ...]],
    progress: Progress | None,
    total: int,
    chunk: int = 50_000,
) -> int:
    """COPY the rows into a scratch table, `chunk` at a time, and each chunk on into `table` with one
    INSERT ... SELECT: row-level security refuses COPY into the table itself, and the policy checks
    each row against the tenant's scope."""
    names = ", ".join(columns)
    scratch = f"dense_{table}"
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {scratch} AS SELECT {names} FROM {table} WITH NO DATA")  # noqa: S608
    done = 0
    while True:
        batch = 0
        with cursor.copy(f"COPY {scratch} ({names}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
                batch += 1
                if batch == chunk:
                    break
        if batch:
            cursor.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {scratch}")  # noqa: S608
            cursor.execute(f"TRUNCATE {scratch}")
        done += batch
        if progress is not None:
            progress(table, done, total)
        if batch < chunk:
            return done


def dense_write(
    *,
    cursor: Any,
    tenant: Tenant,
    plans: Sequence[SubjectPlan],
    vectors: dict[str, np.ndarray],
    progress: Progress | None = None,
    now: datetime | None = None,
) -> dict[str, int]:
    """COPY the planned subjects into the tenant (a psycopg cursor inside the tenant's scope, as a role
    that may write every table). `vectors` holds each passage content's and statement's embedding.
    Returns the rows written per table."""
    now = now or datetime.now(UTC)
    literal: dict[str, str] = {}

    def lit(text: str) -> str:
        if text not in literal:
            literal[text] = vector_literal(vectors[text])
        return literal[text]

    episode_vector: dict[int, str] = {}

    def mean(text: StoredText) -> str:
        key = id(text)
        if key not in episode_vector:
            contents = [p[4] for p in text.passages]
            episode_vector[key] = (
                lit(contents[0])
                if len(contents) == 1
                else vector_literal(np.asarray(np.mean([vectors[c] for c in contents], axis=0), dtype=np.float32))
            )
        return episode_vector[key]

    sessions = [(plan, s) for plan in plans for s in plan.sessions]
    n_episodes = sum(len(s.episodes) for _, s in sessions)
    n_passages = sum(len(e.text.passages) for _, s in sessions for e in s.episodes)
    session_id = _reserve(cursor, "episodic_session", len(sessions))
    episode_id = _reserve(cursor, "episodic_episode", n_episodes)
    passage_id = _reserve(cursor, "episodic_passage", n_passages)
    tenant_id = str(tenant.id)

    def session_rows() -> Iterator[tuple[Any, ...]]:
        for i, (plan, s) in enumerate(sessions):
            last = s.episodes[-1].occurred_at if s.episodes else s.started
            yield (session_id + i, tenant_id, s.external_id, plan.subject, "", "ended", s.started, last, last,
                   s.summary, len(s.episodes), now)  # fmt: skip

    cited: dict[tuple[str, str], int] = {}  # (subject, "<sample_id>:<dia_id>") -> the first episode saying it

    def episode_rows() -> Iterator[tuple[Any, ...]]:
        at = episode_id
        for i, (plan, s) in enumerate(sessions):
            for e in s.episodes:
                t = e.text
                payload = {"generated_by": "evaluation.dense"} if t.kind == EpisodeKind.SUMMARY else {}
                cited.setdefault((plan.subject, f"{s.sample_id}:{e.external_id}"), at)
                yield (at, tenant_id, session_id + i, plan.subject, "", t.kind, t.role, t.content, json.dumps(payload),
                       t.entities, t.topics, e.occurred_at, now, e.external_id, t.token_count, t.content_hash,
                       mean(t))  # fmt: skip
                at += 1

    def passage_rows_() -> Iterator[tuple[Any, ...]]:
        at, episode = passage_id, episode_id
        for i, (plan, s) in enumerate(sessions):
            for e in s.episodes:
                t = e.text
                summary = e.external_id == SESSION_SUMMARY_EXTERNAL_ID
                for position, start, end, last, content, tokens, line, line_tokens, terms in t.passages:
                    yield (at, tenant_id, episode, session_id + i, plan.subject, e.occurred_at, position, start, end,
                           last, content, tokens, summary, t.entities, t.topics, lit(content), line, line_tokens,
                           terms.split(" ") if terms else [])  # fmt: skip
                    at += 1
                episode += 1

    def fact_rows() -> Iterator[tuple[Any, ...]]:
        for plan in plans:
            for speaker, statement, dia, when in plan.facts:
                fact = uuid.UUID(bytes=hashlib.sha256(f"{plan.subject}\x00{statement}".encode()).digest()[:16])
                sources.append((tenant_id, str(fact), cited.get((plan.subject, dia)), now))
                yield (str(fact), tenant_id, plan.subject, normalise_entity(speaker), OBSERVATION, statement,
                       value_key(statement), statement, "other", Cardinality.MULTI, 0.8, FactStatus.ACTIVE, when,
                       when, when, 0, 1, FactOrigin.EXTRACTED, lit(statement), now)  # fmt: skip

    sources: list[tuple[Any, ...]] = []
    n_facts = sum(len(p.facts) for p in plans)
    return {
        "sessions": _copy(cursor, "episodic_session", _SESSION_COLUMNS, session_rows(), progress, len(sessions)),
        "episodes": _copy(cursor, "episodic_episode", _EPISODE_COLUMNS, episode_rows(), progress, n_episodes),
        "passages": _copy(cursor, "episodic_passage", _PASSAGE_COLUMNS, passage_rows_(), progress, n_passages),
        "facts": _copy(cursor, "semantic_fact", _FACT_COLUMNS, fact_rows(), progress, n_facts),
        "fact_sources": _copy(
            cursor,
            "semantic_factsource",
            ("tenant_id", "fact_id", "episode_id", "created_at"),
            (s for s in sources if s[2] is not None),
            progress,
            len(sources),
        ),
    }
