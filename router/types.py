"""The router's vocabulary: a context request, budgets, candidate items and the built context."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any, Literal, TypedDict

Layer = Literal["procedural", "semantic", "episodic", "working"]
LAYERS: tuple[Layer, ...] = ("procedural", "semantic", "episodic", "working")
FORMATS = ("markdown", "xml")


class SourceDict(TypedDict):
    episode_id: int
    external_id: str | None
    occurred_at: str | None
    session: str | None
    span: list[int] | None


# Slotted, not frozen: a context request builds one for each of its ~400 candidates, and a frozen
# dataclass sets each field through object.__setattr__.
@dataclasses.dataclass(slots=True)
class Source:
    episode_id: int
    external_id: str | None
    occurred_at: datetime | None
    session: str | None
    # The characters [start, end) of the episode's content that the item serves; None when the item
    # stands for the episode as a whole without quoting it (a fact, a session summary).
    span: tuple[int, int] | None = None

    def as_dict(self) -> SourceDict:
        return {
            "episode_id": self.episode_id,
            "external_id": self.external_id,
            "occurred_at": self.occurred_at.isoformat() if self.occurred_at else None,
            "session": self.session,
            "span": list(self.span) if self.span is not None else None,
        }


@dataclasses.dataclass(frozen=True)
class ContextRequest:
    subject: str
    session: str = ""
    agent: str = ""
    query: str = ""
    max_tokens: int = 4000
    budgets: dict[str, int] = dataclasses.field(default_factory=dict)
    layers: tuple[Layer, ...] = LAYERS
    as_of: datetime | None = None
    format: str = "markdown"
    session_kind: str = ""
    # The moment time phrases in the query are resolved against ("last week"); None: as_of, else now.
    now: datetime | None = None
    # How many of the session's latest events the caller already sends in its own prompt: not offered.
    transcript_turns: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "session": self.session,
            "agent": self.agent,
            "query": self.query,
            "max_tokens": self.max_tokens,
            "budgets": dict(self.budgets),
            "layers": list(self.layers),
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "format": self.format,
            "session_kind": self.session_kind,
            "now": self.now.isoformat() if self.now else None,
            "transcript_turns": self.transcript_turns,
        }


# Slotted: a context request makes one per line of its pool (hundreds), and packing reads their fields
# thousands of times.
@dataclasses.dataclass(slots=True)
class Candidate:
    """Something the policy offers for one layer. `value` is what packing maximises per token.

    `group` names the block the line is rendered under (a session in the episodic layer, whose header
    carries its date); `section` is the labelled section of the prompt the item goes in.
    """

    id: str
    type: str
    layer: Layer
    section: str
    text: str
    value: float
    score: float
    score_parts: dict[str, float]
    sources: list[Source] = dataclasses.field(default_factory=list)
    occurred_at: datetime | None = None
    group: str = ""
    group_header: str = ""
    order: tuple[Any, ...] = ()
    # Item ids this one makes redundant when chosen (a fact stands in for its source episodes).
    covers: frozenset[str] = frozenset()
    # Item ids that must be chosen for this one to be: an older statement labelled "earlier" is never
    # served without the newer one that updates it.
    requires: frozenset[str] = frozenset()
    # Tried by packing only after every other item: a session's summary, served only where its turns
    # are not (they cover it), never in their place.
    filler: bool = False
    # Token count of the rendered line, filled once by router.pricing.line_tokens.
    line_tokens: int = -1

    def tie(self) -> tuple[float, str, str]:
        """How items of equal value are ordered: by their own score, then their text, and only then by
        id. A fact's id is a random UUID drawn by its write: ordered by it, two writes of the same
        memories would serve different contexts."""
        return (-self.score, self.text, self.id)


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    """Token budgets for one request. `memory` is what the layers may use in all: max_tokens less the
    reserve for the conversation and the answer."""

    max_tokens: int
    reserve: int
    memory: int
    procedural: int
    semantic: int
    episodic: int
    working: int

    def of(self, layer: Layer) -> int:
        value: int = getattr(self, layer)
        return value

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class LayerCandidates:
    """What a policy offers, per layer, before packing."""

    procedural: list[Candidate] = dataclasses.field(default_factory=list)
    semantic: list[Candidate] = dataclasses.field(default_factory=list)
    episodic: list[Candidate] = dataclasses.field(default_factory=list)
    working: list[Candidate] = dataclasses.field(default_factory=list)
    # Working memory is a document, not a list: its structured form is returned as it is.
    working_document: dict[str, Any] | None = None
    working_version: int | None = None

    def of(self, layer: Layer) -> list[Candidate]:
        items: list[Candidate] = getattr(self, layer)
        return items


@dataclasses.dataclass
class BuiltContext:
    prompt: str
    tokens: dict[str, int]
    chosen: dict[Layer, list[Candidate]]
    considered: list[Candidate]
    budgets: BudgetPlan
    granted: dict[str, int]
    working_document: dict[str, Any] | None = None
    working_version: int | None = None
