"""A job title and a named project's state are single-valued facts, so that a new one replaces the old
(issue 30: "I got promoted; I'm a sales lead now" and "The Atlas project is now on hold" were not read,
so the older statement, kept as `about`, stayed active and was served above the newer turn). A title
needs an occupation's head noun and a state comes from a closed vocabulary: "I'm a big fan" and
"Dinner is done" are not facts of either kind."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import extract_with_disclosures

SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)


def _found(sentence: str, attribute: str) -> list[tuple[str | None, str]]:
    return [(f.entity, f.value) for f in extract_with_disclosures(sentence, "Ana", SAID_AT) if f.attribute == attribute]


@pytest.mark.parametrize(
    ("sentence", "title"),
    [
        ("I'm a paramedic.", "paramedic"),
        ("I work as backend developer.", "backend developer"),
        ("My role is now senior product designer.", "senior product designer"),
        ("They promoted me last month, I'm now a team lead.", "team lead"),
        ("I switched careers from teacher to software tester.", "software tester"),
        ("My new job title is marketing manager.", "marketing manager"),
        ("I'm a civil engineer at Arup.", "civil engineer"),
    ],
)
def test_a_job_title_in_any_phrasing(sentence: str, title: str) -> None:
    assert [value for _, value in _found(sentence, "job_title")] == [title]


@pytest.mark.parametrize(
    "sentence",
    ["I'm a big fan of jazz.", "I'm a morning person.", "My brother works as a nurse.", "I'm a bit tired today."],
)
def test_not_a_job_title(sentence: str) -> None:
    assert _found(sentence, "job_title") == []


@pytest.mark.parametrize(
    ("sentence", "thing", "state"),
    [
        ("The Helios project is in testing.", "Helios", "in testing"),
        ("Our Nimbus app is officially live.", "Nimbus", "live"),
        ("Kestrel, our billing product, is on hold.", "Kestrel", "on hold"),
        ("Quick update on Kestrel: it is now shipped.", "Kestrel", "shipped"),
        ("Helios went from in review to approved.", "Helios", "approved"),
        ("As of today Nimbus is cancelled.", "Nimbus", "cancelled"),
    ],
)
def test_a_named_projects_state(sentence: str, thing: str, state: str) -> None:
    assert _found(sentence, "status") == [(thing, state)]


@pytest.mark.parametrize(
    "sentence",
    ["Dinner is done.", "Everything is finished.", "Helios moved from Berlin to Paris.", "The release is great."],
)
def test_not_a_projects_state(sentence: str) -> None:
    assert _found(sentence, "status") == []
