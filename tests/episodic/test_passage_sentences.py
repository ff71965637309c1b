"""The vectors of a passage's sentences, stored when the passage gets its own (the embedding drain and
the inline embedding of a small write), and by `manage.py backfill_passage_sentences` for passages
embedded before: history's pool reads the best sentence's cosine from them (docs/router.md). Only for a
tenant whose learned value may read them (`Tenant.keeps_sentence_vectors`): one that explores or has a
value model; the others pay neither the embedding nor the storage, and the embedding drain gives a tenant
that starts exploring the sentences of what it wrote before."""

from __future__ import annotations

import uuid
from io import StringIO
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection

from core.embedding import get_embedder
from episodic.models import Passage, PassageSentence, allow_episode_deletion
from episodic.passages import _sentences, passages_reembed
from episodic.tasks import embed_backlog
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.router.conftest import remember

pytestmark = pytest.mark.django_db

SEVERAL = (
    "We moved the billing service last spring. The spare key is under the blue flowerpot! "
    "Did anyone check the boathouse?"
)
ONE = "The printer on floor two jams when tray three is empty."


def _sentence_texts(content: str) -> list[str]:
    return [t for s, e in _sentences(content) if (t := content[s:e].strip())]


def _stored(tenant: Any) -> dict[str, list[tuple[int, list[float]]]]:
    """Each passage's content -> its stored sentences (position, vector), in order."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.content, s.position, s.embedding::text FROM episodic_passagesentence s"
            " JOIN episodic_passage p ON p.tenant_id = s.tenant_id AND p.id = s.passage_id"
            " ORDER BY p.id, s.position"
        )
        rows = cursor.fetchall()
    out: dict[str, list[tuple[int, list[float]]]] = {}
    for content, position, vector in rows:
        out.setdefault(content, []).append((position, [float(x) for x in vector.strip("[]").split(",")]))
    return out


@pytest.fixture
def tenant_a(tenant_a: Tenant) -> Tenant:
    """A tenant that explores: the one whose passages keep their sentences' vectors."""
    _explore(tenant_a, 0.1)
    return tenant_a


def _explore(tenant: Tenant, chance: float) -> None:
    tenant.settings = {**tenant.settings, "exploration": chance}
    tenant.save(update_fields=["settings"])


def _write(api: Any, texts: list[str], capture: Any) -> None:
    items = [
        {"subject": "alice", "session": "s-1", "kind": "message", "role": "user", "content": text} for text in texts
    ]
    with capture(execute=True):
        response = api.post("/v1/episodes", {"episodes": items}, format="json")
    assert response.status_code == 201, response.content


def _check(stored: dict[str, list[tuple[int, list[float]]]]) -> None:
    assert ONE not in stored  # one sentence: the passage's own vector is its sentence's
    texts = _sentence_texts(SEVERAL)
    assert len(texts) == 3
    assert [p for p, _ in stored[SEVERAL]] == [0, 1, 2]
    expected = get_embedder().embed(texts)
    assert np.allclose(np.array([v for _, v in stored[SEVERAL]]), expected, atol=1e-6)


def test_a_write_through_the_api_stores_the_vector_of_each_sentence_of_a_passage_of_several(
    tenant_a, api_a, django_capture_on_commit_callbacks
) -> None:
    _write(api_a, [SEVERAL, ONE], django_capture_on_commit_callbacks)
    # A small write is embedded in its request (read-your-writes): its sentences with it.
    _check(_stored(tenant_a))


def test_the_embedding_drain_stores_the_sentences_of_the_passages_it_embeds(tenant_a) -> None:
    remember(tenant_a, [SEVERAL, ONE])
    _check(_stored(tenant_a))


