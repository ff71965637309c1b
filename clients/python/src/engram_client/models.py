"""Typed shapes of Engram's requests and answers (TypedDicts: the JSON as it is, typed for editors
and mypy, no parsing cost). Fields follow the API contract; the service may add fields."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict

EpisodeKind = Literal["message", "tool_call", "tool_result", "decision", "outcome", "summary", "note"]
FactAction = Literal["created", "confirmed", "superseded", "pending"]
Layer = Literal["procedural", "semantic", "episodic", "working"]


class EpisodeIn(TypedDict, total=False):
    """One event to append. `subject` is required; without `session` the episode joins the subject's
    session of its UTC day (`auto:<YYYY-MM-DD>:<subject>`); the rest is optional."""

    subject: Required[str]
    session: str
    agent: str
    kind: str
    role: str
    content: str
    payload: dict[str, Any]
    occurred_at: str
    entities: list[str]
    topics: list[str]
    outcome: str | None
    outcome_signal: float | None
    external_id: str
    embedding: list[float]


class AppendedEpisode(TypedDict):
    id: int
    session: str
    external_id: str | None
    kind: str
    occurred_at: str
    created_at: str
    token_count: int
    content_hash: str
    entities: list[str]
    topics: list[str]


class AppendResult(TypedDict):
    count: int
    episodes: list[AppendedEpisode]


class Episode(TypedDict):
    id: int
    session: str
    subject: str
    agent: str
    kind: str
    role: str
    content: str
    payload: dict[str, Any]
    entities: list[str]
    topics: list[str]
    occurred_at: str
    created_at: str
    external_id: str | None
    token_count: int
    content_hash: str
    outcome: str | None
    outcome_signal: float | None
    embedded: bool


class ScoredEpisode(Episode):
    score: float
    score_parts: dict[str, float]


class Session(TypedDict):
    id: int
    session: str
    subject: str
    agent: str
    status: str
    started_at: str
    ended_at: str | None
    last_event_at: str | None
    outcome: str | None
    outcome_signal: float | None
    summary: str
    episode_count: int
    counts: NotRequired[dict[str, Any]]


class Scratchpad(TypedDict):
    session: str
    document: dict[str, Any]
    version: int
    created_at: str | None
    updated_at: str
    expires_at: str | None


class ScratchpadDeleted(TypedDict):
    session: str
    deleted: bool
    version: int
    summary_episode_id: int | None


class Source(TypedDict):
    episode_id: int
    external_id: str | None
    occurred_at: str | None
    session: str | None
    # [start, end) of the episode's content that the item serves; absent from older servers.
    span: NotRequired[list[int] | None]


class Fact(TypedDict):
    id: str
    subject: str
    entity: str
    attribute: str
    value: str
    statement: str
    category: str
    cardinality: str
    confidence: float
    status: str
    valid_from: str
    valid_to: str | None
    recorded_at: str
    last_confirmed_at: str
    last_used_at: str | None
    use_count: int
    confirmation_count: int
    origin: str
    superseded_by: str | None
    object_entity: str | None
    source_episode_ids: list[int]
    sources: list[Source]


class FactUpsertResult(TypedDict):
    action: FactAction
    fact: Fact
    previous: Fact | None


class ScoredFact(TypedDict):
    fact: Fact
    score: float
    score_parts: dict[str, float]


class FactChange(TypedDict):
    id: int
    kind: str
    old_value: str | None
    new_value: str | None
    old_status: str | None
    new_status: str | None
    old_confidence: float | None
    new_confidence: float | None
    related_fact: str | None
    reason: str
    actor_type: str
    actor_id: str
    source_episode_ids: list[int]
    created_at: str


class FactHistory(TypedDict):
    fact_id: str
    changes: list[FactChange]


class EntityGraph(TypedDict):
    entity: str
    depth: int
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    facts: list[Fact]
    truncated: bool


AliasSource = Literal["operator", "learned"]


class EntityAlias(TypedDict):
    """`alias` names `entity`: an operator's for the whole tenant, or learned for `subject`."""

    id: int
    alias: str
    entity: str
    source: AliasSource
    subject: str
    source_episode_id: int | None
    created_by: str
    created_at: str
    updated_at: str


class EntityAliasSetResult(TypedDict):
    action: Literal["created", "updated", "unchanged"]
    alias: EntityAlias
    facts_moved: int


class Procedure(TypedDict):
    id: int
    lineage: str
    version: int
    is_current: bool
    superseded_by: int | None
    agent: str
    name: str
    description: str
    trigger: dict[str, Any]
    behaviour: str
    steps: list[str]
    source: str
    status: str
    confidence: float
    statistics: dict[str, Any]
    created_by: str
    evidence: dict[str, Any]
    created_at: str
    updated_at: str
    status_changed_at: str


class ProcedureMatch(TypedDict):
    procedure: Procedure
    score: float
    confidence: float
    strength: float
    why: list[str]
    score_parts: dict[str, float]


class ProcedureOutcome(TypedDict):
    id: int
    procedure_id: int
    applied: bool
    success: bool | None
    signal: float | None
    session: str
    episode: int | None
    recorded_at: str
    procedure: Procedure


class ErasureRequest(TypedDict):
    id: str
    subject_hash: str
    status: str
    requested_by: str
    reason: str
    deadline: str
    counts: dict[str, Any]
    verification: dict[str, Any]
    receipt: dict[str, Any]
    error: str
    created_at: str
    completed_at: str | None


class ContextItem(TypedDict):
    id: str
    type: str
    text: str
    tokens: int
    score: float
    score_parts: dict[str, float]
    sources: list[Source]


class ContextTokens(TypedDict):
    total: int
    procedural: int
    semantic: int
    episodic: int
    working: int


class WorkingLayer(TypedDict, total=False):
    session: str | None
    version: int | None
    document: dict[str, Any]
    complete: bool
    items: list[ContextItem]


class ContextLayers(TypedDict):
    procedural: list[ContextItem]
    semantic: list[ContextItem]
    episodic: list[ContextItem]
    working: WorkingLayer


class Context(TypedDict):
    trace_id: str
    prompt: str
    tokens: ContextTokens
    layers: ContextLayers
    budgets: NotRequired[dict[str, Any]]


class Feedback(TypedDict):
    trace_id: str
    used_item_ids: list[str]
    offered_count: int
    used_count: int
    hit_rate: float
    outcome: str
    signal: float | None
    asked_to_repeat: bool
    created_at: str


class Tenant(TypedDict):
    id: str
    name: str
    slug: str
    key_prefix: str
    scopes: list[str]
    settings: dict[str, Any]


def context_item_ids(context: Context) -> list[str]:
    """Every item id offered by a context, in layer order (what feedback's `used_item_ids` refers to)."""
    layers = context["layers"]
    ids = [item["id"] for layer in ("procedural", "semantic", "episodic") for item in layers[layer]]  # type: ignore[literal-required]
    ids.extend(item["id"] for item in layers["working"].get("items", []))
    return ids


def context_items(context: Context) -> list[dict[str, Any]]:
    """Every item a context offered, as {id, type, text}, in layer order."""
    layers = context["layers"]
    items: list[Any] = [*layers["procedural"], *layers["semantic"], *layers["episodic"]]
    items.extend(layers["working"].get("items", []))
    return [{"id": i["id"], "type": i["type"], "text": i["text"]} for i in items]
