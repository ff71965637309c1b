"""Searched rows stay whole in their heap page (core.embedding.keep_vectors_inline): an exact vector
scan and the full-text ranking read their values from the row, not through TOAST."""

from __future__ import annotations

import pytest
from django.db import connection

from episodic.models import Episode, Passage
from semantic.models import Fact
from tenants.scope import tenant_scope
from tests.router.conftest import believe, remember

pytestmark = pytest.mark.django_db

TABLES = ("episodic_episode", "episodic_passage", "semantic_fact")


def _toasted_bytes(table: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = %s AND reltoastrelid <> 0", [table]
        )
        return int(cursor.fetchone()[0])


@pytest.mark.parametrize("table", TABLES)
def test_the_vector_column_is_kept_in_the_row(table: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT a.attstorage, c.reloptions FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE c.relname = %s AND a.attname = 'embedding'",
            [table],
        )
        storage, options = cursor.fetchone()
    assert storage == "m"
    assert "toast_tuple_target=4080" in options


def test_an_embedded_episode_its_passage_and_a_fact_of_ordinary_length_are_not_toasted(tenant_a) -> None:
    before = {table: _toasted_bytes(table) for table in TABLES}
    # About 600 characters each: with a 1,544-byte vector and a tsvector the row is well over 2 kB.
    words = "the invoice export for the enterprise plan failed again after the migration to the new region "
    episodes = remember(tenant_a, [words * 6, (words * 6).upper()])
    believe(tenant_a, attribute="note", value="x", statement=(words * 6).strip(), sources=episodes[:1])
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).filter(embedding__isnull=False).count() == 2
        assert Passage.objects.for_tenant(tenant_a).filter(embedding__isnull=False).count() == 2
        fact = Fact.objects.for_tenant(tenant_a).get()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_column_size(f.*) FROM semantic_fact f WHERE id = %s", [fact.id])
            # Whole in its row: vector, statement and tsvector (a toasted row would be ~2,032 bytes).
            assert cursor.fetchone()[0] > 2100
    assert {table: _toasted_bytes(table) for table in TABLES} == before
