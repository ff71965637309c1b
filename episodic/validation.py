"""Validation of episode batches: one pass over plain dicts, every error with its JSON pointer.

Written by hand rather than as a DRF serializer because it is the hot path of ingestion (1,000
episodes per call) and because every writer (the API, the importer, scratchpad summaries) goes
through it, not only the API.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from api.converters import SESSION_ROUTE_SUFFIXES
from core.embedding import EMBEDDING_DIM
from core.errors import NotFound, PayloadTooLarge, ValidationProblem
from core.text import text_problem
from core.tokens import count_tokens
from episodic.extraction import MAX_ENTITY_CHARS, MAX_TOPIC_CHARS, extract_with_config, normalise_terms
from episodic.models import EpisodeKind, Outcome
from tenants.models import TenantSettings

FIELDS = frozenset(
    {
        "subject",
        "session",
        "agent",
        "kind",
        "role",
        "content",
        "payload",
        "occurred_at",
        "entities",
        "topics",
        "outcome",
        "outcome_signal",
        "external_id",
        "embedding",
    }
)
MAX_ID_CHARS = 255
MAX_ROLE_CHARS = 64
MAX_TERMS = 100
KINDS = frozenset(EpisodeKind.values)
SESSION_ROUTE_ENDINGS = tuple(f"/{suffix}" for suffix in SESSION_ROUTE_SUFFIXES)
OUTCOMES = frozenset(Outcome.values)


@dataclass
class EpisodeDraft:
    """One validated, normalised item of a batch, ready to insert."""

    index: int
    subject: str
    session: str
    agent: str
    kind: str
    role: str
    content: str
    payload: dict[str, Any]
    occurred_at: datetime | None
    entities: list[str]
    topics: list[str]
    outcome: str | None
    outcome_signal: float | None
    external_id: str | None
    embedding: list[float] | None
    token_count: int = 0
    content_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class _Errors:
    def __init__(self) -> None:
        self.invalid: list[dict[str, Any]] = []
        self.too_large: list[dict[str, Any]] = []

    def add(self, pointer: str, detail: str, *, size: bool = False) -> None:
        (self.too_large if size else self.invalid).append({"pointer": pointer, "detail": detail})

    def raise_any(self) -> None:
        if self.invalid:
            errors = self.invalid + self.too_large
            raise ValidationProblem(_summary(errors), errors=errors)
        if self.too_large:
            raise PayloadTooLarge(_summary(self.too_large), errors=self.too_large)


def _summary(errors: list[dict[str, Any]]) -> str:
    shown = "; ".join(f"{e['pointer']}: {e['detail']}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return shown + more


# pgvector stores 32-bit floats: anything bigger would overflow to infinity, which it refuses.
MAX_COMPONENT = 1e30


def vector_component_ok(x: float) -> bool:
    # The bound first: math.isfinite overflows on an integer too large for a float.
    return abs(x) <= MAX_COMPONENT and math.isfinite(x)


def unit_vector(values: list[float]) -> list[float] | None:
    """`values` scaled to length 1, or None for the zero vector, which has no direction. pgvector
    computes cosine in 32-bit floats, where the squares of huge or tiny components overflow or vanish
    and the result is NaN; a unit vector's do neither, and scaling leaves cosine unchanged."""
    norm = math.hypot(*values)
    if norm == 0.0:
        return None
    return [x / norm for x in values]


def has_nul(value: Any) -> bool:
    """Whether a JSON value holds a NUL character anywhere (in a key or a string)."""
    return "\\u0000" in json.dumps(value, default=str)


def check_session_id(external_id: str) -> None:
    """A session id that cannot exist (NUL, too long) is simply not found, not a server error."""
    if not external_id or "\x00" in external_id or len(external_id) > MAX_ID_CHARS:
        raise NotFound(f"No session {external_id[:80]!r}.")


def session_default_id(*, subject: str, at: datetime) -> str:
    """The session of an episode sent without one: its subject's session of that UTC day, the same at
    every entry point (the API, the client, MCP, the LangGraph nodes). A subject that would make the id
    too long, or end it like a route (`/end`), is named by its digest instead."""
    day = at.astimezone(UTC).date().isoformat()
    name = f"auto:{day}:{subject}"
    if len(name) > MAX_ID_CHARS or name.endswith(SESSION_ROUTE_ENDINGS):
        name = f"auto:{day}:sha256:{hashlib.sha256(subject.encode()).hexdigest()[:32]}"
    return name


