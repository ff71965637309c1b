"""The entity/topic GIN, full-text and subject-time indexes serve our queries as the application role,
under row-level security (the array and tsvector operators are LEAKPROOF), on a table with enough rows
and fresh statistics. The planner's choice is what is tested: nothing is switched off."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import connection, transaction

from core.embedding import EMBEDDING_DIM
from episodic.selectors import episode_list, passage_pool
from tenants.scope import tenant_scope
from tests.episodic.conftest import item
from tests.owner import as_owner

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(queryset) -> str:
    return queryset.select_related(None).explain()


def _analyze() -> None:
    """VACUUM ANALYZE needs the table's owner; the tests run as the application role. VACUUM too, not
    ANALYZE alone: it merges the GIN indexes' pending lists (fastupdate), which the planner prices as
    read on every scan, so the plan would depend on whether autovacuum had got to them yet."""
    as_owner("VACUUM ANALYZE episodic_episode", "VACUUM ANALYZE episodic_session", "VACUUM ANALYZE episodic_passage")


@pytest.fixture
def populated(append, tenant_a, tenant_b):
    for start in range(0, 4000, 1000):
        append(
            tenant_a,
            [
                item(
                    f"note {i} about {'Lisbon' if i % 200 == 0 else 'work'}",
                    session=f"s-{i % 40}",
                    entities=[f"e{i % 300}"],
                    topics=[f"t{i % 150}"],
                )
                for i in range(start, start + 1000)
            ],
        )
    append(tenant_b, [item(f"other {i}", subject="bob", session="b", entities=["e1"]) for i in range(1000)])
    _analyze()


def test_filters_use_their_indexes_under_row_level_security(tenant_a, populated) -> None:
    with tenant_scope(tenant_a):
        entity_plan = _plan(episode_list(tenant=tenant_a, entity="e7").order_by())
        topic_plan = _plan(episode_list(tenant=tenant_a, topic="t3").order_by())
        query = SearchQuery("lisbon", search_type="raw", config="english")
        text_plan = _plan(episode_list(tenant=tenant_a).order_by().filter(search_vector=query))
        timeline_plan = _plan(episode_list(tenant=tenant_a, subject="alice")[:20])
    assert "episode_entities_gin" in entity_plan, entity_plan
    assert "episode_topics_gin" in topic_plan, topic_plan
    assert "episode_fts_gin" in text_plan, text_plan
    assert "episode_subject_time" in timeline_plan, timeline_plan


_WIDE = re.compile(r"\b(embedding|search_vector|index_terms)\b")
_RANKING = {"CTE q", "CTE s", "CTE text", "CTE overlap", "CTE vector", "CTE fused"}


def _carriers(node: dict[str, Any]) -> list[str]:
    """The nodes of a plan, outside the ranking (the channels and their fusion, which read them to
    rank), that pass a passage's vector, text search vector or index terms up the plan: the joins, sorts,
    hashes and windows above the scans (a scan reads them, and may hand its whole row on)."""
    if node.get("Subplan Name") in _RANKING:
        return []
    found = []
    # A value computed below and handed up is printed in parentheses: only what a node computes, or
    # a column it passes on, counts.
    outputs = [out for out in node.get("Output", []) if not (out.startswith("(") and out.endswith(")"))]
    if "Relation Name" not in node and any(_WIDE.search(out) for out in outputs):
        found.append(f"{node['Node Type']}: {node['Output']}")
    for child in node.get("Plans", []):
        found += _carriers(child)
    return found


def _pool_plan(tenant: Any, query: str = "a note about Lisbon", subject: str = "alice") -> dict[str, Any]:
    """The plan (EXPLAIN VERBOSE, as JSON) of history's pool statement as passage_pool sends it."""
    statements: list[str] = []

    def catch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if "fused" in sql:
            # The PostgreSQL backend's operations bind parameters as the driver does (client-side).
            statements.append(connection.ops.compose_sql(sql, params))  # type: ignore[attr-defined]
        return execute(sql, params, many, context)

    with tenant_scope(tenant), transaction.atomic():
        with connection.execute_wrapper(catch):
            pool = passage_pool(
                tenant=tenant,
                query=query,
                subject=subject,
                limit=150,
                query_embedding=[0.1] * EMBEDDING_DIM,
                extracted=(["e7"], ["t3"]),
                count_terms=["note", "lisbon"],
            )
        assert pool.rows
        statement = statements[0][statements[0].index("WITH ") :]
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (VERBOSE, FORMAT JSON) {statement}")
            (plan,) = cursor.fetchone()
    return plan[0]["Plan"]