def test_the_backfill_gives_passages_embedded_before_their_sentences_once(tenant_a, capsys) -> None:
    remember(tenant_a, [SEVERAL, ONE, f"{ONE} {SEVERAL}"])
    # As stored before sentence vectors existed.
    with tenant_scope(tenant_a), allow_episode_deletion():
        PassageSentence.objects.all().delete()
        Passage.objects.update(sentence_count=None)
    assert _stored(tenant_a) == {}
    out = StringIO()
    call_command("backfill_passage_sentences", tenant=tenant_a.slug, batch=2, stdout=out)
    text = out.getvalue()
    assert "3 of 3 passages looked at: 2 of several sentences, 7 sentence vectors" in text, text
    assert "3/3" in capsys.readouterr().err  # the progress bar
    stored = _stored(tenant_a)
    _check(stored)
    assert len(stored[f"{ONE} {SEVERAL}"]) == 4
    out = StringIO()
    call_command("backfill_passage_sentences", tenant=tenant_a.slug, stdout=out)
    assert "every passage has its sentence vectors" in out.getvalue()
    assert _stored(tenant_a) == stored


def test_a_change_of_embedder_embeds_the_sentences_again_in_place(tenant_a) -> None:
    remember(tenant_a, [SEVERAL, ONE])
    with tenant_scope(tenant_a), allow_episode_deletion():
        PassageSentence.objects.update(embedding=[0.5] * 384)
    passages_reembed(tenant=tenant_a)
    _check(_stored(tenant_a))


def test_a_tenant_that_neither_explores_nor_has_a_model_keeps_no_sentence_vectors(
    tenant_a, api_a, django_capture_on_commit_callbacks
) -> None:
    _explore(tenant_a, 0.0)
    _write(api_a, [SEVERAL, ONE], django_capture_on_commit_callbacks)
    assert _stored(tenant_a) == {}
    with tenant_scope(tenant_a):
        passages = list(Passage.objects.values_list("embedding", "sentence_count"))
    assert passages and all(v is not None and n is None for v, n in passages), "embedded, sentences not looked at"
    response = api_a.post("/v1/context", {"subject": "alice", "query": "where is the spare key?"}, format="json")
    assert response.status_code == 200
    assert any("flowerpot" in item["text"] for item in response.json()["layers"]["episodic"])


def test_the_embedding_drain_gives_a_tenant_that_starts_exploring_the_sentences_of_what_it_wrote(
    tenant_a, api_a, django_capture_on_commit_callbacks
) -> None:
    _explore(tenant_a, 0.0)
    _write(api_a, [SEVERAL, ONE], django_capture_on_commit_callbacks)
    assert embed_backlog() == 0, "nothing waits for a tenant that reads no sentences"
    _explore(tenant_a, 0.1)
    assert embed_backlog() == 1
    _check(_stored(tenant_a))
    with tenant_scope(tenant_a):
        assert not Passage.objects.filter(sentence_count__isnull=True).exists()
    assert embed_backlog() == 0


def test_a_tenant_with_a_value_model_keeps_sentence_vectors(
    tenant_a, api_a, django_capture_on_commit_callbacks
) -> None:
    _explore(tenant_a, 0.0)
    tenant_a.trial_value_model = uuid.uuid4()
    tenant_a.save(update_fields=["trial_value_model"])
    _write(api_a, [SEVERAL, ONE], django_capture_on_commit_callbacks)
    _check(_stored(tenant_a))


def test_a_change_of_embedder_keeps_current_the_sentences_a_tenant_no_longer_adds_to(tenant_a) -> None:
    remember(tenant_a, [SEVERAL])
    _explore(tenant_a, 0.0)
    remember(tenant_a, [ONE], session="s-2")
    with tenant_scope(tenant_a), allow_episode_deletion():
        PassageSentence.objects.update(embedding=[0.5] * 384)
    passages_reembed(tenant=tenant_a)
    _check(_stored(tenant_a))  # vectors of the old file would never compare with the new ones
    with tenant_scope(tenant_a):
        counts = dict(Passage.objects.values_list("content", "sentence_count"))
    assert counts == {SEVERAL: 3, ONE: None}, "a passage written while it kept none stays not looked at"


def test_a_tenant_set_to_keep_sentence_vectors_keeps_them_before_it_explores(
    tenant_a, api_a, django_capture_on_commit_callbacks
) -> None:
    tenant_a.settings = {**tenant_a.settings, "exploration": 0.0, "sentence_vectors": True}
    tenant_a.save(update_fields=["settings"])
    _write(api_a, [SEVERAL, ONE], django_capture_on_commit_callbacks)
    _check(_stored(tenant_a))
