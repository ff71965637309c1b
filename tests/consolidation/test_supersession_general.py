"""General update mechanisms (issue 42): the subject's own name is no value, number words are one number,
the statement keeps what a change moved, and two states said with the same verb are of one predicate;
reported speech (a joke, a quotation), a state for one coming occasion, a hypothesis or the past state
nothing now, and a frame with a word more before its value names another thing. Through the public API
with the real MiniLM and the parse reader on. The sentences are this file's own; none is a template of
evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bench.update_pairs import Said, kind_id, mentions, probe_said
from consolidation.extractors.rules import extract_with_disclosures


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
    _said("hosting", "Our site is hosted in Dublin.", "We moved our hosting to Helsinki.", "Dublin", "Helsinki"),
    _said("database region", "Our database lives in eu-west-1.", "We migrated our database to eu-central-1.",
          "eu-west-1", "eu-central-1"),
    _said("diet", "I eat vegan.", "I eat pescatarian these days.", "vegan", "pescatarian"),
    _said("from the past to now", "My flat is in Leeds.", "Originally from Cardiff, I now live in Bristol.",
          "Leeds", "Bristol"),
    _said("phone", "My phone is an iPhone 11.", "I got a Galaxy S23 to replace my iPhone.", "iPhone 11", "Galaxy S23"),
    _said("scooter", "I ride a Vespa Primavera.", "I sold my Vespa and bought a Honda PCX instead.",
          "Vespa Primavera", "Honda PCX"),
)

NOT_UPDATES = (
    _said("a nephew's age", "I'm forty-six.", "My nephew is twenty-one.", "forty-six", "twenty-one"),
    _said("another group", "Our choir has thirty-one singers.", "Our orchestra has forty-two players.",
          "thirty-one", "forty-two"),
    _said("joined a gym", "I work for Umbrella Labs.", "I joined Planet Fitness in August.",
          "Umbrella Labs", "Planet Fitness"),
    _said("a friend joined", "I work for Umbrella Labs.", "My friend Sam joined Hooli.", "Umbrella Labs", "Hooli"),
    _said("a joke", "My favourite album is Blue Lines.", "My flatmate jokes that my favourite album is Thriller.",
          "Blue Lines", "Thriller"),
    _said("a quotation", "My flat is in Leeds.", '"Sure, I live on Mars," I told the recruiter.', "Leeds", "Mars"),
    _said("for one sprint", "Our retro is on Fridays.", "For this sprint alone, we hold the retro on Thursday.",
          "Fridays", "Thursday"),
    _said("looked at, kept", "Our invoices go through Xero.", "We trialled FreshBooks for a month, but we kept Xero.",
          "Xero", "FreshBooks"),
    _said("long ago", "My flat is in Leeds.", "Back in my twenties I lived in Bristol.", "Leeds", "Bristol"),
    _said("tomorrow only", "Our standup is at 9:30.", "Tomorrow the standup is at 11:00 because of the offsite.",
          "9:30", "11:00"),
    _said("a holiday", "The gym opens at 6am.", "On Christmas day the gym opens at 9am.", "6am", "9am"),
    _said("another team", "Our team uses Jira.", "The marketing team uses Asana.", "Jira", "Asana"),
    _said("nearly switched", "Our bug tracker is Jira.", "We nearly switched to Linear last year.", "Jira", "Linear"),
    _said("priced out", "Our servers are on Hetzner.", "We priced out AWS last quarter.", "Hetzner", "AWS"),
    _said("childhood", "My flat is in Leeds.", "I grew up in Cardiff.", "Leeds", "Cardiff"),
    _said("the early days", "We run Postgres 16.", "We started out on MySQL 5.7 back when we were tiny.",
          "Postgres 16", "MySQL 5.7"),
    _said("in my twenties", "My flat is in Leeds.", "In my twenties I moved to London.", "Leeds", "London"),
    _said("another state of the flat", "My flat is cheap.", "My flat is noisy.", "cheap", "noisy"),
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


# fmt: off
STATEMENTS = [
    # what a change moved is its predicate: the statement keeps it, and an identifier keeps its "us"
    ("We shifted our web servers to us-east-2.", "us-east-2", "web servers"),
    ("We run the build farm in eu-north-1.", "eu-north-1", "build farm"),
    ("I've moved the blog to Ghost.", "Ghost", "blog"),
    ("We switched our newsletter to Buttondown.", "Buttondown", "newsletter"),
]
# fmt: on


@pytest.mark.parametrize(("sentence", "value", "thing"), STATEMENTS, ids=[s for s, _, _ in STATEMENTS])
def test_the_statement_keeps_what_was_changed_and_the_whole_value(sentence: str, value: str, thing: str) -> None:
    facts = extract_with_disclosures(sentence, SUBJECT, SAID_AT)
    assert any(f.value == value and value in f.statement and thing in f.statement for f in facts), [
        (f.attribute, f.value, f.statement) for f in facts
    ]
