"""Deciding an update (issue 42): the later statement was read with a typed value, and the old value must
not stay active beside it. Through the public API with the real MiniLM and the parse reader on: what
kept the old value active in these pairs was the decision, not the reading (a circumstance or an adverb
said with the new value, a verb of change in the third person, a value left behind a possessive, a
change said before the clause's subject, a count inside "one-on-one", a count of one unit read as a
relation of many values, a circumstance of time said after the new value). A later statement that is an
addition, someone else's, a hypothesis, a question, the past, another thing or an exception for one
occasion leaves the earlier value active. The sentences are this file's own; none is a template of
evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

import pytest

from bench.update_pairs import Said, kind_id
from tests.consolidation.supersession import assert_kept, assert_updated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("minilm", "parse_reader")]


# fmt: off
UPDATES = (
    Said.current("one-on-one", "My weekly one-on-one is on Mondays at 10am.",
          "My weekly one-on-one got moved to Wednesdays at 2pm.", "Mondays", "Wednesdays"),
    Said.current("running watch", "I track my runs with a Garmin Forerunner 245.",
          "I replaced my Garmin with a Coros Pace 3.", "Garmin Forerunner 245", "Coros Pace 3"),
    Said.current("car", "Our only car is a second-hand Honda Civic.", "I traded the Civic in for a Mazda 3.", "Honda Civic", "Mazda 3"),
    Said.current("team size", "My team has 6 engineers.",
          "My team has 9 engineers after the hiring round.", "6 engineers", "9 engineers"),
    Said.current("diet", "I'm vegetarian.", "I've gone fully vegan.", "vegetarian", "vegan"),
    Said.current("sleep", "I usually sleep 7 hours a night.",
          "These days I only sleep 5 hours a night.", "7 hours", "5 hours"),
    Said.current("children", "I have two kids.",
          "We had a baby in May, so now I have three kids.", "two kids", "three kids"),
    Said.current("working hours", "I work 40 hours a week.", "I cut back to 32 hours a week.", "40 hours", "32 hours"),
    Said.current("reading group", "My reading group has 9 members.",
          "My reading group grew to 12 members.", "9 members", "12 members"),
    Said.current("chickens", "We have 3 chickens.", "We have 2 chickens since the fox came.", "3 chickens", "2 chickens"),
    Said.current("invoices", "We keep our invoices in QuickBooks.", "Our invoices live in Xero now.", "QuickBooks", "Xero"),
)

NOT_UPDATES = (
    Said.current("an addition", "We keep our invoices in QuickBooks.",
          "We also keep receipts in Dropbox.", "QuickBooks", "Dropbox"),
    Said.current("someone else's", "My daily walk takes 30 minutes.",
          "My husband's walk takes an hour.", "30 minutes", "an hour"),
    Said.current("a roommate's", "I pay $650 a month in rent.",
          "My roommate pays $700 a month in rent.", "$650", "$700"),
    Said.current("a son's age", "I'm 45.", "My son turned 12 yesterday.", "45", "12"),
    Said.current("a count of another thing", "We have 3 chickens.", "We have 2 goats too.", "3 chickens", "2 goats"),
    Said.current("a question", "My team has 6 engineers.", "Should my team have 8 engineers?", "6 engineers", "8 engineers"),
    Said.current("a hypothesis", "We live in Utrecht, near the station.",
          "If we moved to Haarlem, the commute would be shorter.", "Utrecht", "Haarlem"),
    Said.current("another thing", "My reading group has 9 members.",
          "My chess club has 20 members.", "9 members", "20 members"),
    Said.current("another duration", "My daily walk takes 30 minutes.",
          "My lunch break lasts 45 minutes.", "30 minutes", "45 minutes"),
    Said.current("considered", "Our only car is a second-hand Honda Civic.",
          "I test-drove a Tesla but decided to keep my car.", "Honda Civic", "Tesla"),
    Said.current("one occasion", "My weekly one-on-one is on Mondays.",
          "This week only, the one-on-one is on Tuesday.", "Mondays", "Tuesday"),
)
# fmt: on


@pytest.mark.parametrize("pair", UPDATES, ids=kind_id)
def test_a_new_value_read_with_its_type_closes_the_old(api_a, end_session, pair: Said) -> None:
    assert_updated(api_a, end_session, pair, "u-decide")


@pytest.mark.parametrize("pair", NOT_UPDATES, ids=kind_id)
def test_a_statement_that_replaces_nothing_keeps_the_old_value(api_a, end_session, pair: Said) -> None:
    assert_kept(api_a, end_session, pair, "u-decide")
