"""pgvector correctness: a filtered HNSW search returns k rows when k rows match, on a custom plan."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import numpy as np
import psycopg
import pytest
from django.db import connection, transaction

from core.embedding import embed_one
from semantic.models import Fact, FactStatus
from semantic.normalise import value_key
from semantic.selectors import configure_vector_scan, fact_search, fact_search_rows, search_sql
from tenants.scope import tenant_scope
from tests.owner import as_owner

pytestmark = pytest.mark.django_db

SMALL, LARGE, K = 30, 2970, 10


def _bulk(tenant, vectors: np.ndarray, entity: str = "user-1", subject: str = "user-1") -> list[Fact]:
    rows = [
        Fact(
            tenant=tenant,
            subject=subject,
            entity=entity,
            attribute=f"attr_{i}",
            value=f"value {i}",
            value_key=value_key(f"value {i}"),
            statement=f"Statement {i} about things.",
            category="other",
            confidence=0.8,
            status=FactStatus.ACTIVE,
            embedding=vectors[i].tolist(),
        )
        for i in range(len(vectors))
    ]
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).bulk_create(rows, batch_size=500)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, 384)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def one_percent(tenant_a, tenant_b):
    """Tenant A holds 1% of the fact table, tenant B the rest; statistics are fresh."""
    rng = np.random.default_rng(7)
    small = _unit(rng, SMALL)
    _bulk(tenant_a, small)
    _bulk(tenant_b, _unit(rng, LARGE))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE semantic_fact")
    query = _unit(rng, 1)[0]
    return small, query


def _force_index(cursor) -> None:
    # Make the ordered HNSW scan the only cheap plan, as it is on a table of millions of rows.
    cursor.execute("SET LOCAL enable_seqscan = off")
    cursor.execute("SET LOCAL enable_sort = off")


def test_filtered_hnsw_search_for_a_tenant_with_one_percent_of_the_rows(one_percent, tenant_a) -> None:
    small, query = one_percent
    vector = query.tolist()
    exact = {f"attr_{i}" for i in np.argsort(-(small @ query))[:K]}

    # The pitfall the selector avoids: without iterative scans the index hands over ef_search
    # candidates, then the tenant filter drops ~99% of them.
    statement = search_sql(
        tenant=tenant_a, query="", vector=vector, pool=K, subject=None, entity=None, category=None, as_of=None
    )
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        _force_index(cursor)
        cursor.execute("SET LOCAL hnsw.iterative_scan = off")
        cursor.execute("SET LOCAL hnsw.ef_search = 40")
        cursor.execute(statement.sql, statement.params)
        assert len(cursor.fetchall()) < K

    # fact_search on the same forced index plan: k rows, all the tenant's, the exact nearest ones.
    with tenant_scope(tenant_a):
        with connection.cursor() as cursor:
            _force_index(cursor)
        results = fact_search(tenant=tenant_a, query="", query_embedding=vector, k=K)
    assert len(results) == K
    assert {r.fact.tenant_id for r in results} == {tenant_a.id}
    assert len({r.fact.attribute for r in results} & exact) >= K - 1

    # The plan: the HNSW index with the vector inlined (values are bound client-side, so PostgreSQL
    # plans with the real values and never falls back to a generic plan that loses the index).
    assert issubclass(connection.connection.cursor_factory, psycopg.ClientCursor)
    assert not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")
    statement = search_sql(
        tenant=tenant_a, query="things", vector=vector, pool=40, subject=None, entity=None, category=None, as_of=None
    )
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        configure_vector_scan(ef_search=40)
        _force_index(cursor)
        cursor.execute("EXPLAIN " + statement.sql, statement.params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "fact_embedding_hnsw" in plan
    assert "$1" not in plan

    # Left to the planner, a small filtered set is scanned exactly: k rows, exact order.
    with tenant_scope(tenant_a):
        planned = fact_search(tenant=tenant_a, query="", query_embedding=vector, k=K, entity="user-1")
    assert {r.fact.attribute for r in planned} == exact


def test_hybrid_search_finds_by_text_when_vectors_disagree(upsert, tenant_a) -> None:
    upsert(attribute="favourite_colour", value="teal", statement="Favourite colour: teal", category="preferences")
    upsert(attribute="pet", value="a cat named Miso", statement="The user has a cat named Miso", category="other")
    with tenant_scope(tenant_a):
        results = fact_search(tenant=tenant_a, query="Miso", k=2)
    assert results[0].fact.attribute == "pet"
    assert results[0].score_parts["text"] == 1.0


def test_search_counts_its_queries(upsert, tenant_a, django_assert_max_num_queries) -> None:
    for n in range(5):
        upsert(attribute=f"attr_{n}", value=f"v{n}", statement=f"The user mentions topic {n}.")
    with tenant_scope(tenant_a):
        # The scan settings, the ranked candidates, the k chosen facts.
        with django_assert_max_num_queries(3):
            results = fact_search(tenant=tenant_a, query="topic", k=3)
    assert len(results) == 3


def test_subject_filter_covers_the_subjects_memory_and_facts_about_it(upsert, tenant_a) -> None:
    upsert(subject="", entity="User-1", attribute="email", value="u1@example.com", category="contact_info")
    upsert(subject="user-1", entity="acme", attribute="plan", value="enterprise", category="business_context")
    upsert(subject="user-2", entity="user-2", attribute="email", value="u2@example.com", category="contact_info")
    with tenant_scope(tenant_a):
        found = {s.fact.value for s in fact_search(tenant=tenant_a, query="email plan", subject="user-1", k=10)}
    assert found == {"u1@example.com", "enterprise"}


def test_search_rows_rank_as_the_search_in_one_query_fewer(upsert, tenant_a, django_assert_max_num_queries) -> None:
    for n in range(8):
        upsert(
            attribute=f"attr_{n}", value=f"v{n}", statement=f"The user mentions topic {n} and more.", subject="user-1"
        )
    upsert(attribute="pet", value="Miso", statement="The user has a cat named Miso", subject="user-1", confidence=0.55)
    with tenant_scope(tenant_a):
        models = fact_search(tenant=tenant_a, query="topic cat", subject="user-1", k=10)
        # The ranked candidates with their columns, sent with the scan settings: one round trip.
        with django_assert_max_num_queries(1):
            rows = fact_search_rows(tenant=tenant_a, query="topic cat", subject="user-1", k=10)
    assert [(r.id, r.score, r.score_parts) for r in rows] == [(m.fact.id, m.score, m.score_parts) for m in models]
    assert [(r.statement, r.valid_from, r.confidence) for r in rows] == [
        (m.fact.statement, m.fact.valid_from, m.fact.confidence) for m in models
    ]
    assert any(r.confidence == 0.55 for r in rows)
    # With the vector still to come (a future): the same ranking.
    pending: Future[list[float]] = Future()
    with tenant_scope(tenant_a):
        pending.set_result(embed_one("topic cat"))
        later = fact_search_rows(tenant=tenant_a, query="topic cat", subject="user-1", k=10, query_embedding=pending)
    assert [(r.id, r.score, r.score_parts, r.statement) for r in later] == [
        (r.id, r.score, r.score_parts, r.statement) for r in rows
    ]


def _search_plan(tenant, vector: list[float], subject: str) -> list[dict[str, Any]]:
    """The nodes of the plan (EXPLAIN, as JSON) of the context's fact search as fact_search_rows sends it."""
    statements: list[str] = []

    def catch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if "FROM semantic_fact f" in sql:
            # The PostgreSQL backend's operations bind parameters as the driver does (client-side).
            statements.append(connection.ops.compose_sql(sql, params))  # type: ignore[attr-defined]
        return execute(sql, params, many, context)

    with tenant_scope(tenant), transaction.atomic():
        with connection.execute_wrapper(catch):
            assert fact_search_rows(
                tenant=tenant, query="statement about things", subject=subject, k=10, query_embedding=vector
            )
        statement = statements[0][statements[0].index("WITH ") :]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (FORMAT JSON) {statement}")
            (plan,) = cursor.fetchone()

    def nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [node, *(found for child in node.get("Plans", []) for found in nodes(child))]

    return nodes(plan[0]["Plan"])


def _analyze_facts() -> None:
    as_owner("ANALYZE semantic_fact")


@pytest.mark.django_db(transaction=True)
def test_the_search_reads_its_candidates_by_key_not_the_tenants_facts(tenant_a) -> None:
    """The search's candidates (a few dozen, from the vector, text and name parts) are then read with
    the columns a context line needs. Joined to the tenant's facts, they made the planner scan all of
    them, and all of them again for whether a candidate replaced another (604 facts of LoCoMo twice:
    a third of the statement's backend CPU); read by key, only the candidates' rows are."""
    rng = np.random.default_rng(11)
    for k in range(8):
        _bulk(tenant_a, _unit(rng, 100), entity=f"u{k}", subject=f"u{k}")
    _analyze_facts()
    plan = _search_plan(tenant_a, _unit(rng, 1)[0].tolist(), subject="u3")
    outer = [(node.get("Alias"), node["Node Type"]) for node in plan if node.get("Alias") in ("f", "o")]
    assert outer and all(kind != "Seq Scan" for _, kind in outer), outer
