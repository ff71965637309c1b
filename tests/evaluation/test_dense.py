"""The dense tenant of the 1M benchmark (evaluation.dense): its rows are the write path's, its shape the one asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from core.embedding import get_embedder
from episodic.models import Episode, Passage, Session
from evaluation.dense import DenseShape, dense_plan, dense_statements, dense_texts_to_embed, dense_write, locomo_sources
from semantic.models import Fact, FactSource
from tenants.scope import tenant_scope
from tests.router.conftest import remember

pytestmark = pytest.mark.django_db

LONG = " ".join(
    f"Sentence {i} says that the garden behind the old library needed {i} more tulips before spring." for i in range(20)
)


def _conversation(sample_id: str, a: str, b: str, topic: str) -> dict[str, Any]:
    conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for n in (1, 2):
        conv[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
        conv[f"session_{n}"] = [
            {"speaker": a, "dia_id": f"D{n}:1", "text": f"I went {topic} with my sister on day {n}."},
            {"speaker": b, "dia_id": f"D{n}:2", "text": f"How was the {topic} trip?", "blip_caption": "a lake"},
            {"speaker": a, "dia_id": f"D{n}:3", "text": LONG if n == 2 else f"Great, the {topic} was calm."},
        ]
    return {
        "sample_id": sample_id,
        "conversation": conv,
        "session_summary": {f"session_{n}_summary": f"{a} told {b} about {topic} on day {n}." for n in (1, 2)},
        "observation": {
            f"session_{n}_observation": {
                a: [[f"{a} went {topic} on day {n}.", f"D{n}:1"]],
                b: [[f"{b} asked ({n}).", f"D{n}:2"]],
            }
            for n in (1, 2)
        },
        "qa": [],
    }


@pytest.fixture
def sources(tmp_path: Path) -> Any:
    path = tmp_path / "locomo.json"
    path.write_text(
        json.dumps([_conversation("c-1", "Ann", "Bo", "kayaking"), _conversation("c-2", "Cy", "Di", "skiing")])
    )
    return locomo_sources(path)


def _write(tenant: Any, sources: Any, shape: DenseShape) -> dict[str, int]:
    plans, texts = dense_plan(tenant=tenant, sources=sources, shape=shape)
    wanted = dense_texts_to_embed(texts) + dense_statements(plans)
    vectors = dict(zip(wanted, get_embedder().embed(wanted), strict=True))
    with tenant_scope(tenant), connection.cursor() as cursor:
        return dense_write(cursor=cursor.cursor, tenant=tenant, plans=plans, vectors=vectors)


def test_dense_subjects_hold_the_asked_passages_and_facts_own_conversation_last(tenant_a, sources) -> None:
    written = _write(tenant_a, sources, DenseShape(subjects=3, passages=25, facts=3))
    with tenant_scope(tenant_a):
        per_subject = {s: Passage.objects.filter(subject=s).count() for s in ("c-1.k0", "c-2.k1", "c-1.k2")}
        assert per_subject == {"c-1.k0": 25, "c-2.k1": 25, "c-1.k2": 25}
        assert Passage.objects.count() == written["passages"] == 75
        assert Fact.objects.filter(subject="c-2.k1").count() == 3 == written["facts"] // 3
        # Its own conversation comes last in time, after the other's sessions.
        newest = Episode.objects.filter(subject="c-2.k1").order_by("-occurred_at", "-id").first()
        assert newest is not None and newest.session.external_id == "c-2.k1:session_2"
        assert newest.content == "Cy told Di about skiing on day 2." and newest.kind == "summary"
        own = Fact.objects.filter(subject="c-2.k1", statement="Cy went skiing on day 1.").get()
        source = FactSource.objects.get(fact=own).episode
        assert source.external_id == "D1:1" and source.subject == "c-2.k1" and "skiing" in source.content
        assert Session.objects.get(external_id="c-1.k0:session_1").summary == "Ann told Bo about kayaking on day 1."
        assert Passage.objects.filter(subject="c-1.k0", summary=True).count() >= 2
        ids = list(
            Passage.objects.filter(subject="c-1.k0")
            .order_by("occurred_at", "episode_id", "position")
            .values_list("id", flat=True)
        )
        assert ids == sorted(ids)


def test_dense_rows_are_what_the_write_path_stores(tenant_a, sources) -> None:
    _write(tenant_a, sources, DenseShape(subjects=2, passages=30, facts=2))
    remember(tenant_a, [("Ann", LONG), ("Bo", "How was the kayaking trip? [shares a photo: a lake]")], subject="w")
    columns = ("position", "char_start", "char_end", "last", "content", "token_count", "line", "line_tokens",
               "index_terms", "entities", "topics")  # fmt: skip
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        for text in (LONG, "How was the kayaking trip? [shares a photo: a lake]"):
            written = Episode.objects.get(subject="w", content=text)
            seeded = Episode.objects.filter(subject="c-1.k0", content=text, role=written.role).order_by("id").first()
            assert seeded is not None
            for name in ("kind", "role", "token_count", "content_hash", "entities", "topics"):
                assert getattr(seeded, name) == getattr(written, name), name
            mine = list(Passage.objects.filter(episode=seeded).order_by("position").values_list(*columns))
            theirs = list(Passage.objects.filter(episode=written).order_by("position").values_list(*columns))
            assert mine == theirs and (len(mine) > 1) == (text == LONG)
            for passage in Passage.objects.filter(episode=seeded):
                twin = Passage.objects.get(episode=written, position=passage.position)
                assert np.allclose(passage.embedding, twin.embedding, atol=1e-6)
                cursor.execute(
                    "SELECT a.search_vector = b.search_vector, a.embedding_code = b.embedding_code "
                    "FROM episodic_passage a, episodic_passage b WHERE a.id = %s AND b.id = %s",
                    [passage.id, twin.id],
                )
                assert cursor.fetchone() == (True, True)
            # An episode's vector is the mean of its passages'.
            mean = np.mean([p.embedding for p in Passage.objects.filter(episode=seeded)], axis=0)
            assert np.allclose(seeded.embedding, mean, atol=1e-6)


def test_a_dense_subject_answers_a_question_from_its_own_conversation(tenant_a, api_a, sources) -> None:
    _write(tenant_a, sources, DenseShape(subjects=2, passages=25, facts=2))
    response = api_a.post(
        "/v1/context",
        {"subject": "c-2.k1", "query": "Who went skiing with a sister?", "max_tokens": 400},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert "skiing with my sister" in body["prompt"]
    assert "c-1.k0" not in json.dumps(body)
