"""General update mechanisms (issue 42): the subject's own name is no value, number words are one number,
the statement keeps what a change moved, and two states said with the same verb are of one predicate;
reported speech (a joke, a quotation), a state for one coming occasion, a hypothesis or the past state
nothing now, and a frame with a word more before its value names another thing. Through the public API
with the real MiniLM and the parse reader on. The sentences are this file's own; none is a template of
evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.update_pairs import Said
from tests.consolidation.supersession import assert_kept, assert_updated, assert_value_held, said_pairs

pytestmark = pytest.mark.usefixtures("parse_reader")

SAID_AT = datetime(2026, 10, 14, 9, 30, tzinfo=UTC)
# A subject named as many systems name their users, with a hyphen and digits: its name is no value.
SUBJECT = "user-4821"


# fmt: off
UPDATES = (
    Said.current("age in words", "I'm forty-six.", "I turned forty-seven on Sunday.", "forty-six", "forty-seven"),
    Said.current("choir", "Our choir has thirty-one singers.", "Our choir grew to thirty-eight singers.",
          "thirty-one", "thirty-eight"),
    Said.current("age after a date", "I'm 57.", "As of yesterday I'm 58.", "57", "58"),
    Said.current("cluster region", "We run our cluster in us-west-2.", "We moved the cluster to us-east-2.",
          "us-west-2", "us-east-2"),
    Said.current("hosting", "Our site is hosted in Dublin.", "We moved our hosting to Helsinki.", "Dublin", "Helsinki"),
    Said.current("database region", "Our database lives in eu-west-1.", "We migrated our database to eu-central-1.",
          "eu-west-1", "eu-central-1"),
    Said.current("diet", "I eat vegan.", "I eat pescatarian these days.", "vegan", "pescatarian"),
    Said.current("from the past to now", "My flat is in Leeds.", "Originally from Cardiff, I now live in Bristol.",
          "Leeds", "Bristol"),
    Said.current("phone", "My phone is an iPhone 11.", "I got a Galaxy S23 to replace my iPhone.", "iPhone 11", "Galaxy S23"),
    Said.current("scooter", "I ride a Vespa Primavera.", "I sold my Vespa and bought a Honda PCX instead.",
          "Vespa Primavera", "Honda PCX"),
)

NOT_UPDATES = (
    Said.current("a nephew's age", "I'm forty-six.", "My nephew is twenty-one.", "forty-six", "twenty-one"),
    Said.current("another group", "Our choir has thirty-one singers.", "Our orchestra has forty-two players.",
          "thirty-one", "forty-two"),
    Said.current("joined a gym", "I work for Umbrella Labs.", "I joined Planet Fitness in August.",
          "Umbrella Labs", "Planet Fitness"),
    Said.current("a friend joined", "I work for Umbrella Labs.", "My friend Sam joined Hooli.", "Umbrella Labs", "Hooli"),
    Said.current("a joke", "My favourite album is Blue Lines.", "My flatmate jokes that my favourite album is Thriller.",
          "Blue Lines", "Thriller"),
    Said.current("a quotation", "My flat is in Leeds.", '"Sure, I live on Mars," I told the recruiter.', "Leeds", "Mars"),
    Said.current("for one sprint", "Our retro is on Fridays.", "For this sprint alone, we hold the retro on Thursday.",
          "Fridays", "Thursday"),
    Said.current("looked at, kept", "Our invoices go through Xero.", "We trialled FreshBooks for a month, but we kept Xero.",
          "Xero", "FreshBooks"),
    Said.current("long ago", "My flat is in Leeds.", "Back in my twenties I lived in Bristol.", "Leeds", "Bristol"),
    Said.current("tomorrow only", "Our standup is at 9:30.", "Tomorrow the standup is at 11:00 because of the offsite.",
          "9:30", "11:00"),
    Said.current("a holiday", "The gym opens at 6am.", "On Christmas day the gym opens at 9am.", "6am", "9am"),
    Said.current("another team", "Our team uses Jira.", "The marketing team uses Asana.", "Jira", "Asana"),
    Said.current("nearly switched", "Our bug tracker is Jira.", "We nearly switched to Linear last year.", "Jira", "Linear"),
    Said.current("priced out", "Our servers are on Hetzner.", "We priced out AWS last quarter.", "Hetzner", "AWS"),
    Said.current("childhood", "My flat is in Leeds.", "I grew up in Cardiff.", "Leeds", "Cardiff"),
    Said.current("the early days", "We run Postgres 16.", "We started out on MySQL 5.7 back when we were tiny.",
          "Postgres 16", "MySQL 5.7"),
    Said.current("in my twenties", "My flat is in Leeds.", "In my twenties I moved to London.", "Leeds", "London"),
    Said.current("another state of the flat", "My flat is cheap.", "My flat is noisy.", "cheap", "noisy"),
    Said.current("another state of the kitchen", "My kitchen is tidy.", "My kitchen is small.", "tidy", "small"),
)
# fmt: on


@said_pairs(UPDATES)
def test_a_new_value_closes_the_old(api_a, end_session, pair: Said) -> None:
    assert_updated(api_a, end_session, pair, SUBJECT)


@said_pairs(NOT_UPDATES)
def test_a_statement_that_replaces_nothing_keeps_the_old_value(api_a, end_session, pair: Said) -> None:
    assert_kept(api_a, end_session, pair, SUBJECT)


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
    assert_value_held(
        sentence, value, subject=SUBJECT, said_at=SAID_AT, also=lambda f: value in f.statement and thing in f.statement
    )
