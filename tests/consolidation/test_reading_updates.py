"""Updates of predicates no pattern names, read by the parse (issue 42), through the public API with the
real MiniLM: the first value said in one session, a new one in a later session, in turns with other
sentences around them; GET /v1/facts then holds the new value active and not the old one. A later turn
that states nothing now (a condition, a modal, a negation, someone else's thing, an attitude, the
past) leaves the earlier fact alone. The sentences are this file's own, written from the grammar of
each kind of change; none is a template of evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.update_pairs import Said, kind_id, mentions, probe_said


@pytest.fixture(autouse=True)
def _parse_reader_on(settings: Any) -> None:
    """The reader is off by default (config/settings/base.py, ENGRAM["PARSE_READER"]): these tests are its own."""
    settings.ENGRAM = {**settings.ENGRAM, "PARSE_READER": True}


pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("minilm")]


def _said(kind: str, first: str, then: str, old: str, new: str) -> Said:
    return Said(kind, first, then, old, new, question=f"What is the current {kind}?")


# fmt: off
UPDATES = (
    _said("age", "Morning! Quick context: I'm 58 and training for my first triathlon.",
          "Birthday weekend, so I'm 59 now. Anyway, back to the plan.", "58", "59"),
    _said("swim length", "My swim practice runs 90 minutes, three times a week.",
          "Coach cut my swim practice to 60 minutes.", "90 minutes", "60 minutes"),
    _said("backup time", "Our nightly backup kicks off at 1:45 and usually ends by three.",
          "We shifted the nightly backup to 4:10 so it stops clashing with the batch jobs.", "1:45", "4:10"),
    _said("class fee", "My pottery class costs $220 per term, which is steep.",
          "Good news, my pottery class is down to $180 per term.", "$220", "$180"),
    _said("family car", "Our family car is a 2011 Volvo V70, still going strong.",
          "We finally replaced the Volvo with a Skoda Enyaq.", "Volvo V70", "Skoda Enyaq"),
    _said("billing", "We run our billing on Chargebee right now.",
          "Our billing moved from Chargebee to Paddle last month.", "Chargebee", "Paddle"),
    _said("landlady", "Ines Duarte is my landlady, she is very relaxed about repairs.",
          "The flat was sold, and Bruna Melo became my landlady.", "Ines Duarte", "Bruna Melo"),
    _said("state of a permit", "My building permit is pending at the council.",
          "Finally, my building permit got approved this morning.", "pending", "approved"),
)

NOT_UPDATES = (
    _said("a condition", "My swim practice runs 90 minutes, three times a week.",
          "If my swim practice ran 60 minutes, I could fit in a run.", "90 minutes", "60 minutes"),
    _said("a modal", "We run our billing on Chargebee right now.",
          "We could move our billing to Paddle next year.", "Chargebee", "Paddle"),
    _said("someone else's", "My pottery class costs $220 per term, which is steep.",
          "My nephew's judo class costs $95 per term.", "$220", "$95"),
    _said("a negation", "My building permit is pending at the council.",
          "My building permit has not been approved yet.", "pending", "approved"),
    _said("an attitude", "Our family car is a 2011 Volvo V70, still going strong.",
          "I keep wondering whether a Skoda Enyaq would suit us better.", "Volvo V70", "Skoda Enyaq"),
    _said("the past", "I'm 58 and training for my first triathlon.",
          "I was 41 when I ran my first marathon.", "58", "41"),
)
# fmt: on


@pytest.mark.parametrize("pair", UPDATES, ids=kind_id)
def test_a_new_value_read_by_the_parse_supersedes_the_old(api_a, end_session, pair: Said) -> None:
    outcome = probe_said(api_a, pair, "u-read", end_session)
    assert outcome.updated, outcome.describe()


@pytest.mark.parametrize("pair", NOT_UPDATES, ids=kind_id)
def test_a_turn_that_states_nothing_now_leaves_the_old_value(api_a, end_session, pair: Said) -> None:
    outcome = probe_said(api_a, pair, "u-keep", end_session)
    assert any(mentions(v, pair.old) >= 0 for v in outcome.active), outcome.describe()
