"""POST /v1/episodes and episodes_append: validation, sessions, conflicts, idempotency, cost."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.tokens import count_tokens
from episodic.models import Episode, Session
from episodic.validation import content_hash
from tenants.scope import tenant_scope
from tests.episodic.conftest import T0, item, timeline

pytestmark = pytest.mark.django_db


def _count(tenant) -> int:
    with tenant_scope(tenant):
        return Episode.objects.for_tenant(tenant).count()


def test_batch_is_stored_with_ids_token_counts_hashes_and_a_new_session(api_a, tenant_a) -> None:
    body = {
        "episodes": [item("Caroline booked order #12345 to Lisbon.", external_id="e1"), item("ok", external_id="e2")]
    }
    response = api_a.post("/v1/episodes", body, format="json")
    assert response.status_code == 201, response.json()
    stored = response.json()["episodes"]
    assert response.json()["count"] == 2
    assert [e["external_id"] for e in stored] == ["e1", "e2"]
    assert stored[0]["token_count"] == count_tokens("Caroline booked order #12345 to Lisbon.")
    assert stored[0]["content_hash"] == content_hash("Caroline booked order #12345 to Lisbon.", {})
    assert stored[0]["entities"] == ["order-12345", "caroline", "lisbon"]
    with tenant_scope(tenant_a):
        session = Session.objects.for_tenant(tenant_a).get(external_id="s-1")
        assert session.subject == "alice"
        assert session.episode_count == 2
        assert session.last_event_at is not None


def test_given_entities_and_topics_are_normalised_not_extracted(api_a) -> None:
    body = {
        "episodes": [
            item("Paris is lovely", entities=["  ACME Corp ", "acme corp", "Bob"], topics=["Billing", " billing "])
        ]
    }
    stored = api_a.post("/v1/episodes", body, format="json").json()["episodes"][0]
    assert stored["entities"] == ["acme corp", "bob"]
    assert stored["topics"] == ["billing"]


def test_tenant_dictionaries_feed_extraction(api_a, tenant_a) -> None:
    tenant_a.settings = {"entity_dictionary": ["postgres"], "topic_dictionary": {"billing": ["invoice", "refund"]}}
    tenant_a.save(update_fields=["settings"])
    stored = api_a.post("/v1/episodes", {"episodes": [item("my invoice mentions postgres")]}, format="json").json()
    assert stored["episodes"][0]["entities"] == ["postgres"]
    assert stored["episodes"][0]["topics"] == ["billing"]


def test_session_counters_and_times_follow_the_events(append, tenant_a) -> None:
    append(tenant_a, timeline(3, start=T0))
    append(tenant_a, timeline(2, start=T0.replace(hour=9)))
    with tenant_scope(tenant_a):
        session = Session.objects.for_tenant(tenant_a).get(external_id="s-1")
    assert session.episode_count == 5
    assert session.started_at == T0.replace(hour=9)
    assert session.last_event_at == T0.replace(minute=2)


@pytest.mark.parametrize(
    ("episode", "pointer", "status"),
    [
        (item(kind="gossip"), "/episodes/0/kind", 400),
        (item(occurred_at="2024-05-01T12:00:00"), "/episodes/0/occurred_at", 400),
        (item(occurred_at="yesterday"), "/episodes/0/occurred_at", 400),
        (item(embedding=[0.1] * 12), "/episodes/0/embedding", 400),
        (item(embedding=[1e300] * 384), "/episodes/0/embedding", 400),
        (item(content="x" * 200_001), "/episodes/0/content", 413),
        (item(subject=""), "/episodes/0/subject", 400),
        (item(session=""), "/episodes/0/session", 400),
        (item(outcome="meh"), "/episodes/0/outcome", 400),
        (item(outcome_signal="high"), "/episodes/0/outcome_signal", 400),
        (item(entities="acme"), "/episodes/0/entities", 400),
        (item(payload=[1, 2]), "/episodes/0/payload", 400),
        (item(content=""), "/episodes/0/content", 400),
        (item(colour="blue"), "/episodes/0/colour", 400),
        (item(content="nul \x00 byte"), "/episodes/0/content", 400),
        (item(subject="a\x00b"), "/episodes/0/subject", 400),
        (item(entities=["ok", "x\x00"]), "/episodes/0/entities/1", 400),
        (item(payload={"k": "v\x00"}), "/episodes/0/payload/k", 400),
    ],
)
def test_bad_item_is_a_problem_naming_the_field_and_writes_nothing(api_a, tenant_a, episode, pointer, status) -> None:
    response = api_a.post("/v1/episodes", {"episodes": [item("fine"), episode]}, format="json")
    assert response.status_code == status, response.json()
    assert response["Content-Type"] == "application/problem+json"
    pointers = [e["pointer"] for e in response.json()["errors"]]
    assert pointer.replace("/0/", "/1/") in pointers
    assert _count(tenant_a) == 0
    with tenant_scope(tenant_a):
        assert not Session.objects.for_tenant(tenant_a).exists()


@pytest.mark.parametrize("size", [0, 1001])
def test_batch_size_is_1_to_1000(api_a, tenant_a, size) -> None:
    response = api_a.post("/v1/episodes", {"episodes": [item(f"e{i}") for i in range(size)]}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/episodes"
    assert _count(tenant_a) == 0


def test_body_must_be_an_episodes_envelope(api_a) -> None:
    assert api_a.post("/v1/episodes", [item()], format="json").json()["errors"][0]["pointer"] == "/"
    assert api_a.post("/v1/episodes", {"episode": [item()]}, format="json").json()["errors"][0]["pointer"] == "/episode"
    assert api_a.post("/v1/episodes", {}, format="json").json()["errors"][0]["pointer"] == "/episodes"


def test_session_of_another_subject_is_refused_and_nothing_written(api_a, append, tenant_a) -> None:
    append(tenant_a, [item(subject="alice")])
    response = api_a.post(
        "/v1/episodes", {"episodes": [item("new", session="s-2"), item(subject="bob")]}, format="json"
    )
    assert response.status_code == 400
    assert [e["pointer"] for e in response.json()["errors"]] == ["/episodes/1/session"]
    assert _count(tenant_a) == 1
    with tenant_scope(tenant_a):
        assert not Session.objects.for_tenant(tenant_a).filter(external_id="s-2").exists()


def test_new_session_with_two_subjects_in_one_batch_is_refused(api_a, tenant_a) -> None:
    response = api_a.post("/v1/episodes", {"episodes": [item(subject="alice"), item(subject="bob")]}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/episodes/1/session"
    assert _count(tenant_a) == 0


def test_repeated_external_id_in_a_batch_is_a_conflict(api_a, tenant_a) -> None:
    response = api_a.post(
        "/v1/episodes",
        {"episodes": [item(external_id="x"), item(external_id="y"), item(external_id="x")]},
        format="json",
    )
    assert response.status_code == 409
    assert response.json()["errors"][0]["pointer"] == "/episodes/2/external_id"
    assert _count(tenant_a) == 0


def test_external_id_already_stored_is_a_conflict_not_a_duplicate(api_a, append, tenant_a) -> None:
    append(tenant_a, [item(external_id="x")])
    response = api_a.post("/v1/episodes", {"episodes": [item(external_id="new"), item(external_id="x")]}, format="json")
    assert response.status_code == 409
    assert response.json()["errors"][0]["pointer"] == "/episodes/1/external_id"
    assert _count(tenant_a) == 1


def test_same_external_id_in_another_session_is_fine(append, tenant_a) -> None:
    append(tenant_a, [item(external_id="x"), item(external_id="x", session="s-2")])
    assert _count(tenant_a) == 2


def test_skip_existing_drops_stored_ones_for_imports(append, tenant_a) -> None:
    append(tenant_a, [item(external_id="a")])
    stored = append(tenant_a, [item(external_id="a"), item(external_id="b")], skip_existing=True)
    assert [e.external_id for e in stored] == ["b"]
    assert append(tenant_a, [item(external_id="a")], skip_existing=True) == []
    with tenant_scope(tenant_a):
        assert Session.objects.for_tenant(tenant_a).get(external_id="s-1").episode_count == 2


def test_idempotency_key_replays_the_first_answer(api_a, tenant_a) -> None:
    body = {"episodes": [item("once")]}
    first = api_a.post("/v1/episodes", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    again = api_a.post("/v1/episodes", body, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert _count(tenant_a) == 1
    other = api_a.post("/v1/episodes", {"episodes": [item("other")]}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
    assert other.status_code == 422
    assert _count(tenant_a) == 1


def test_client_embedding_is_kept(append, tenant_a) -> None:
    vector = [0.0] * 384
    vector[5] = 1.0
    [episode] = append(tenant_a, [item(embedding=vector)])
    with tenant_scope(tenant_a):
        stored = Episode.objects.for_tenant(tenant_a).get(pk=episode.pk)
    assert list(stored.embedding)[5] == 1.0


def test_batch_of_500_costs_a_fixed_number_of_queries(append, tenant_a) -> None:
    items = [item(f"turn {i}", session=f"s-{i % 7}", external_id=f"e{i}") for i in range(500)]
    with tenant_scope(tenant_a), CaptureQueriesContext(connection) as queries:
        from episodic.services import episodes_append

        episodes_append(tenant=tenant_a, items=items)
    # the subject's slot (tenants.locks: one statement, three the first time, which creates its row),
    # select sessions, insert the new ones, read them back, known external ids, insert, counters (plus
    # savepoints): independent of the batch size.
    statements = [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]
    assert len(statements) <= 8, statements
    assert _count(tenant_a) == 500


@pytest.mark.isolation("episode-list")
def test_episodes_written_by_one_tenant_are_invisible_to_another(api_a, api_b, append, tenant_a) -> None:
    append(tenant_a, [item("secret of A", external_id="x")])
    assert api_b.get("/v1/episodes").json()["results"] == []
    assert api_b.get("/v1/episodes", {"session": "s-1"}).json()["results"] == []
    # B may use the same session id and external id: sessions are per tenant.
    response = api_b.post(
        "/v1/episodes", {"episodes": [item("B's own", subject="bob", external_id="x")]}, format="json"
    )
    assert response.status_code == 201
    assert [e["content"] for e in api_a.get("/v1/episodes").json()["results"]] == ["secret of A"]


def test_a_concurrent_duplicate_caught_by_the_constraint_is_a_conflict(api_a, append, tenant_a, monkeypatch) -> None:
    append(tenant_a, [item(external_id="x")])
    # As if another request stored "x" between our check and our insert.
    monkeypatch.setattr("episodic.services._known_external_ids", lambda **kwargs: set())
    response = api_a.post("/v1/episodes", {"episodes": [item(external_id="x")]}, format="json")
    assert response.status_code == 409
    assert _count(tenant_a) == 1
