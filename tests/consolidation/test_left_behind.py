"""What a statement says the speaker left ("from A to B", "replaced A with B", "instead of A", "left A
behind", "since A left", a name said with a new version after a verb of change), and what it does not:
someone else's move, a question, a date (issue 30: stale facts of attributes that are not slots, "the web
app is built on Django 4.2" after "we migrated the web app to Django 5.0", stayed active and were served
above the newer turn)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import extract_with_disclosures, replacements

SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("sentence", "left"),
    [
        ("We switched from Python 3.9 to Python 3.12 this sprint.", [("Python 3.9", None), ("Python", "3.12")]),
        ("We migrated the web app to Django 5.0.", [("Django", "5.0")]),
        ("I'm on Fedora 40 now instead of Ubuntu 22.04.", [("Ubuntu 22.04", None), ("Fedora", "40")]),
        ("We replaced Jenkins with GitHub Actions for CI.", [("Jenkins", None)]),
        ("Code reviews moved from Oskar to Hana.", [("Oskar", None)]),
        ("I report to Jonas Berg now since Priya Raman left.", [("Priya Raman", None)]),
    ],
)
def test_what_the_speaker_left(sentence: str, left: list[tuple[str, str | None]]) -> None:
    assert [(value, version) for value, version, _ in replacements(sentence, "Ana")] == left


@pytest.mark.parametrize(
    "sentence",
    [
        "My sister moved from Paris to Rome.",
        "The analytics team uses MySQL 8.0, not us.",
        "My colleague Dana's team is still on PostgreSQL 12.",
        "Should we move from AWS to Azure?",
        "They pushed the release from March 14 to April 2.",
        "We use Django 5.0 for the API.",
    ],
)
def test_nothing_left(sentence: str) -> None:
    assert replacements(sentence, "Ana") == []


def test_the_context_names_what_the_statement_is_about() -> None:
    [(_, _, context)] = replacements("Code reviews moved from Oskar to Hana.", "Ana")
    assert "review" in context and "oskar" not in context


def test_a_statement_of_leaving_is_no_fact_of_holding() -> None:
    values = [f.value for f in extract_with_disclosures("We left Kotlin 1.9 behind.", "Ana", SAID_AT)]
    assert not any("Kotlin 1.9" in v for v in values)
    kept = [f.value for f in extract_with_disclosures("I switched my editor from Vim to Emacs.", "Ana", SAID_AT)]
    assert any("Emacs" in v for v in kept)
