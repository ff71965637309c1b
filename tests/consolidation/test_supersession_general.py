"""General update mechanisms (issue 42): number words typed as one number, the statement keeping what
a change moved, inchoative verbs ("joined", "started at") read as the state they begin, and states of
one predicate compared under their frame. Through the public API with the real MiniLM and the parse
reader on. The sentences are this file's own; none is a template of evaluation/
(test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bench.update_pairs import Said, kind_id, mentions, probe_said


@pytest.fixture(autouse=True)
def _parse_reader_on(settings: Any) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "PARSE_READER": True}


SAID_AT = datetime(2026, 10, 14, 9, 30, tzinfo=UTC)
# A subject named as many systems name their users, with a hyphen and digits: its name is no value.
SUBJECT = "user-4821"


def _said(kind: str, first: str, then: str, old: str, new: str) -> Said:
    return Said(kind, first, then, old, new, question=f"What is the current {kind}?")


# fmt: off
UPDATES = (
    _said("age in words", "I'm forty-six.", "I turned forty-seven on Sunday.", "forty-six", "forty-seven"),
    _said("choir", "Our choir has thirty-one singers.", "Our choir grew to thirty-eight singers.",
          "thirty-one", "thirty-eight"),
    _said("age after a date", "I'm 57.", "As of yesterday I'm 58.", "57", "58"),
    _said("cluster region", "We run our cluster in us-west-2.", "We moved the cluster to us-east-2.",
          "us-west-2", "us-east-2"),
    _said("phone", "My phone is an iPhone 11.", "I got a Galaxy S23 to replace my iPhone.", "iPhone 11", "Galaxy S23"),
    _said("scooter", "I ride a Vespa Primavera.", "I sold the Vespa and bought a Honda PCX.",
          "Vespa Primavera", "Honda PCX"),
)

NOT_UPDATES = (
    _said("a nephew's age", "I'm forty-six.", "My nephew is twenty-one.", "forty-six", "twenty-one"),
    _said("another group", "Our choir has thirty-one singers.", "Our orchestra has forty-two players.",
          "thirty-one", "forty-two"),
    _said("joined a gym", "I work at Umbrella Labs.", "I joined Planet Fitness in August.",
          "Umbrella Labs", "Planet Fitness"),
    _said("a friend joined", "I work at Umbrella Labs.", "My friend Sam joined Hooli.", "Umbrella Labs", "Hooli"),
    _said("another state of the kitchen", "My kitchen is tidy.", "My kitchen is small.", "tidy", "small"),
)
# fmt: on


@pytest.mark.django_db
@pytest.mark.usefixtures("minilm")
@pytest.mark.parametrize("pair", UPDATES, ids=kind_id)
def test_a_new_value_closes_the_old(api_a, end_session, pair: Said) -> None:
    outcome = probe_said(api_a, pair, SUBJECT, end_session)
    assert outcome.updated, outcome.describe()


@pytest.mark.django_db
@pytest.mark.usefixtures("minilm")
@pytest.mark.parametrize("pair", NOT_UPDATES, ids=kind_id)
def test_a_statement_that_replaces_nothing_keeps_the_old_value(api_a, end_session, pair: Said) -> None:
    outcome = probe_said(api_a, pair, SUBJECT, end_session)
    assert any(mentions(v, pair.old) >= 0 for v in outcome.active), outcome.describe()
