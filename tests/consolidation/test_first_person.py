"""Self-disclosure on real conversations: first person in, third-person dated facts out, no fragments."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.first_person import disclose, is_fragment, resolve_dates
from consolidation.extractors.rules import RuleBasedExtractor, extract_from_text
from episodic.models import Episode
from tenants.models import Tenant

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def _extract(*turns: tuple[str, str]) -> list[tuple[str, str, str, str]]:
    episodes = [
        Episode(id=i, subject="conv", kind="message", role=role, content=text, occurred_at=SAID)
        for i, (role, text) in enumerate(turns, start=1)
    ]
    result = RuleBasedExtractor().extract(tenant=Tenant(name="t", slug="t"), subject="conv", episodes=episodes)
    return [(c.entity, c.attribute, c.category, c.statement) for c in result.candidates]


def test_a_named_speakers_experience_becomes_a_dated_third_person_fact() -> None:
    assert _extract(("Caroline", "Hey Mel! I went to a support group yesterday and it was so powerful.")) == [
        ("Caroline", "experiences", "other", "Caroline went to a support group on 7 May 2023.")
    ]


@pytest.mark.parametrize(
    ("text", "attribute", "category", "statement"),
    [
        ("I'm planning a camping trip with my kids next month.", "plans", "other",
         "Caroline is planning a camping trip with their kids in June 2023."),
        ("I really love painting landscapes after work.", "preferences", "preferences",
         "Caroline really loves painting landscapes after work."),
        ("My husband and I adopted a puppy named Luna last week.", "relations", "other",
         "Caroline and their husband adopted a puppy named Luna the week before 8 May 2023."),
        ("Gonna continue my studies and look for counseling jobs.", "plans", "business_context",
         "Caroline is going to continue their studies and look for counseling jobs."),
        ("I have a vintage guitar collection at home.", "possessions", "other",
         "Caroline has a vintage guitar collection at home."),
    ],
)  # fmt: skip
def test_plans_preferences_relations_and_possessions_are_categorised(
    text: str, attribute: str, category: str, statement: str
) -> None:
    [found] = disclose(text, name="Caroline", said_at=SAID)
    assert (found.attribute, found.category, found.statement) == (attribute, category, statement)
    assert 0 < found.confidence <= 1 and found.value in statement


@pytest.mark.parametrize(
    "text",
    [
        "How have you been?",
        "I'm so happy for you!",
        "Your painting is lovely and I love the colors you used.",
        "I don't remember what it's called.",
        "I loved it.",
        "We went there last summer.",
        "I agree.",
        "If I had more time I would paint every day.",
        "Yes.",
    ],
)
def test_questions_small_talk_replies_to_the_listener_negations_and_pointers_state_nothing(text: str) -> None:
    assert disclose(text, name="Caroline", said_at=SAID) == []


@pytest.mark.parametrize(
    "text",
    [
        "I'll definitely keep that in mind.",
        "Thanks, I'll make sure to have a safe trip!",
        "We'll have a great time on our hike!",
        "I will definitely stay in touch.",
    ],
)
def test_a_promise_or_prediction_to_the_listener_is_not_a_fact(text: str) -> None:
    assert disclose(text, name="Caroline", said_at=SAID) == []


@pytest.mark.parametrize(
    ("text", "statement"),
    [
        ("I'll always remember our camping trip last year.", "Caroline will always remember their camping trip in 2022."),
        ("We'll be discussing education and school upgrades.", "Caroline will be discussing education and school upgrades."),
    ],
)  # fmt: skip
def test_a_lasting_attitude_or_a_scheduled_activity_in_the_future_is_kept(text: str, statement: str) -> None:
    assert [d.statement for d in disclose(text, name="Caroline", said_at=SAID)] == [statement]


@pytest.mark.parametrize(
    "text", ["Been a while since we talked.", "Been a busy week since we talked.", "Gonna be a big change."]
)
def test_a_left_out_dummy_it_is_not_read_as_the_speaker(text: str) -> None:
    assert disclose(text, name="Caroline", said_at=SAID) == []


def test_a_left_out_i_is_still_read_as_the_speaker() -> None:
    [found] = disclose("Been super busy at work lately.", name="Caroline", said_at=SAID)
    assert found.statement == "Caroline has been super busy at work lately."


def test_the_agents_side_of_a_conversation_states_nothing_about_the_subject() -> None:
    assert _extract(("assistant", "I went to the documentation and I found the answer.")) == []


def test_a_user_role_speaks_for_the_subject() -> None:
    [(entity, _, _, statement)] = _extract(("user", "I started learning Rust three weeks ago."))
    assert entity == "conv" and statement == "conv started learning Rust around 17 April 2023."


@pytest.mark.parametrize(
    ("text", "noise"),
    [
        ("The tools we use want more memory.", ("uses", "want more memory")),
        ("Honestly I like (13) of them.", ("likes", "13)")),
        ("Our newsletter reached over 500 readers.", ("contact_preference", "500 readers")),
        ("I prefer its simplicity.", ("prefers", "its simplicity")),
    ],
)
def test_fragments_are_never_values(text: str, noise: tuple[str, str]) -> None:
    assert noise not in {(f.attribute, f.value) for f in extract_from_text(text, "u1")}


@pytest.mark.parametrize("value", ["want", "13)", "500 readers", "its simplicity", "that", "12", "go to the"])
def test_is_fragment_rejects_what_cannot_stand_alone(value: str) -> None:
    assert is_fragment(value)


@pytest.mark.parametrize("value", ["PostgreSQL 16", "Django", "a vintage guitar collection", "Ubuntu 22.04"])
def test_is_fragment_keeps_named_things(value: str) -> None:
    assert not is_fragment(value)


def test_relative_dates_resolve_against_when_they_were_said() -> None:
    assert resolve_dates("yesterday, last Saturday, last year, two weeks ago, next month", SAID) == (
        "on 7 May 2023, on 6 May 2023, in 2022, around 24 April 2023, in June 2023"
    )


def test_a_later_statement_that_the_database_is_now_another_version_is_extracted() -> None:
    [fact] = extract_from_text("We upgraded: the database is now PostgreSQL 17.", "u1")
    assert (fact.attribute, fact.value, fact.cardinality) == ("database", "PostgreSQL 17", "single")
    assert extract_from_text("The database is slow today.", "u1") == []


@pytest.mark.django_db
def test_the_newer_database_version_supersedes_the_older_through_the_api(
    api_a, django_capture_on_commit_callbacks
) -> None:
    for session, text in [
        ("s1", "Our database is PostgreSQL 16 and we deploy on AWS eu-west-1."),
        ("s2", "We upgraded: the database is now PostgreSQL 17."),
    ]:
        episode = {"subject": "u1", "session": session, "kind": "message", "role": "user", "content": text}
        assert api_a.post("/v1/episodes", {"episodes": [episode]}, format="json").status_code == 201
        with django_capture_on_commit_callbacks(execute=True):
            assert api_a.post(f"/v1/sessions/{session}/end", {}, format="json").status_code == 200
    facts = api_a.get("/v1/facts", {"attribute": "database", "status": "any"}).json()["results"]
    assert sorted((f["value"], f["status"]) for f in facts) == [
        ("PostgreSQL 16", "superseded"),
        ("PostgreSQL 17", "active"),
    ]
    context = api_a.post(
        "/v1/context",
        {"subject": "u1", "query": "Which database version do they run?", "max_tokens": 500},
        format="json",
    ).json()
    # The newer version comes first, as the fact or as the turn that told it (a source line worth more
    # than its fact is served as itself); the older one is never served ahead of it.
    lines = [line for line in context["prompt"].splitlines() if "PostgreSQL" in line]
    assert lines and "PostgreSQL 17" in lines[0], context["prompt"]
