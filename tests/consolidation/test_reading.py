"""The syntactic reading of the speaker's statements (issue 42, consolidation/extractors/reading.py):
for predicates no pattern names, the parse gives the speaker's thing, the predicate and the value, and
says from the grammar (mood, tense, negation, person) when a clause states nothing now. The sentences
are this file's own, written from the grammar of each kind of change; none is a template of
evaluation/ (tests/consolidation/test_cases_are_not_templates.py checks it)."""

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
STATES = [
    # a state said with an adjective or a participle: the word is the value
    ("I eat paleo.", "paleo"),
    ("I'm widowed.", "widowed"),
    ("Our kitchen remodel got approved.", "approved"),
    ("I've gone entirely plant-based.", "plant-based"),
    # a typed value in the complement, whatever the verb
    ("I'm 58.", "58"),
    ("I just turned 59.", "59"),
    ("My swim practice runs 90 minutes.", "90 minutes"),
    ("Our nightly backup kicks off at 1:45.", "1:45"),
    ("My pottery class costs $220 per term.", "$220"),
    ("Our family car is a 2011 Volvo V70.", "2011 Volvo V70"),
    ("We run our billing on Chargebee.", "Chargebee"),
    # a thing of the speaker's after a circumstance that leads the sentence
    ("Since March the run club meets at 6:40.", "6:40"),
    # a name said to be a thing of the speaker's: the thing is the subject, the name its value
    ("Ines Duarte became my landlady.", "Ines Duarte"),
]
# fmt: on


@pytest.mark.parametrize(("sentence", "value"), STATES, ids=[s for s, _ in STATES])
def test_a_statement_no_pattern_names_gives_its_value(sentence: str, value: str) -> None:
    assert value in _values(sentence)


# fmt: off
NOTHING_STATED = [
    "Would my premium drop if I switched to Allianz?",     # a question
    "If I moved to Leeds, my commute would double.",       # a condition
    "I might trade my Volvo for a Skoda.",                 # a modal
    "I'll be on the Gold tier from January.",              # a plan not yet true
    "I'm not vegan.",                                      # a negation
    "My nephew commutes on a Kawasaki Ninja.",             # another person's thing
    "His swim practice runs 75 minutes.",                  # another person's thing
    "I was widowed at the time.",                          # the past
    "I'm thinking about going keto.",                      # an attitude to a value
    "I also drive a Vespa.",                               # an addition
    "The design team runs Figma, not us.",                 # denied to be the speaker's
    "Jordan works at Initech.",                            # a name, not a thing of the speaker's
    "2024-11-02 10:14:07 WARN [worker.pool] Reports the queue depth for pending jobs above the limit",
]
# fmt: on


@pytest.mark.parametrize("sentence", NOTHING_STATED)
def test_a_clause_that_states_nothing_now_gives_no_reading(sentence: str) -> None:
    assert reading.statements(sentence, speaker="Noor") == []


def test_the_reading_names_the_speakers_thing_and_its_predicate() -> None:
    (found,) = reading.statements("My swim practice runs 90 minutes.", speaker="Noor")
    assert (found.subject, found.predicate, found.value, found.typed) == ("My swim practice", "run", "90 minutes", True)
    (found,) = reading.statements("Ines Duarte became my landlady.", speaker="Noor")
    assert (found.subject, found.value) == ("my landlady", "Ines Duarte")


def test_the_value_is_in_the_complement_not_in_the_subject() -> None:
    # "Priya" names whose class it is; the day is what the statement says of it.
    (found,) = reading.statements("My Thursday class with Priya starts at 7:15.", speaker="Noor")
    assert found.value == "7:15"


@pytest.mark.parametrize(
    "sentence",
    [
        "The landlord raised my rent.",
        "Someone moved my dentist appointment.",
        "IT replaced my laptop.",
        "The council renamed our street.",
        "Priya rescheduled my review.",
    ],
)
def test_a_change_someone_else_made_to_the_speakers_thing_without_a_value_states_nothing(sentence: str) -> None:
    """The speaker's thing is the verb's only complement, so no value is said: no fact, and no error
    (the reader raised here, which failed the subject's whole consolidation batch)."""
    assert _values(sentence) == []
