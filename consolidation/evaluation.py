"""Precision and recall of the offline extractor on hand-labelled conversations.

A predicted fact matches a labelled one when the attributes are equal and the values are equal once
case, spacing, trailing punctuation and a leading article are ignored. Each label matches at most once.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from consolidation.extractors.rules import SPEAKER_ROLES, extract_from_text

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "extraction" / "conversations.json"


def _norm(value: str) -> str:
    value = re.sub(r"\s+", " ", value.casefold()).strip().rstrip(".,;:!?")
    return re.sub(r"^(?:the|a|an|our|my)\s+", "", value)


@dataclasses.dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    false_positives: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    missed: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def load_conversations(path: Path = FIXTURES) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(path.read_text())
    conversations: list[dict[str, Any]] = data["conversations"]
    return conversations


def evaluate(conversations: list[dict[str, Any]]) -> Score:
    score = Score()
    for conv in conversations:
        predicted = [
            (f.attribute, _norm(f.value))
            for role, text in conv["turns"]
            if role in SPEAKER_ROLES
            for f in extract_from_text(text, conv["subject"])
        ]
        expected = [(attribute, _norm(value)) for attribute, value in conv["expected"]]
        remaining = list(expected)
        for fact in predicted:
            if fact in remaining:
                remaining.remove(fact)
                score.tp += 1
            else:
                score.fp += 1
                score.false_positives.append((conv["id"], *fact))
        score.fn += len(remaining)
        score.missed.extend((conv["id"], *fact) for fact in remaining)
    return score
