"""semantic.values: one value written two ways is the same value; values whose numbers, versions, dates,
addresses, phone numbers, URLs, amounts or names differ are two values (docs/semantic.md)."""

from __future__ import annotations

import pytest

from semantic.values import value_tokens, values_conflict, values_same

SAME = [
    ("PostgreSQL 16", "postgresql 16."),
    ("+44 20 7946 0001", "+442079460001"),
    ("(415) 555-0123", "415.555.0123"),
    ("ana@lumen.example", "mailto:Ana@Lumen.Example"),
    ("https://www.Acme.example/docs/", "acme.example/docs"),
    ("$5,000", "5000 USD"),
    ("€52k", "52,000 EUR"),
    ("USD 20", "$20.00"),
    ("2025-06-01", "1 June 2025"),
    ("March 14, 2025", "14th of March 2025"),
    ("March 14th", "March 14"),
    ("5,000", "5000"),
    ("twelve", "12"),
    ("third floor", "3rd floor"),
    ("the Pro plan", "Pro plan"),
    ("now PST", "PST"),
    ("Acme  Corp", "ACME Corp."),
]
DIFFERENT = [
    ("PostgreSQL 15", "PostgreSQL 16"),
    ("Ubuntu 22.04", "Ubuntu 24.04"),
    ("Python 3.1", "Python 3.10"),
    ("Linux 6.1.0", "Linux 6.1.1"),
    ("+44 20 7946 0001", "+44 20 7946 0002"),
    ("555-0134", "555-0143"),
    ("bo@lumen.example", "bo@lumen2.example"),
    ("help@acme.example", "help@acme.example.org"),
    ("https://lumen.example/docs", "https://lumen.example/docs/v2"),
    ("$5,000", "$6,500"),
    ("$20", "€20"),
    ("March 5", "March 6"),
    ("2025-06-01", "2025-07-15"),
    ("UTC+1", "UTC-1"),
    ("v2", "v3"),
    ("Tom Baker", "Tom Becker"),
    ("London", "Londonderry"),
    ("senior engineer", "staff engineer"),
]


@pytest.mark.parametrize(("a", "b"), SAME)
def test_one_value_written_two_ways_is_the_same_value(a: str, b: str) -> None:
    assert values_same(a, b) and values_same(b, a)
    assert not values_conflict(a, b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT)
def test_values_that_differ_are_never_the_same(a: str, b: str) -> None:
    assert not values_same(a, b) and not values_same(b, a)


@pytest.mark.parametrize(("a", "b"), DIFFERENT[:-3])
def test_typed_tokens_that_differ_conflict(a: str, b: str) -> None:
    assert values_conflict(a, b)


def test_names_conflict_and_plain_words_do_not() -> None:
    assert values_conflict("is on the Enterprise plan", "is on the Pro plan")
    assert values_conflict("Tom Baker", "Tom Becker")
    # Plain words may differ between paraphrases of one thing: the statements' similarity decides.
    assert not values_conflict("likes hiking in the mountains", "enjoys hiking in mountains")


def test_tokens_are_typed_and_canonical() -> None:
    assert value_tokens("PostgreSQL 16.2 on 1 May 2025 for $1.2k, ops@acme.example") == [
        ("word", "postgresql"),
        ("version", "16.2"),
        ("word", "on"),
        ("date", "2025-05-01"),
        ("word", "for"),
        ("amount", "usd:1200"),
        ("email", "ops@acme.example"),
    ]


def test_a_name_said_alone_or_before_its_head_noun_is_a_name() -> None:
    # A capital that opens a value of one or two words is the name's, not a sentence's: "Tuesdays" and
    # "Saturdays" are two values, and their statements ("goes rowing on ...") no near-duplicates.
    assert values_conflict("Tuesdays", "Saturdays")
    assert values_conflict("Georgian food", "Peruvian food")
    assert not values_conflict("Saturdays", "saturdays")
    assert not values_conflict("Working remotely", "working remotely")


def test_two_short_values_with_no_word_in_common_conflict() -> None:
    # Two states said with a word or two ("in progress", "finished") are two values: their statements
    # ("the insulation is ...") are no near-duplicates, however alike they read.
    assert values_conflict("in progress", "finished")
    assert values_conflict("vegan", "pescatarian")
    assert not values_conflict("in progress", "progress")


def test_two_short_values_of_one_head_are_two_values() -> None:
    # "half marathon" then "full marathon": each names a word the other lacks, so the later statement
    # is no near-duplicate of the earlier; one word more may restate ("coffee", "black coffee").
    assert values_conflict("half marathon", "full marathon")
    assert values_conflict("oat milk", "almond milk")
    assert not values_conflict("coffee", "black coffee")
    assert not values_conflict("half marathon", "Half Marathon")