def content_hash(content: str, payload: dict[str, Any]) -> str:
    """sha256 of the content, and of the canonical payload JSON when there is a payload."""
    digest = hashlib.sha256(content.encode())
    if payload:
        digest.update(b"\n")
        digest.update(json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode())
    return digest.hexdigest()


def _string(
    item: dict[str, Any], key: str, at: str, errors: _Errors, *, required: bool, max_chars: int, exact: bool = False
) -> str | None:
    """The item's string `key`, trimmed unless `exact` (an id, a subject's, a session's, an agent's or
    an episode's, is kept as written: DESIGN.md invariant 12; one of whitespace only is refused as
    empty)."""
    value = item.get(key)
    if value is None:
        if required:
            errors.add(f"{at}/{key}", "This field is required.")
        return None
    if not isinstance(value, str):
        errors.add(f"{at}/{key}", "Must be a string.")
        return None
    if not exact:
        value = value.strip()
    if (problem := text_problem(value)) is not None:
        errors.add(f"{at}/{key}", problem)
        return None
    if required and not value.strip():
        errors.add(f"{at}/{key}", "Must not be empty.")
        return None
    if exact and value and not value.strip():
        errors.add(f"{at}/{key}", "An id must hold a character other than whitespace.")
        return None
    if len(value) > max_chars:
        errors.add(f"{at}/{key}", f"At most {max_chars} characters.")
        return None
    return value


def parse_datetime_aware(value: Any, pointer: str, errors: _Errors) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            errors.add(pointer, "Not an ISO 8601 timestamp.")
            return None
    else:
        errors.add(pointer, "Must be an ISO 8601 timestamp string.")
        return None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        errors.add(pointer, "The timestamp needs a time zone (for example 2024-05-01T12:00:00Z).")
        return None
    try:
        # PostgreSQL would store an instant beyond the years 1 to 9999 in UTC, but it could not be read
        # back; and it refuses offsets beyond 15:59, which ISO 8601 allows up to 23:59: the instant goes
        # in, in UTC.
        return parsed.astimezone(UTC)
    except OverflowError:
        errors.add(pointer, "Out of range: the instant in UTC must fall within the years 1 to 9999.")
        return None


def _terms(value: Any, pointer: str, errors: _Errors, *, max_chars: int) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors.add(pointer, "Must be a list of strings.")
        return None
    if len(value) > MAX_TERMS:
        errors.add(pointer, f"At most {MAX_TERMS} items.")
        return None
    with_bad = [(i, problem) for i, v in enumerate(value) if (problem := text_problem(v)) is not None]
    if with_bad:
        errors.add(f"{pointer}/{with_bad[0][0]}", with_bad[0][1])
        return None
    too_long = [i for i, v in enumerate(value) if len(v.strip()) > max_chars]
    if too_long:
        errors.add(f"{pointer}/{too_long[0]}", f"At most {max_chars} characters.")
        return None
    return normalise_terms(value, max_chars=max_chars)


def _number(value: Any, pointer: str, errors: _Errors) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.add(pointer, "Must be a finite number.")
        return None
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        errors.add(pointer, "Must be a finite number.")
        return None
    return number


def _embedding(value: Any, pointer: str, errors: _Errors) -> list[float] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        errors.add(pointer, f"Must be a list of {EMBEDDING_DIM} numbers.")
        return None
    if len(value) != EMBEDDING_DIM:
        errors.add(pointer, f"Wrong dimension: {len(value)} numbers; the embedding dimension is {EMBEDDING_DIM}.")
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and vector_component_ok(x) for x in value):
        errors.add(pointer, f"Every component must be a finite number of magnitude at most {MAX_COMPONENT:g}.")
        return None
    unit = unit_vector([float(x) for x in value])
    if unit is None:
        errors.add(pointer, "The zero vector has no direction.")
    return unit


