"""Updates of predicates no pattern names, read by the parse (issue 42), through the public API with the
real MiniLM: the first value said in one session, a new one in a later session, in turns with other
sentences around them; GET /v1/facts then holds the new value active and not the old one. A later turn
that states nothing now (a condition, a modal, a negation, someone else's thing, an attitude, the
past) leaves the earlier fact alone. The sentences are this file's own, written from the grammar of
each kind of change; none is a template of evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

import pytest

from bench.update_pairs import Said, kind_id
from tests.consolidation.supersession import assert_kept, assert_updated

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("minilm", "parse_reader")]


# fmt: off
UPDATES = (
    Said.current("age", "Morning! Quick context: I'm 58 and training for my first triathlon.",
          "Birthday weekend, so I'm 59 now. Anyway, back to the plan.", "58", "59"),
    Said.current("swim length", "My swim practice runs 90 minutes, three times a week.",
          "Coach cut my swim practice to 60 minutes.", "90 minutes", "60 minutes"),
    Said.current("backup time", "Our nightly backup kicks off at 1:45 and usually ends by three.",
          "We shifted the nightly backup to 4:10 so it stops clashing with the batch jobs.", "1:45", "4:10"),
    Said.current("class fee", "My pottery class costs $220 per term, which is steep.",
          "Good news, my pottery class is down to $180 per term.", "$220", "$180"),
    Said.current("family car", "Our family car is a 2011 Volvo V70, still going strong.",
          "We finally replaced the Volvo with a Skoda Enyaq.", "Volvo V70", "Skoda Enyaq"),
    Said.current("billing", "We run our billing on Chargebee right now.",
          "Our billing moved from Chargebee to Paddle last month.", "Chargebee", "Paddle"),
    Said.current("landlady", "Ines Duarte is my landlady, she is very relaxed about repairs.",
          "The flat was sold, and Bruna Melo became my landlady.", "Ines Duarte", "Bruna Melo"),
    Said.current("state of a permit", "My building permit is pending at the council.",
          "Finally, my building permit got approved this morning.", "pending", "approved"),
)

NOT_UPDATES = (
    Said.current("a condition", "My swim practice runs 90 minutes, three times a week.",
          "If my swim practice ran 60 minutes, I could fit in a run.", "90 minutes", "60 minutes"),
    Said.current("a modal", "We run our billing on Chargebee right now.",
          "We could move our billing to Paddle next year.", "Chargebee", "Paddle"),
    Said.current("someone else's", "My pottery class costs $220 per term, which is steep.",
          "My nephew's judo class costs $95 per term.", "$220", "$95"),
    Said.current("a negation", "My building permit is pending at the council.",
          "My building permit has not been approved yet.", "pending", "approved"),
    Said.current("an attitude", "Our family car is a 2011 Volvo V70, still going strong.",
          "I keep wondering whether a Skoda Enyaq would suit us better.", "Volvo V70", "Skoda Enyaq"),
    Said.current("the past", "I'm 58 and training for my first triathlon.",
          "I was 41 when I ran my first marathon.", "58", "41"),
)
# fmt: on


@pytest.mark.parametrize("pair", UPDATES, ids=kind_id)
def test_a_new_value_read_by_the_parse_supersedes_the_old(api_a, end_session, pair: Said) -> None:
    assert_updated(api_a, end_session, pair, "u-read")


@pytest.mark.parametrize("pair", NOT_UPDATES, ids=kind_id)
def test_a_turn_that_states_nothing_now_leaves_the_old_value(api_a, end_session, pair: Said) -> None:
    assert_kept(api_a, end_session, pair, "u-keep")
