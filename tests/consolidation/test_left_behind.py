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
        ("We switched from Python 3.9 to Python 3.12 in January.", [("Python 3.9", None), ("Python", "3.12")]),
        ("We migrated the booking site to Django 5.0.", [("Django", "5.0")]),
        ("My desktop is on Fedora 41 now instead of Debian 12.", [("Debian 12", None), ("Fedora", "41")]),
        ("We replaced Jenkins with GitHub Actions for our builds.", [("Jenkins", None)]),
        ("Code reviews moved from Oskar to Hana.", [("Oskar", None)]),
        ("I now report to Jonas Berg, since Priya Raman left.", [("Priya Raman", None)]),
    ],
)
def test_what_the_speaker_left(sentence: str, left: list[tuple[str, str | None]]) -> None:
    assert [(value, version) for value, version, _ in replacements(sentence, "Ana")] == left


@pytest.mark.parametrize(
    "sentence",
    [
        "My sister moved from Paris to Rome.",
        "The data team runs MySQL 8.0, not us.",
        "My coworker Dana's group still runs PostgreSQL 12.",
        "Should we move from AWS to Azure?",
        "They moved the launch from March 14 to April 2.",
        "We use Django 5.0 for our public API.",
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
    kept = [f.value for f in extract_with_disclosures("I switched from Vim to Emacs for editing.", "Ana", SAID_AT)]
    assert any("Emacs" in v for v in kept)