def parse_items(items: Any, *, config: TenantSettings, now: datetime, pointer: str = "/episodes") -> list[EpisodeDraft]:
    """Validate and normalise a batch; raise one problem listing every bad field, or return drafts.
    An item without `session` gets session_default_id for its subject and day (`now` when undated)."""
    max_batch = settings.ENGRAM["MAX_BATCH"]
    max_text = settings.ENGRAM["MAX_EPISODE_CHARS"]
    if not isinstance(items, list):
        raise ValidationProblem.at(pointer, "Must be a list of episodes.")
    if not items:
        raise ValidationProblem.at(pointer, "At least one episode is needed.")
    if len(items) > max_batch:
        raise ValidationProblem.at(pointer, f"At most {max_batch} episodes per call; got {len(items)}.")
    errors = _Errors()
    drafts: list[EpisodeDraft] = []
    for index, item in enumerate(items):
        at = f"{pointer}/{index}"
        if not isinstance(item, dict):
            errors.add(at, "Must be an object.")
            continue
        unknown = sorted(set(item) - FIELDS)
        for key in unknown:
            errors.add(f"{at}/{key}", "Unknown field.")
        subject = _string(item, "subject", at, errors, required=True, max_chars=MAX_ID_CHARS, exact=True)
        session = _string(item, "session", at, errors, required=False, max_chars=MAX_ID_CHARS, exact=True)
        if session == "":
            errors.add(f"{at}/session", "Must not be empty; omit it for the subject's session of the day.")
            session = None
        elif session is not None and session.endswith(SESSION_ROUTE_ENDINGS):
            errors.add(
                f"{at}/session",
                f"A session id may not end in {' or '.join(SESSION_ROUTE_ENDINGS)}: its URL would name a route.",
            )
            session = None
        occurred_at = parse_datetime_aware(item.get("occurred_at"), f"{at}/occurred_at", errors)
        if item.get("session") is None and subject:
            session = session_default_id(subject=subject, at=occurred_at or now)
        agent = _string(item, "agent", at, errors, required=False, max_chars=MAX_ID_CHARS, exact=True) or ""
        role = _string(item, "role", at, errors, required=False, max_chars=MAX_ROLE_CHARS) or ""
        external_id = (
            _string(item, "external_id", at, errors, required=False, max_chars=MAX_ID_CHARS, exact=True) or None
        )
        kind = item.get("kind", EpisodeKind.MESSAGE)
        if not isinstance(kind, str) or kind not in KINDS:
            errors.add(f"{at}/kind", f"Unknown kind {kind!r}; one of {sorted(KINDS)}.")
        content = item.get("content", "")
        if content is None:
            content = ""
        if not isinstance(content, str):
            errors.add(f"{at}/content", "Must be a string.")
            content = ""
        elif (problem := text_problem(content)) is not None:
            errors.add(f"{at}/content", problem)
            content = ""
        elif len(content) > max_text:
            errors.add(f"{at}/content", f"{len(content)} characters; the limit is {max_text}.", size=True)
        payload = item.get("payload") or {}
        if not isinstance(payload, dict):
            errors.add(f"{at}/payload", "Must be a JSON object.")
            payload = {}
        elif has_nul(payload):
            errors.add(f"{at}/payload", "Null characters are not allowed (PostgreSQL JSON cannot hold them).")
        if not content.strip() and not payload:
            errors.add(f"{at}/content", "An episode needs content or a payload.")
        outcome = item.get("outcome")
        if outcome is not None and (not isinstance(outcome, str) or outcome not in OUTCOMES):
            errors.add(f"{at}/outcome", f"Unknown outcome {outcome!r}; one of {sorted(OUTCOMES)}.")
        drafts.append(
            EpisodeDraft(
                index=index,
                subject=subject or "",
                session=session or "",
                agent=agent,
                kind=str(kind),
                role=role,
                content=content,
                payload=payload,
                occurred_at=occurred_at,
                entities=_terms(item.get("entities"), f"{at}/entities", errors, max_chars=MAX_ENTITY_CHARS) or [],
                topics=_terms(item.get("topics"), f"{at}/topics", errors, max_chars=MAX_TOPIC_CHARS) or [],
                outcome=outcome,
                outcome_signal=_number(item.get("outcome_signal"), f"{at}/outcome_signal", errors),
                external_id=external_id,
                embedding=_embedding(item.get("embedding"), f"{at}/embedding", errors),
                extra={
                    "entities_given": item.get("entities") is not None,
                    "topics_given": item.get("topics") is not None,
                },
            )
        )
    errors.raise_any()
    for draft in drafts:
        draft.token_count = count_tokens(draft.content)
        draft.content_hash = content_hash(draft.content, draft.payload)
        if not (draft.extra["entities_given"] and draft.extra["topics_given"]):
            entities, topics = extract_with_config(text=draft.content, config=config)
            if not draft.extra["entities_given"]:
                draft.entities = entities
            if not draft.extra["topics_given"]:
                draft.topics = topics
    return drafts
