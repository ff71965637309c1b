"""The one interface every extractor implements: a subject's episodes in, candidate facts out.

Extractors only read; the consolidation service validates what they return and merges it through
`semantic.services.fact_upsert`. Anything an extractor cannot use (a malformed model answer, a
candidate citing an episode it was not given) is reported in `problems`, never raised.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from episodic.models import Episode
from semantic.types import FactCandidate
from tenants.models import Tenant


class ExtractorUnavailable(RuntimeError):
    """The extractor's model could not be reached after retries; nothing of the batch may be written."""


@dataclasses.dataclass
class Usage:
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        self.llm_calls += other.llm_calls
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cost_usd += other.cost_usd


@dataclasses.dataclass(frozen=True)
class Replacement:
    """A statement that names a value the subject no longer holds ("we moved from Django 4.2 to 5.0",
    "use pytest from now on, not unittest"): the older facts that name `value` (or, with `version`, that
    name `value` with another version) and share a word of the statement's context are expired."""

    subject: str
    value: str
    context: frozenset[str]
    observed_at: datetime
    source_episode_id: int
    version: str | None = None


@dataclasses.dataclass
class ExtractionResult:
    candidates: list[FactCandidate] = dataclasses.field(default_factory=list)
    # Read only against what the subject holds: stored only where one supersedes an active fact
    # (consolidation.extractors.latent).
    updates_only: list[FactCandidate] = dataclasses.field(default_factory=list)
    replacements: list[Replacement] = dataclasses.field(default_factory=list)
    usage: Usage = dataclasses.field(default_factory=Usage)
    problems: list[dict[str, Any]] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class SummaryResult:
    text: str
    usage: Usage = dataclasses.field(default_factory=Usage)
    problems: list[dict[str, Any]] = dataclasses.field(default_factory=list)


class Extractor(Protocol):
    name: str

    def extract(self, *, tenant: Tenant, subject: str, episodes: Sequence[Episode]) -> ExtractionResult: ...

    def summarise(self, *, tenant: Tenant, subject: str, episodes: Sequence[Episode]) -> SummaryResult: ...


# Episodes an extractor reads: what was said and done, not Engram's own summaries of it.
EXTRACTABLE_KINDS = frozenset({"message", "tool_call", "tool_result", "decision", "observation", "outcome"})


def extractable(episodes: Sequence[Episode]) -> list[Episode]:
    return [e for e in episodes if e.kind in EXTRACTABLE_KINDS and e.content.strip()]


@functools.cache
def get_extractor() -> Extractor:
    """ENGRAM["EXTRACTOR"] when set; otherwise Anthropic when an API key is configured, else the
    offline rule-based extractor."""
    path = settings.ENGRAM.get("EXTRACTOR") or ""
    if not path:
        path = (
            "consolidation.extractors.anthropic.AnthropicExtractor"
            if settings.ANTHROPIC_API_KEY
            else "consolidation.extractors.rules.RuleBasedExtractor"
        )
    extractor: Extractor = import_string(path)()
    return extractor
