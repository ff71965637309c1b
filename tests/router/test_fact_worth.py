"""A fact restates the turn it came from: POST /v1/context values it no more than history values that
turn for the query (router.candidates.semantic.fact_worth). A fact whose short statement matches the
question's words, told in a turn that history does not find, does not take the room of the lines history
found (on LoCoMo at 1K such facts were evidence 14 times in 7,469 served)."""

from __future__ import annotations

import pytest

from router.candidates.semantic import settle_facts
from tests.router.conftest import believe, remember
from tests.router.test_packing import _episode, _flat

HISTORY_SECTION = "Relevant history"
HISTORY = [
    "On Sundays I play the violin in a string quartet, mostly Haydn and Bach, in the church hall near the station.",
    "I also play the piano on Sundays at home, scales first and then a sonata or two, before lunch with my parents.",
    "Chess club at the library again.",
    "Sundays are quiet here, the shops close early and the streets are empty by six.",
    "My parents visit on Sundays and we cook a big lunch together, usually a roast.",
    "Alice and I walk the dog by the river on Sundays when the weather allows it.",
    "The printer jams again.",
    "The VPN drops at six.",
]
QUERY = "What does Alice play on Sundays?"


@pytest.fixture
def chess(tenant_a) -> tuple[str, set[int]]:
    """The fact told by the chess club's turn, whose statement has the query's words and its turn none;
    and the turns that history finds for the query."""
    episodes = remember(tenant_a, HISTORY)
    fact = believe(
        tenant_a,
        attribute="game",
        value="chess",
        statement="Alice does play chess on Sundays.",
        sources=[episodes[2]],
    )
    return f"fact:{fact.fact.id}", {episodes[i].id for i in (0, 1, 3, 4, 5)}


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [100, 120, 130, 140, 160, 200, 300])
def test_a_fact_whose_turn_history_did_not_find_never_takes_a_found_lines_room(chess, ask, budget: int) -> None:
    fact_id, found = chess
    body = ask(query=QUERY, max_tokens=budget, budgets={"reserve": 0, "episodic": budget})
    facts = {item["id"] for item in body["layers"]["semantic"]}
    lines = {item["sources"][0]["episode_id"] for item in body["layers"]["episodic"] if item["type"] == "episode"}
    if fact_id in facts:
        assert found <= lines, body["prompt"]


@pytest.mark.django_db
def test_with_room_left_the_fact_is_still_served(chess, ask) -> None:
    fact_id, _ = chess
    body = ask(query=QUERY, max_tokens=2000, budgets={"reserve": 0, "episodic": 2000})
    assert fact_id in {item["id"] for item in body["layers"]["semantic"]}


def test_a_fact_is_worth_no_more_than_the_line_of_its_turn() -> None:
    fact = _flat("semantic", 1, "Alice plays chess on Sundays.", 0.3)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.9}
    low = _episode(7, "Chess club at the library again.", 0.01, HISTORY_SECTION, 0, "s-1")
    high = _episode(8, "On Sundays I play the violin in a string quartet.", 0.6, HISTORY_SECTION, 1, "s-1")
    fact.sources = list(low.sources)
    fact.covers = frozenset({low.id})
    settle_facts([fact], [low, high])
    assert fact.value == pytest.approx(0.01)


def test_a_fact_worth_less_than_its_line_keeps_its_value() -> None:
    fact = _flat("semantic", 1, "Alice plays chess on Sundays.", 0.005)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.9}
    line = _episode(7, "Chess club at the library again.", 0.01, HISTORY_SECTION, 0, "s-1")
    fact.sources = list(line.sources)
    settle_facts([fact], [line])
    assert fact.value == pytest.approx(0.005)


def test_a_fact_a_client_wrote_without_a_source_keeps_its_value() -> None:
    fact = _flat("semantic", 1, "Alice plays chess on Sundays.", 0.3)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.9}
    line = _episode(7, "Chess club at the library again.", 0.01, HISTORY_SECTION, 0, "s-1")
    settle_facts([fact], [line])
    assert fact.value == pytest.approx(0.3)


def test_a_fact_whose_turn_history_did_not_find_is_worth_no_more_than_its_least_line() -> None:
    fact = _flat("semantic", 1, "Alice plays chess on Sundays.", 0.3)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.9}
    fact.sources = list(_episode(9, "Chess club at the library again.", 0.0, HISTORY_SECTION, 0, "s-1").sources)
    lines = [
        _episode(7, "On Sundays I play the violin.", 0.6, HISTORY_SECTION, 0, "s-1"),
        _episode(8, "Sundays are quiet here.", 0.02, HISTORY_SECTION, 0, "s-1"),
    ]
    settle_facts([fact], lines)
    assert fact.value == pytest.approx(0.02)
