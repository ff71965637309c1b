"""`manage.py reembed`: after a change of embedding file, every stored vector (passages, the episodes
they make up, facts, procedure triggers) is today's embedder's vector of its text; the backlog and
other tenants are left alone; a second run changes nothing."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command

from core.embedding import EMBEDDING_DIM, get_embedder
from episodic.models import Episode, Passage
from episodic.tasks import embed_pending
from procedural.models import Procedure
from semantic.models import Fact
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.consolidation.conftest import make_episode, make_session
from tests.factories.procedural import ProcedureFactory
from tests.factories.semantic import FactFactory

pytestmark = pytest.mark.django_db

# What an older embedding file left: one vector for every text.
OLD = [1.0] + [0.0] * (EMBEDDING_DIM - 1)
LONG = " ".join(f"Sentence {i} of the deployment notes says which host runs the nightly backup job." for i in range(30))


def _seed(tenant: Tenant) -> Episode:
    session = make_session(tenant, "s1", ended=True)
    make_episode(tenant, session, "We moved the staging database to PostgreSQL 16 last week.")
    long = make_episode(tenant, session, LONG)
    embed_pending(tenant=tenant)
    # A write the drain has not reached yet: the backlog's, not the command's.
    make_episode(tenant, session, "The backup job still runs on the old host.")
    with tenant_scope(tenant):
        FactFactory(tenant=tenant, statement="The user's  database is PostgreSQL 16.", embedding=OLD)
        ProcedureFactory(tenant=tenant, trigger_text="deploy to production", trigger_embedding=OLD)
        Passage.objects.for_tenant(tenant).filter(embedding__isnull=False).update(embedding=OLD)
        Episode.objects.for_tenant(tenant).filter(embedding__isnull=False).update(embedding=OLD)
    return long


def _vectors(tenant: Tenant) -> dict[str, list[tuple[Any, Any]]]:
    with tenant_scope(tenant):
        return {
            "passages": list(Passage.objects.for_tenant(tenant).order_by("id").values_list("content", "embedding")),
            "episodes": list(Episode.objects.for_tenant(tenant).order_by("id").values_list("id", "embedding")),
            "facts": list(Fact.objects.for_tenant(tenant).values_list("statement", "embedding")),
            "procedures": list(Procedure.objects.for_tenant(tenant).values_list("trigger_text", "trigger_embedding")),
        }


def _embed(text: str) -> np.ndarray:
    return np.asarray(get_embedder().embed([text])[0])


def test_every_stored_vector_is_embedded_again_and_the_backlog_is_left_to_the_drain(
    tenant_a: Tenant, tenant_b: Tenant
) -> None:
    long = _seed(tenant_a)
    _seed(tenant_b)
    out = io.StringIO()
    call_command("reembed", "--tenant", tenant_a.slug, "--batch", "2", "--no-progress", stdout=out)

    got = _vectors(tenant_a)
    waiting = [text for text, vector in got["passages"] if vector is None]
    assert waiting == ["The backup job still runs on the old host."]
    done = [(text, vector) for text, vector in got["passages"] if vector is not None]
    assert len(done) > 2  # the long episode is several passages, over several batches
    for text, vector in done:
        assert np.allclose(vector, _embed(str(text)), atol=1e-6), text
    with tenant_scope(tenant_a):
        parts = [
            np.asarray(v)
            for v in Passage.objects.for_tenant(tenant_a).filter(episode=long).values_list("embedding", flat=True)
        ]
    assert len(parts) > 1
    episodes = dict(got["episodes"])
    assert np.allclose(episodes[long.id], np.mean(parts, axis=0), atol=1e-6)
    assert sum(vector is None for vector in episodes.values()) == 1
    ((statement, fact_vector),) = got["facts"]
    assert np.allclose(fact_vector, _embed(" ".join(str(statement).split())), atol=1e-6)
    ((trigger, procedure_vector),) = got["procedures"]
    assert np.allclose(procedure_vector, _embed(str(trigger)), atol=1e-6)
    assert (
        f"{tenant_a.slug}: {len(done)} passages (and their episodes), 1 facts, 1 procedure triggers" in out.getvalue()
    )

    # The other tenant keeps its vectors until it is named (or --all).
    other = _vectors(tenant_b)
    assert all(np.allclose(v, OLD) for rows in other.values() for _, v in rows if v is not None)

    # Idempotent: a second run writes the same vectors.
    call_command("reembed", "--tenant", tenant_a.slug, "--no-progress", stdout=io.StringIO())
    again = _vectors(tenant_a)
    for label, rows in got.items():
        for (_, before), (_, after) in zip(rows, again[label], strict=True):
            assert (before is None and after is None) or np.allclose(before, after, atol=1e-6), label
