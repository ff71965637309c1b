"""Helpers loaded by the Celery workers that bench/faults_consolidation.py starts."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from consolidation.extractors.base import ExtractionResult, SummaryResult
from consolidation.extractors.rules import RuleBasedExtractor


class SlowExtractor:
    """The rule-based extractor, slowed down per batch so that a kill lands in the middle of a run."""

    name = "rules-slow"

    def __init__(self) -> None:
        self.inner = RuleBasedExtractor()
        self.delay = float(os.environ.get("FAULTS_BATCH_DELAY", "0.3"))

    def extract(self, *, tenant: Any, subject: str, episodes: Sequence[Any]) -> ExtractionResult:
        time.sleep(self.delay)
        return self.inner.extract(tenant=tenant, subject=subject, episodes=episodes)

    def summarise(self, *, tenant: Any, subject: str, episodes: Sequence[Any]) -> SummaryResult:
        return self.inner.summarise(tenant=tenant, subject=subject, episodes=episodes)
