"""Entity aliases in episodic memory: co-reference a turn shows, canonical names on new episodes, and
episode search and lists matching an entity under any of its names."""

from __future__ import annotations

from datetime import timedelta

import pytest

from episodic.aliases import entity_alias_learn
from episodic.extraction import coreferences
from episodic.selectors import passage_search_rows
from tenants.scope import tenant_scope
from tests.episodic.conftest import T0, item

SPEAKERS = ["Caroline", "Melanie"]


@pytest.mark.parametrize(
    ("text", "speaker", "speakers", "pairs"),
    [
        ("Hey Mel! Good to see you!", "Caroline", SPEAKERS, [("Mel", "Melanie")]),
        ("Thanks, Mel! Your backing means a lot.", "Caroline", SPEAKERS, [("Mel", "Melanie")]),
        ("I met Melanie (Mel) at the park.", None, [], [("Mel", "Melanie")]),
        ("Our stack runs on Amazon Web Services (AWS).", None, [], [("AWS", "Amazon Web Services")]),
        ("My boss Robert, aka Bob, signed it.", None, [], [("Bob", "Robert")]),
        ("Robert (aka Bob) signed it.", None, [], [("Bob", "Robert")]),
        ("Mel, short for Melanie, called.", None, [], [("Mel", "Melanie")]),
        ("Christopher, or Chris for short, is here.", None, [], [("Chris", "Christopher")]),
        ("You can call me Mel.", "Melanie", SPEAKERS, [("Mel", "Melanie")]),
        ("Alexander Smith joined. Later that day I told Alex about it.", None, [], [("Alex", "Alexander Smith")]),
        # What is not a second name of anything.
        ("Car trouble again today.", "Melanie", SPEAKERS, []),
        ("We flew to Paris (France) in May.", None, [], []),
        ("I visited California with Cal.", None, [], []),
        ("I love Mel Gibson films.", "Caroline", SPEAKERS, []),
        ("Call me tomorrow.", "Caroline", SPEAKERS, []),
        ("Mel here, Melanie was busy.", "Mel", ["Mel", "Melanie"], []),
        ("Thanks, Mel!", "Melanie", SPEAKERS, []),
    ],
)
def test_coreferences_a_turn_states(text, speaker, speakers, pairs) -> None:
    assert coreferences(text, speaker=speaker, speakers=speakers) == pairs


@pytest.mark.django_db
def test_episodes_written_after_an_alias_carry_the_canonical_name_too(api_a) -> None:
    api_a.post("/v1/entities/aliases", {"alias": "Mel", "entity": "Melanie"}, format="json")
    response = api_a.post(
        "/v1/episodes",
        {"episodes": [item("Thanks, Mel! See you Friday."), item("fine", entities=["Mel", "acme"])]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert [e["entities"] for e in response.json()["episodes"]] == [["mel", "melanie"], ["mel", "acme", "melanie"]]


@pytest.mark.django_db
def test_search_and_lists_match_an_entity_under_any_of_its_names(api_a, tenant_a) -> None:
    stored = api_a.post(
        "/v1/episodes",
        {
            "episodes": [
                item("Thanks, Mel! The pottery class sounds fun.", occurred_at=T0.isoformat()),
                item("The printer is jammed again.", occurred_at=(T0 + timedelta(minutes=1)).isoformat()),
            ]
        },
        format="json",
    ).json()["episodes"]
    assert stored[0]["entities"] == ["mel"]

    def overlap_of_the_mel_turn() -> float:
        tenant_a.refresh_from_db()  # as each request loads its tenant
        with tenant_scope(tenant_a):
            rows = passage_search_rows(tenant=tenant_a, query="What did Melanie say about the class?", subject="alice")
        return next(r.score_parts["overlap"] for r in rows if r.row.id == stored[0]["id"])

    assert overlap_of_the_mel_turn() == 0.0
    assert api_a.get("/v1/episodes", {"entity": "Melanie"}).json()["results"] == []
    api_a.post("/v1/entities/aliases", {"alias": "Mel", "entity": "Melanie"}, format="json")
    # Stored before the alias, the turn still counts for Melanie: the query's entity has both names.
    assert overlap_of_the_mel_turn() == 1.0
    listed = api_a.get("/v1/episodes", {"entity": "Melanie"}).json()["results"]
    assert [e["id"] for e in listed] == [stored[0]["id"]]
    searched = api_a.post("/v1/episodes/search", {"query": "pottery", "entity": "melanie"}, format="json").json()
    assert [r["id"] for r in searched["results"]] == [stored[0]["id"]]


@pytest.mark.django_db
def test_a_learned_alias_holds_for_its_subject_only(append, tenant_a) -> None:
    with tenant_scope(tenant_a):
        assert entity_alias_learn(tenant=tenant_a, alias="Mel", entity="Melanie", subject="alice") is not None
    mine, theirs = append(
        tenant_a,
        [item("Thanks, Mel!"), item("Thanks, Mel!", subject="bob", session="s-bob")],
    )
    assert mine.entities == ["mel", "melanie"]
    assert theirs.entities == ["mel"]
