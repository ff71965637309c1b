"""A memory's stored vector is its text's, whatever it was written beside: with the default embedding
file (int8), written in one request with other events or alone, embedded in the request or by the
worker's drain, a passage gets the vector that its words get as a query, which is embedded alone."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from episodic.tasks import embed_backlog_for_tenant
from tests.embedders import using_embedder

pytestmark = pytest.mark.django_db

SAID = "I have been vegan since March."
# Other lengths than SAID's: a run of the model pads them to its longest.
BESIDE = [
    "Cats sleep most of the day.",
    "The printer on the second floor jams on tray two every morning, and nobody has called the vendor yet.",
    "ok",
]


@pytest.fixture
def default_embedder(settings: Any) -> Iterator[None]:
    """The product's embedder and file (the int8 one), exported by the set-up step if missing."""
    call_command("export_embedding_model", stdout=StringIO())
    with using_embedder(settings, "core.embedding.OnnxMiniLMEmbedder", fresh_vectors=True):
        yield


def _events(texts: list[str], session: str) -> list[dict[str, Any]]:
    event = {"subject": "ana", "session": session, "kind": "message", "role": "user"}
    return [{**event, "content": text, "external_id": f"{session}:{i}"} for i, text in enumerate(texts)]


def _vector_score(api: Any, query: str) -> float:
    body = api.post("/v1/context", {"subject": "ana", "query": query, "max_tokens": 1000}, format="json").json()
    (item,) = [i for i in body["layers"]["episodic"] if "vegan" in i["text"]]
    return float(item["score_parts"]["vector"])


def test_a_memory_written_beside_others_meets_its_own_words_as_one_written_alone(
    api_a, api_b, default_embedder
) -> None:
    # Tenant A writes it among other events (one request, embedded in it); tenant B writes it alone.
    assert api_a.post("/v1/episodes", {"episodes": _events([BESIDE[0], SAID, *BESIDE[1:]], "s-1")}, format="json").status_code == 201  # fmt: skip
    assert api_b.post("/v1/episodes", {"episodes": _events([SAID], "s-1")}, format="json").status_code == 201
    # A query of the very words: cosine 1 to the stored vector, in both tenants.
    assert _vector_score(api_b, SAID) == pytest.approx(1.0, abs=1e-5)
    assert _vector_score(api_a, SAID) == pytest.approx(1.0, abs=1e-5)
    # And any other query scores the two alike.
    assert _vector_score(api_a, "What do I eat?") == pytest.approx(_vector_score(api_b, "What do I eat?"), abs=1e-5)


def test_a_memory_embedded_by_the_worker_in_a_batch_meets_its_own_words(api_a, tenant_a, default_embedder) -> None:
    # More events than a write embeds in its request: the worker's drain embeds them, in batches.
    history = [f"Note {i}: the quarterly report needs another review of figure {i}." for i in range(40)]
    assert api_a.post("/v1/episodes", {"episodes": _events([*history, SAID], "s-1")}, format="json").status_code == 201
    embed_backlog_for_tenant.delay(str(tenant_a.id))
    assert _vector_score(api_a, SAID) == pytest.approx(1.0, abs=1e-5)
