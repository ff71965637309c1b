"""Read-your-writes: a small write through the API is embedded before it is acknowledged, so it is found
by meaning at once, even behind an import that waits in the backlog; a bulk write waits for the worker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from episodic.models import Passage
from tenants.scope import tenant_scope
from tests.embedders import using_embedder

pytestmark = pytest.mark.django_db


def _episode(content: str, i: int, session: str = "s-1") -> dict[str, Any]:
    return {"subject": "ana", "session": session, "kind": "message", "role": "user", "content": content,
            "external_id": f"{session}:{i}"}  # fmt: skip


@pytest.fixture
def minilm(settings: Any) -> Iterator[None]:
    with using_embedder(settings, "core.embedding.MiniLMEmbedder"):
        yield


def _pending(tenant) -> int:
    with tenant_scope(tenant):
        return Passage.objects.for_tenant(tenant).filter(embedding__isnull=True).count()


def test_a_memory_is_found_by_meaning_as_soon_as_it_is_written_behind_an_import(api_a, tenant_a, minilm) -> None:
    # An import of 200 events: more than a small write, so it waits for the worker.
    history = [_episode(f"Note {i}: the quarterly report needs another review of figure {i}.", i) for i in range(200)]
    assert api_a.post("/v1/episodes", {"episodes": history}, format="json").status_code == 201
    assert _pending(tenant_a) == 200
    said = _episode("My daughter starts kindergarten in Porto next September.", 0, session="s-2")
    assert api_a.post("/v1/episodes", {"episodes": [said]}, format="json").status_code == 201
    assert _pending(tenant_a) == 200
    # No word in common with the memory: only its meaning finds it; no session named.
    body = api_a.post(
        "/v1/context",
        {"subject": "ana", "query": "When does the child begin school?", "max_tokens": 1000},
        format="json",
    ).json()
    assert "kindergarten" in body["prompt"]
    (item,) = [i for i in body["layers"]["episodic"] if "kindergarten" in i["text"]]
    assert item["score_parts"]["vector"] > 0.3 and item["score_parts"]["text"] == 0


def test_the_inline_limit_is_a_setting_and_a_failing_embedder_loses_nothing(
    api_a, tenant_a, settings, monkeypatch
) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "INLINE_EMBED_MAX_PASSAGES": 2}
    three = [_episode(f"event {i}", i) for i in range(3)]
    assert api_a.post("/v1/episodes", {"episodes": three}, format="json").status_code == 201
    assert _pending(tenant_a) == 3
    two = [_episode(f"event {i}", i, session="s-2") for i in range(2)]
    assert api_a.post("/v1/episodes", {"episodes": two}, format="json").status_code == 201
    assert _pending(tenant_a) == 3

    class Broken:
        def embed(self, texts: Any) -> Any:
            raise RuntimeError("model unavailable")

    monkeypatch.setattr("episodic.passages.get_embedder", lambda: Broken())
    one = [_episode("the write stands", 0, session="s-3")]
    response = api_a.post("/v1/episodes", {"episodes": one}, format="json")
    assert response.status_code == 201
    assert _pending(tenant_a) == 4
    detail = api_a.get("/v1/sessions/s-3").json()
    assert detail["counts"]["pending_embeddings"] == 1


def test_without_a_session_the_subjects_latest_events_are_offered(api_a, tenant_a) -> None:
    said = _episode("I prefer answers in Portuguese.", 0, session="mcp-1")
    assert api_a.post("/v1/episodes", {"episodes": [said]}, format="json").status_code == 201
    other = dict(_episode("Someone else's note.", 0, session="b-1"), subject="bob")
    assert api_a.post("/v1/episodes", {"episodes": [other]}, format="json").status_code == 201
    body = api_a.post("/v1/context", {"subject": "ana", "max_tokens": 800}, format="json").json()
    assert "Portuguese" in body["prompt"] and "Someone else" not in body["prompt"]
    (item,) = body["layers"]["episodic"]
    assert item["score_parts"] == {"latest_rank": 0.0}
    # Named by a session, the request gets that session's events instead.
    body = api_a.post("/v1/context", {"subject": "ana", "session": "other", "max_tokens": 800}, format="json").json()
    assert body["layers"]["episodic"] == []
