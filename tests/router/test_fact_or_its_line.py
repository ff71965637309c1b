"""A fact or the line it came from (router.candidates.semantic.fact_defer, fact_earlier). A fact says
less than its line: where the line answers the question better (it holds the question's words that the
fact does not, and is worth more), the line is served while it fits, and the fact only where it does not. A fact restating an older statement that a newer line speaks of is the
older statement too: it is never served without the newer line (DESIGN invariant 8)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from episodic.tasks import embed_pending
from router.budgets import budget_plan
from router.candidates.semantic import settle_facts
from router.packing import assemble
from router.types import LAYERS, Candidate, LayerCandidates
from tenants.models import TenantSettings
from tests.router.conftest import T0, believe, remember
from tests.router.test_packing import _episode, _flat

OLD = "My phone number is 555 0101, call me there any evening after work or at the weekend."
NEW = "My phone number is now 555 0199, call me there."
PHONE = "What is my phone number?"


@pytest.fixture
def moved(tenant_a) -> None:
    """An older and a newer line on one thing, and a fact extracted from the older one only."""
    old = remember(tenant_a, [OLD, ("assistant", "Noted."), "I like green tea."], session="s-1")
    remember(tenant_a, ["The weather is nice today.", "We adopted a cat."], session="s-2", start=T0 + timedelta(days=3))
    remember(tenant_a, [NEW, ("assistant", "Updated.")], session="s-3", start=T0 + timedelta(days=9))
    believe(
        tenant_a, attribute="phone_number", value="555 0101", statement="Alice's phone is 555 0101.", sources=[old[0]]
    )


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [100, 110, 120, 130, 140, 150, 175, 200, 400])
def test_a_fact_restating_an_older_statement_never_comes_without_the_newer(moved: None, ask, budget: int) -> None:
    body = ask(query=PHONE, max_tokens=budget, budgets={"reserve": 0, "episodic": budget})
    assert body["tokens"]["total"] <= budget
    if "0101" in body["prompt"]:
        assert "0199" in body["prompt"], body["prompt"]


# Through the API, as an agent's memory is written: the sessions' turns posted, each session ended (its
# consolidation extracts the facts), the production embedder's similarities. Of what the user said, the
# rule-based extractor keeps one fact, "alice works as head nurse.", from the turn that also names the
# ward; nothing else said makes a fact, so the fact replaces no earlier value.
WARD_LINE = (
    "I just got promoted to head nurse. They told me on Monday, and from next month I will be running the "
    "children's ward at St Mary's on my own."
)
NURSE_SESSIONS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "s-1": (
        "2024-03-01",
        [
            (
                "user",
                "Night shifts at St Mary's hospital are brutal, but the little ones on the children's ward keep "
                "me going even on the hardest nights.",
            ),
            ("assistant", "That sounds demanding but rewarding. How do you unwind after a night shift?"),
            ("user", "I go for a swim at the community pool before I sleep, it helps me switch off."),
            ("assistant", "Swimming is a great way to relax."),
            ("user", "My sister Emma is coming to visit next month with her two kids."),
        ],
    ),
    "s-2": (
        "2024-03-08",
        [
            (
                "user",
                "Work was rough this week, the hospital was short of staff and I covered three extra night shifts.",
            ),
            ("assistant", "That is a lot. Did you get any rest?"),
            ("user", "A bit. My manager at work promised we would get two new nurses by April."),
            ("assistant", "Hopefully that eases the load."),
            ("user", "I also started a pottery class on Saturdays to have something creative outside of work."),
        ],
    ),
    "s-3": (
        "2024-03-15",
        [
            ("user", "A patient's mother brought cookies to the nurses' station to thank us, it made my whole week."),
            ("assistant", "What a kind gesture!"),
            ("user", "Emma and the kids arrived on Friday, we took them to the aquarium."),
            ("user", "I am thinking about studying for a master's degree in nursing next year."),
        ],
    ),
    "s-4": (
        "2024-03-22",
        [
            ("user", WARD_LINE),
            ("assistant", "Congratulations, that is a huge step! How are you feeling about it?"),
            ("user", "Excited and a bit nervous, it is a lot more responsibility than my old job on night shifts."),
        ],
    ),
}


@pytest.fixture
def promoted(tenant_a, api_a, minilm: None, offline_extractor: None, end_session) -> None:
    for session, (day, turns) in NURSE_SESSIONS.items():
        episodes = [
            {
                "subject": "alice",
                "session": session,
                "kind": "message",
                "role": role,
                "content": text,
                "occurred_at": f"{day}T19:{i:02d}:00+00:00",
                "external_id": f"{session}:{i}",
            }
            for i, (role, text) in enumerate(turns)
        ]
        assert api_a.post("/v1/episodes", {"episodes": episodes}, format="json").status_code == 201
        # The worker's drain: the passages' vectors, then the episodes'.
        embed_pending(tenant=tenant_a, max_batches=10**6)
        end_session(session)
    said = {e["external_id"]: e["id"] for e in api_a.get("/v1/episodes", {"session": "s-4"}).json()["results"]}
    facts = api_a.get("/v1/facts", {"entity": "alice"}).json()["results"]
    # The one fact restating the ward's turn; the other sessions' experiences ("alice covered three extra
    # night shifts.") are facts of their own that the question does not resemble.
    assert [f["statement"] for f in facts if said["s-4:0"] in f["source_episode_ids"]] == ["alice works as head nurse."]
    assert all(f["source_episode_ids"] == [said["s-4:0"]] for f in facts if "nurse" in f["statement"])


def _fact_or_line(body: dict[str, Any], external_id: str) -> tuple[bool, bool]:
    """Whether a fact restating the turn `external_id`, and whether the turn's own line, were served."""
    fact = any(s["external_id"] == external_id for item in body["layers"]["semantic"] for s in item["sources"])
    line = any(
        item["type"] == "episode" and item["sources"][0]["external_id"] == external_id
        for item in body["layers"]["episodic"]
    )
    return fact, line


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [120, 200, 300])
def test_a_fact_that_leaves_out_the_word_asked_for_yields_to_its_line_through_the_api(
    promoted: None, ask, settings, budget: int
) -> None:
    # The fact is what the query resembles most (the same job, the same words but one), worth more per
    # token than its longer line; the line holds "ward", which the fact does not.
    request = {"query": "Which ward does Alice work in as head nurse?", "max_tokens": budget, "budgets": {"reserve": 0}}
    body = ask(**request)
    assert _fact_or_line(body, "s-4:0") == (False, True), body["prompt"]
    assert "children's ward at St Mary's" in body["prompt"]
    settings.ENGRAM = {**settings.ENGRAM, "PACKER_OFF": ["fact_defer"]}
    body = ask(**request)
    assert _fact_or_line(body, "s-4:0") == (True, False), body["prompt"]
    assert "children's ward at St Mary's" not in body["prompt"]


