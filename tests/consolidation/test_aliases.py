"""Aliases learned by consolidation, through the API: a conversation says "Mel" to Melanie, the session
ends, and the alias appears, marked learned and the subject's; the subject's facts about Mel join
Melanie's; an operator's alias of the same name wins."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

TURNS = [
    ("Caroline", "Hey Mel! Good to see you! How have you been?"),
    ("Melanie", "I painted a lake sunrise last week. It was so relaxing."),
    ("Caroline", "That sounds lovely, Mel. I went to a support group yesterday."),
]


def _converse(api, subject: str, session: str, turns=TURNS) -> None:
    episodes = [
        {"subject": subject, "session": session, "kind": "message", "role": role, "content": text}
        for role, text in turns
    ]
    assert api.post("/v1/episodes", {"episodes": episodes}, format="json").status_code == 201


def _end(api, session: str, capture) -> None:
    with capture(execute=True):
        assert api.post(f"/v1/sessions/{session}/end", {}, format="json").status_code == 200


def test_a_nickname_said_to_a_speaker_is_learned_for_the_subject(api_a, django_capture_on_commit_callbacks) -> None:
    # Written before the alias exists: a fact of this subject about "Mel".
    early = api_a.post(
        "/v1/facts",
        {"subject": "conv-1", "entity": "Mel", "attribute": "pets", "value": "a dog", "statement": "Mel has a dog."},
        format="json",
    ).json()["fact"]
    _converse(api_a, "conv-1", "conv-1-s1")
    _end(api_a, "conv-1-s1", django_capture_on_commit_callbacks)

    [alias] = api_a.get("/v1/entities/aliases").json()["results"]
    assert (alias["alias"], alias["entity"], alias["source"], alias["subject"]) == (
        "mel",
        "melanie",
        "learned",
        "conv-1",
    )
    assert alias["source_episode_id"] is not None
    melanie = {(f["attribute"], f["value"]) for f in api_a.get("/v1/facts", {"entity": "Mel"}).json()["results"]}
    assert ("pets", "a dog") in melanie
    assert api_a.get(f"/v1/facts/{early['id']}").json()["status"] == "retracted"


def test_an_operators_alias_wins_over_the_learned_one(api_a, django_capture_on_commit_callbacks) -> None:
    _converse(api_a, "conv-1", "conv-1-s1")
    _end(api_a, "conv-1-s1", django_capture_on_commit_callbacks)
    assert api_a.post("/v1/entities/aliases", {"alias": "Mel", "entity": "Melvin"}, format="json").status_code == 201
    _converse(api_a, "conv-1", "conv-1-s2", [("Caroline", "Mel, short for Melissa, is my cousin.")])
    _end(api_a, "conv-1-s2", django_capture_on_commit_callbacks)
    rows = {(a["entity"], a["source"]) for a in api_a.get("/v1/entities/aliases", {"alias": "mel"}).json()["results"]}
    # The learned alias is not replaced by a later learned one, and the operator's holds over both.
    assert rows == {("melanie", "learned"), ("melvin", "operator")}
    written = api_a.post(
        "/v1/facts",
        {"subject": "conv-1", "entity": "Mel", "attribute": "city", "value": "Oslo", "statement": "Mel is in Oslo."},
        format="json",
    ).json()["fact"]
    assert written["entity"] == "melvin"
