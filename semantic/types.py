"""The values that cross the semantic app's boundary: what writers hand to `fact_upsert` and what they get back."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import TYPE_CHECKING, Literal

from semantic.models import ActorType, FactOrigin

if TYPE_CHECKING:
    from semantic.models import Fact

UpsertAction = Literal["created", "confirmed", "superseded", "pending"]


@dataclasses.dataclass
class FactCandidate:
    """One fact a writer believes: `entity.attribute = value`, said as `statement`.

    `subject` is whose memory it is (erasure and the router select on it); `entity` is what the fact
    is about. `observed_at` is when it was true in the world; when None, the latest `occurred_at` of
    the source episodes is used, else the time of the write. `cardinality` None takes the default map
    (semantic.normalise.DEFAULT_CARDINALITY). `object_entity` names the other end of a relation when
    the writer knows it; otherwise a value naming a known entity becomes one.
    """

    subject: str
    entity: str
    attribute: str
    value: str
    statement: str
    category: str
    confidence: float
    source_episode_ids: list[int] = dataclasses.field(default_factory=list)
    observed_at: datetime | None = None
    cardinality: str | None = None
    origin: str = FactOrigin.EXTRACTED
    object_entity: str | None = None


@dataclasses.dataclass(frozen=True)
class Actor:
    """Who or what made a change: a consolidation run, an API key, an operator, the system."""

    type: str = ActorType.SYSTEM
    id: str = ""
    reason: str = ""


@dataclasses.dataclass
class UpsertResult:
    """What `fact_upsert` did.

    - created: `fact` is the new active fact; `previous` None.
    - confirmed: `fact` is the existing fact that was confirmed (it may be pending_review); `previous` None.
    - superseded: `fact` is the new active fact and `previous` the closed one it replaced; or, when the
      candidate was observed before the active value (an out-of-order import), `fact` is the candidate
      stored as already superseded (`fact.status == "superseded"`, `fact.superseded_by` the winner) and
      `previous` None.
    - pending: `fact` is the new fact waiting in pending_review; `previous` None.
    """

    fact: Fact
    action: UpsertAction
    previous: Fact | None = None
