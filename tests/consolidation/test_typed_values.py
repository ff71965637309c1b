"""A fact's value is the typed value its statement names, never the clause around it (issue 42): over a
sample of real conversations (the technical set's generator and LoCoMo, read where they are), no fact
the offline extractor writes holds a typed value inside more words than a head noun or two; and the
grammar that picks the current value out of a statement of change, in phrasings of this file's own."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from consolidation.extractors.fact_filters import LITERAL_ATTRIBUTES
from consolidation.extractors.rules import extract_with_disclosures
from consolidation.extractors.typed import CLAUSE_VALUED
from semantic import predicates

LOCOMO = Path("/work/shared/datasets/locomo/locomo10.json")
SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)
# Words a typed value may keep after it that say what it is ("the Business plan", "Coldplay concerts").
HEAD_WORDS = 2
_GRAMMAR = re.compile(
    r"^(?:is|are|was|were|be|been|has|have|had|to|from|with|as|at|in|on|for|of|by|and|or|but|that|which|"
    r"who|now|instead|than|into|their|his|her|my|our)$",
    re.IGNORECASE,
)


def _clause_around_a_value(value: str, speaker: str) -> bool:
    spans = predicates.typed_spans(value, subject=speaker)
    if not spans:
        return False
    longest = max(spans, key=lambda t: t.end - t.start)
    before = [w for w in re.findall(r"[\w'’-]+", value[: longest.start]) if w.lower() not in {"the", "a", "an"}]
    after = re.findall(r"[\w'’-]+", value[longest.end :])
    return bool(before) or len(after) > HEAD_WORDS or any(_GRAMMAR.match(w) for w in after)


def _clauses(turns: list[tuple[str, str]]) -> list[str]:
    out = []
    for speaker, text in turns:
        for fact in extract_with_disclosures(text, speaker, SAID_AT):
            if fact.attribute in CLAUSE_VALUED or fact.attribute in LITERAL_ATTRIBUTES:
                continue
            if _clause_around_a_value(fact.value, speaker):
                out.append(f"{fact.attribute} = {fact.value!r} <- {text[:120]!r}")
    return out


def test_no_value_from_the_technical_set_is_a_clause_around_a_typed_value() -> None:
    from evaluation.techchat import generate

    turns = [(t.speaker, t.text) for c in generate(seed=29, conversations=2, min_tokens=6000) for t in c.turns]
    user = [("Sam", text) for speaker, text in turns if speaker == "user"]
    assert len(user) > 20
    assert _clauses(user) == []


@pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo is read from the shared datasets, never copied")
def test_no_value_from_locomo_is_a_clause_around_a_typed_value() -> None:
    from evaluation.recall import load_locomo

    conversations = load_locomo(LOCOMO)
    # A sample: every 4th turn of the first three conversations.
    turns = [(t.speaker, t.text) for c in conversations[:3] for t in c.turns[::4]]
    assert len(turns) > 200
    assert _clauses(turns) == []


@pytest.mark.parametrize(
    ("statement", "held", "left"),
    [
        ("Jo swapped Trello for Linear to track bugs.", "Linear", ["Trello"]),
        ("Jo moved the backups from Backblaze to Wasabi.", "Wasabi", ["Backblaze"]),
        ("Jo takes the 7:40 train instead of the 8:10 one.", "7:40", ["8:10"]),
        ("Jo's book club meets on Wednesdays now, no longer on Mondays.", "Wednesdays", ["Mondays"]),
        ("Jo turned 29 in February.", "29", []),
        ("Jo's sister Maren lives in Bergen.", "Bergen", []),
        ("Jo's team grew to 14 engineers.", "14 engineers", []),
        # a word of grammar after a number is no unit; a change holds the value said after "to"
        ("Jo turned 64 over the holidays.", "64", []),
        ("Jo turned 64 last Thursday.", "64", []),
        ("Jo's grant deadline got pushed back a week, to April 9.", "April 9", []),
        ("Jo cut the meeting by 15 minutes to 45 minutes.", "45 minutes", []),
    ],
)
def test_the_grammar_says_which_value_is_held_and_which_was_left(statement: str, held: str, left: list[str]) -> None:
    value = predicates.current_value(statement, subject="Jo")
    assert value is not None and value.text == held
    assert [t.text for t in predicates.left_values(statement, subject="Jo")] == left


@pytest.mark.parametrize(
    ("old", "new", "kind_matches"),
    [
        ("12 engineers", "14 engineers", True),
        ("12 engineers", "14", True),
        ("12 engineers", "3 weeks", False),
        ("Linear", "Jira 9", True),
        ("Wednesdays", "7:40", False),
        ("€40", "€55", True),
    ],
)
def test_values_of_one_type(old: str, new: str, kind_matches: bool) -> None:
    a, b = predicates.value_kind(old), predicates.value_kind(new)
    assert a is not None and b is not None
    assert predicates.same_kind(a, b) is kind_matches


# fmt: off
NUMBERS_IN_WORDS = [
    # a number of two words is one number, with or without its unit
    ("Priya is sixty-three.", "sixty-three", ""),
    ("Our rowing club has twenty-four rowers.", "twenty-four rowers", "rower"),
    ("The drive took ninety minutes.", "ninety minutes", "minute"),
    ("Priya turned fifty on Friday.", "fifty", ""),
]
# fmt: on


@pytest.mark.parametrize(("text", "value", "unit"), NUMBERS_IN_WORDS, ids=[t for t, _, _ in NUMBERS_IN_WORDS])
def test_a_number_written_in_words_is_one_count(text: str, value: str, unit: str) -> None:
    counts = [t for t in predicates.typed_spans(text, subject="Priya") if t.kind == "count"]
    assert [(t.text, t.unit) for t in counts] == [(value, unit)]


def test_numbers_in_words_are_the_same_values_as_digits_and_differ_from_each_other() -> None:
    from semantic.values import values_same

    assert values_same("sixty-three", "63")
    assert not values_same("sixty-three", "sixty-four")
    assert predicates.same_kind(predicates.value_kind("sixty-three"), predicates.value_kind("sixty-four"))


@pytest.mark.parametrize("subject", ["user-4821", "acct_77-b2", "Priya"])
def test_the_subjects_own_name_is_no_value_however_it_is_written(subject: str) -> None:
    statement = f"{subject}'s rowing club meets on Thursdays."
    held = predicates.current_value(statement, subject=subject)
    assert held is not None and held.text == "Thursdays"


# fmt: off
DATED = [
    # when a change happened is no part of what it says: the statement's dates, resolved against when it
    # was said, stand at its end as circumstances, and the frame is the frame without them; a date that
    # is the value stays masked in its place
    ("Jo moved the archive to Zenodo in September 2026.", "Zenodo", "Jo the archive something."),
    ("Jo turned 61 the weekend before 1 October 2026.", "61", "Jo something."),
    ("Jo got a Brompton around 17 September 2026.", "Brompton", "Jo got a something."),
    ("Jo's recital is on 4 May 2027.", "4 May 2027", "Jo's recital is on something."),
]
# fmt: on


@pytest.mark.parametrize(("statement", "value", "expected"), DATED, ids=[s for s, _, _ in DATED])
def test_a_date_that_only_says_when_is_no_part_of_the_frame(statement: str, value: str, expected: str) -> None:
    assert predicates.frame(statement, subject="Jo", value=value) == expected


# fmt: off
FREQUENCIES = [
    # how often is one value: the count, "a"/"per" and the unit of time, or "every" and the unit
    ("Jo swims twice a week.", "twice a week"),
    ("Jo's book club meets every other month.", "every other month"),
    ("Jo backs up the photos fortnightly.", "fortnightly"),
    ("Jo visits the allotment 3 times per week.", "3 times per week"),
]
# fmt: on


@pytest.mark.parametrize(("text", "value"), FREQUENCIES, ids=[t for t, _ in FREQUENCIES])
def test_how_often_is_one_value(text: str, value: str) -> None:
    held = predicates.current_value(text, subject="Jo")
    assert held is not None and held.text == value
    a, b = predicates.value_kind("twice a week"), predicates.value_kind("every other month")
    assert a is not None and b is not None and predicates.same_kind(a, b)
