"""What the parse reader may take for a value (issue 42): a thing or a state, never an action, an
adverb, an evaluation or an appearance. With the reader on, on long everyday conversations most of
its facts were of that kind ("X is so lovely", "X feels calm", "X keeps trying"), and they crowded a
1K context (docs/consolidation.md). The sentences are this file's own, written from the grammar of
each kind; none is a template of evaluation/."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors import reading
from consolidation.extractors.rules import extract_with_disclosures

pytestmark = pytest.mark.usefixtures("parse_reader")

SAID_AT = datetime(2026, 10, 14, 9, 30, tzinfo=UTC)


def _values(sentence: str) -> list[str]:
    return [f.value for f in extract_with_disclosures(sentence, "Noor", SAID_AT)]


# fmt: off
NO_VALUE = [
    # an evaluation: an adjective of degree, a comparative
    "My balcony garden is incredibly lush.",
    "Our new sofa is really comfy.",
    "My evenings are way calmer.",
    "Our neighbourhood is so friendly.",
    # how something looks, sounds or feels
    "My sketches look tidy.",
    "My plan sounds solid.",
    "I feel calm.",
    # a mood
    "I'm hopeful.",
    "I am curious.",
    "I feel relieved.",
    # an activity in progress
    "I'm having a lovely afternoon.",
    "I'm looking for a quieter flat.",
    # an action or an adverb is no value
    "I keep forgetting my keys.",
    "My cat knows how to open doors.",
]
# fmt: on


@pytest.mark.parametrize("sentence", NO_VALUE)
def test_an_evaluation_an_appearance_or_an_action_is_no_value(sentence: str) -> None:
    # The reader's own reading; what the patterns make of the sentence is theirs (reader on or off).
    assert reading.facts(sentence, speaker="Noor", said_at=SAID_AT) == []


# fmt: off
STATES = [
    ("I'm pescatarian now.", "pescatarian"),
    ("I've gone fully vegetarian.", "vegetarian"),
    ("Our garage conversion got approved.", "approved"),
    ("Our loft project is on hold.", "on hold"),
    ("My go-to editor is Helix.", "Helix"),
    ("I'm studying architecture.", "architecture"),
]
# fmt: on


@pytest.mark.parametrize(("sentence", "value"), STATES, ids=[s for s, _ in STATES])
def test_a_state_keeps_its_value(sentence: str, value: str) -> None:
    assert value in _values(sentence)