def _nodes(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [node, *(found for child in node.get("Plans", []) for found in _nodes(child))]


@pytest.fixture
def subjects(append, tenant_a):
    """Eight subjects of 600 passages each, one in 100 about Lisbon."""
    for k in range(8):
        append(
            tenant_a,
            [
                item(
                    f"entry {i} about {'Lisbon' if i % 100 == 0 else 'work'}", subject=f"u{k}", session=f"u{k}-{i % 20}"
                )
                for i in range(600)
            ],
        )
    _analyze()


def test_the_text_channel_finds_one_subjects_matches_through_an_index_led_by_the_subject(tenant_a, subjects) -> None:
    """History's text channel takes the subject's 2,000 newest passages that match the query. With the
    tenant's full-text index the planner read every subject's matches, or walked the subject's
    passages newest first testing each (10,000 a subject: 24-34 ms of a 1,000,000-passage tenant's
    statement); an index led by the subject reads its matches only."""
    plan = _pool_plan(tenant_a, query="Lisbon", subject="u3")
    scanned = {node.get("Index Name") for node in _nodes(plan) if node.get("Index Name")}
    assert "passage_subject_fts_gin" in scanned, scanned


def test_the_pool_counts_a_rows_names_without_a_set_operation_per_row(tenant_a, populated) -> None:
    """The overlap channel orders the subject's passages that carry a name by how many of the query's
    names they carry, and the top's rows report it: counted per row, an INTERSECT subplan builds a hash
    table for each row (on LoCoMo a third of the statement's time)."""
    plan = _pool_plan(tenant_a)
    set_operations = [node["Node Type"] for node in _nodes(plan) if node["Node Type"] == "SetOp"]
    assert set_operations == []


def test_the_pool_joins_no_set_of_its_rows_to_another_row_by_row(tenant_a, populated) -> None:
    """The top's rows, read by key, are estimated at a handful (`= ANY(ARRAY(...))`): its episodes, read
    by key as a second set and joined to it, were looped over once per row of the top (250 x 250 at
    1,000 tokens, 400 x 400 at 4,000: the half of the statement's time on LoCoMo at 4,000). Each row's
    episode is read with it instead."""
    plan = _pool_plan(tenant_a)
    looped = [
        node["Plans"][1]["Node Type"]
        for node in _nodes(plan)
        if node["Node Type"] == "Nested Loop" and node["Plans"][1]["Node Type"] == "Materialize"
    ]
    assert looped == []


def test_the_pool_reads_a_passages_wide_columns_only_where_it_scores_it(tenant_a, populated) -> None:
    """History's pool (one statement: channels, fusion, the top's scores and rows) computes each top
    row's scores where it reads the passage, and passes only the scores and the columns a line needs
    up the plan: carried through the joins, the sort and the window above, the vector (1.5 kB a row),
    text search vector and index terms cost the database more than the statements the one replaced."""
    carriers = _carriers(_pool_plan(tenant_a))
    assert carriers == [], carriers


def test_the_pool_counts_a_rows_names_without_sorting_them(tenant_a, populated) -> None:
    """How many of the query's names a row carries is counted over the query's few names, looked up in
    the row's array: counted as the distinct names of the row's array that the query has, each row's
    names were sorted first (a sort per row of the overlap channel and of the top: 0.2-0.5 ms of the
    statement on LoCoMo)."""
    plan = _pool_plan(tenant_a)
    sorted_per_row = [
        node.get("Sort Key") for node in _nodes(plan) if node["Node Type"] == "Sort" and "carried" in str(node)
    ]
    assert sorted_per_row == []


def test_the_pool_asks_once_whether_the_subject_is_large_enough_for_the_prefilter(tenant_a, populated) -> None:
    """The vector channel's two branches (exact scan, binary prefilter) are gated by one question, whether
    the subject has more coded passages than the prefilter keeps: asked once for both."""
    plan = _pool_plan(tenant_a)
    gates = [
        node
        for node in _nodes(plan)
        if node.get("Index Name") == "passage_subject_codes"
        and node["Node Type"] == "Index Only Scan"
        and "embedding_code <~>" not in str(node)
    ]
    assert len(gates) == 1, [node.get("Parent Relationship") for node in gates]