@pytest.mark.django_db
def test_a_fact_holding_every_word_its_line_holds_of_the_query_still_stands_in_through_the_api(
    promoted: None, ask
) -> None:
    body = ask(query="Where does Alice work as head nurse?", max_tokens=200, budgets={"reserve": 0})
    assert _fact_or_line(body, "s-4:0") == (True, False), body["prompt"]


# The same decisions on a pool built by hand, packed as POST /v1/context packs (router.packing.assemble).
SECTION = "Relevant history"
LINE = (
    "I went to a pottery workshop on Saturday and we discussed glazing techniques, kiln temperatures for "
    "stoneware and how to keep a bowl from cracking while it dries."
)


def _pool(fact_text: str, *, earlier: bool = False) -> tuple[Candidate, list[Candidate]]:
    """A fact from episode 7 worth 0.9 by its own relevance, its line worth 1.0 (labelled "(earlier)",
    requiring episode 8's line, when `earlier`), and lines of other turns that fill what is left."""
    fact = _flat("semantic", 1, f"{fact_text} (2 Mar 2024, confidence 0.65)", 0.9)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.65}
    line = _episode(7, LINE, 1.0, SECTION, 0, "s-1")
    fact.sources = list(line.sources)
    fact.covers = frozenset({line.id})
    newer = _episode(8, "The pottery workshop moved to Sundays now.", 0.9, SECTION, 5, "s-2")
    if earlier:
        line.text = f"(earlier) {line.text}"
        line.requires = frozenset({newer.id})
    others = [
        _episode(10 + i, f"pottery note {i} on the wheel and the clay", 0.2, SECTION, 1, "s-3") for i in range(12)
    ]
    return fact, [line, newer, *others]


def _packed(fact: Candidate, episodic: list[Candidate], budget: int, query: str, **parts: bool) -> set[str]:
    settle_facts([fact], episodic, query=query, **parts)
    plan = budget_plan(
        config=TenantSettings(), max_tokens=budget, overrides={"reserve": 0, "episodic": budget}, layers=LAYERS
    )
    built = assemble(offered=LayerCandidates(semantic=[fact], episodic=episodic), plan=plan, fmt="markdown")
    return {c.id for items in built.chosen.values() for c in items}


ASKED = "What kiln temperatures came up at the pottery workshop?"


@pytest.mark.parametrize("budget", [150, 200, 250])
def test_a_fact_lacking_the_questions_words_its_line_holds_defers_to_the_line(budget: int) -> None:
    fact, episodic = _pool("Alice went to a pottery workshop.")
    chosen = _packed(fact, episodic, budget, ASKED)
    assert "episode:7" in chosen and "semantic:1" not in chosen, chosen
    fact, episodic = _pool("Alice went to a pottery workshop.")
    chosen = _packed(fact, episodic, budget, ASKED, defer=False)
    assert "semantic:1" in chosen and "episode:7" not in chosen, chosen


def test_a_fact_holding_every_word_of_the_question_its_line_holds_still_stands_in() -> None:
    fact, episodic = _pool("Alice learned kiln temperatures at a pottery workshop.")
    chosen = _packed(fact, episodic, 150, ASKED)
    assert "semantic:1" in chosen and "episode:7" not in chosen, chosen


@pytest.mark.parametrize("budget", [100, 120, 150, 200, 250])
def test_a_fact_restating_only_an_earlier_line_is_served_only_with_the_newer(budget: int) -> None:
    fact, episodic = _pool("Alice went to a pottery workshop on Saturdays.", earlier=True)
    chosen = _packed(fact, episodic, budget, "When is the pottery workshop?", defer=False)
    if "semantic:1" in chosen:
        assert "episode:8" in chosen, chosen
    fact, episodic = _pool("Alice went to a pottery workshop on Saturdays.", earlier=True)
    assert fact.requires == frozenset()
    settle_facts([fact], episodic, query="When is the pottery workshop?")
    assert fact.requires == frozenset({"episode:8"})
