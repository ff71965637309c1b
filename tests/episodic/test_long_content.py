"""A long tool output does not cost its batch: episode content is accepted up to
ENGRAM_MAX_EPISODE_CHARS (200,000 characters, docs/episodic.md), stored with its passages and found by
search like any other; only content past that limit is refused (413, naming the episode)."""

from __future__ import annotations

import random

import pytest
from django.conf import settings

from episodic.models import Episode
from tenants.scope import tenant_scope
from tests.episodic.conftest import item

pytestmark = pytest.mark.django_db


def _tool_output(chars: int) -> str:
    # Hex tokens, all different: the worst case for the text index (one lexeme per word).
    rng = random.Random(31)  # noqa: S311 - test data
    words: list[str] = []
    size = 0
    while size < chars:
        word = f"{rng.getrandbits(48):012x}"
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def test_a_long_tool_output_is_stored_with_the_rest_of_its_batch(api_a, tenant_a) -> None:
    long = _tool_output(settings.ENGRAM["MAX_EPISODE_CHARS"] - 40) + " the flux capacitor overheated"
    batch = [item(f"turn {i}", external_id=f"t{i}") for i in range(20)]
    batch.insert(10, item(long, kind="tool_result", role="tool", external_id="long"))
    response = api_a.post("/v1/episodes", {"episodes": batch}, format="json")
    assert response.status_code == 201, str(response.content[:500])
    assert response.json()["count"] == 21
    with tenant_scope(tenant_a):
        stored = Episode.objects.for_tenant(tenant_a).get(external_id="long")
        assert stored.content == long
        assert stored.passages.count() > 100
    found = api_a.post("/v1/episodes/search", {"query": "flux capacitor overheated"}, format="json")
    assert found.status_code == 200
    assert "long" in [r["external_id"] for r in found.json()["results"]][:3]


def test_content_past_the_episode_limit_is_a_413_naming_that_episode(api_a, tenant_a) -> None:
    limit = settings.ENGRAM["MAX_EPISODE_CHARS"]
    assert limit >= 200_000
    batch = [item("short"), item("x" * (limit + 1))]
    response = api_a.post("/v1/episodes", {"episodes": batch}, format="json")
    assert response.status_code == 413
    assert [e["pointer"] for e in response.json()["errors"]] == ["/episodes/1/content"]
