"""The vector channel's binary-quantized prefilter (ENGRAM["VECTOR_PREFILTER_CANDIDATES"]): a subject's
passages ranked by Hamming distance on their binary codes, the best re-scored exactly. It finds what
the exact scan finds, answers exactly like it for a subject with no more passages than the candidates,
and sees one tenant's passages only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from core.db import set_locals
from core.embedding import EMBEDDING_DIM, configure_vector_scan
from episodic.models import Passage
from episodic.selectors import passage_search_rows
from tenants.scope import tenant_scope
from tests.episodic.conftest import T0, item
from tests.owner import as_owner

pytestmark = pytest.mark.django_db


def clustered(rng: np.random.Generator, n: int, clusters: int) -> np.ndarray:
    """Unit vectors shaped like MiniLM's (bench/vector_prefilter.py has the real ones): a direction all
    share (the mean vector's norm is 0.39, as MiniLM's is 0.38, so a dimension's sign tells less),
    cluster centres, and noise; median cosine between two of them 0.15 (MiniLM 0.16), to the nearest
    of 5,000 0.47 (MiniLM 0.72 among 11,000 texts: these are harder to tell apart)."""
    common = rng.standard_normal(EMBEDDING_DIM)
    centres = rng.standard_normal((clusters, EMBEDDING_DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    noise = rng.standard_normal((n, EMBEDDING_DIM)) / np.sqrt(EMBEDDING_DIM)
    points = 0.39 * common / np.linalg.norm(common) + 0.5 * centres[rng.integers(0, clusters, n)] + 0.8 * noise
    return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def store(append: Any, tenant: Any, vectors: np.ndarray, subject: str = "alice") -> list[int]:
    """One episode (hence one passage) per vector; the passages' ids, in the vectors' order."""
    items = [
        item(f"note {i}", subject=subject, session=f"{subject}-{i // 500}", external_id=f"n{i}",
             occurred_at=T0.replace(microsecond=0).isoformat())
        for i in range(len(vectors))
    ]  # fmt: skip
    episodes = [e for start in range(0, len(items), 1000) for e in append(tenant, items[start : start + 1000])]
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE episodic_passage p SET embedding = v.e::vector"
            " FROM unnest(%s::bigint[], %s::text[]) AS v(episode_id, e)"
            " WHERE p.tenant_id = %s AND p.episode_id = v.episode_id",
            [
                [e.id for e in episodes],
                ["[" + ",".join(f"{x:.7g}" for x in row) + "]" for row in vectors],
                tenant.id,
            ],
        )
        by_episode = dict(Passage.objects.for_tenant(tenant).values_list("episode_id", "id"))
    return [by_episode[e.id] for e in episodes]


def nearest(tenant: Any, vector: np.ndarray, *, limit: int = 10, subject: str = "alice", **kwargs: Any) -> list[Any]:
    with tenant_scope(tenant):
        return passage_search_rows(
            tenant=tenant, query="", subject=subject, limit=limit, query_embedding=[float(x) for x in vector], **kwargs
        )


def candidates(settings: Any, n: int) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "VECTOR_PREFILTER_CANDIDATES": n}


def vector_statement(tenant: Any, vector: np.ndarray, **kwargs: Any) -> str:
    with CaptureQueriesContext(connection) as caught:
        nearest(tenant, vector, **kwargs)
    (statement,) = [q["sql"] for q in caught.captured_queries if "<=>" in q["sql"] and "LIMIT" in q["sql"]]
    # The scan's settings travel in front of it (core.db.fetch_after_set_locals).
    return statement.rsplit("; ", 1)[-1]


def hamming_ran(tenant: Any, vector: np.ndarray) -> bool:
    """Whether the statement's Hamming ranking ran (EXPLAIN ANALYZE: a gated-off branch has no loops)."""
    (sort,) = [
        n for n in nodes(explain(tenant, vector_statement(tenant, vector))) if "<~>" in " ".join(n.get("Sort Key", []))
    ]
    return bool(sort["Actual Loops"])


def vacuum_analyze() -> None:
    """Statistics and the visibility map, as autovacuum keeps them (VACUUM needs the table's owner)."""
    as_owner("VACUUM ANALYZE episodic_passage, episodic_episode, episodic_session")


def explain(tenant: Any, statement: str) -> dict[str, Any]:
    with tenant_scope(tenant), connection.cursor() as cursor:
        configure_vector_scan(ef_search=100)
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) {statement}")
        (plan,) = cursor.fetchone()[0]
    return dict(plan["Plan"])


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(n for child in plan.get("Plans", []) for n in nodes(child))]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_prefilter_finds_what_the_exact_scan_finds_reading_only_the_codes(append, tenant_a, settings) -> None:
    both = clustered(np.random.default_rng(23), 5040, clusters=60)
    vectors, queries = both[:5000], both[5000:]
    ids = np.asarray(store(append, tenant_a, vectors))
    vacuum_analyze()
    truth = [set(ids[np.argsort(-(vectors @ q), kind="stable")[:10]].tolist()) for q in queries]

    candidates(settings, 0)
    assert "<~>" not in vector_statement(tenant_a, queries[0])
    exact = [[r.row.passage_id for r in nearest(tenant_a, q)] for q in queries]
    candidates(settings, 400)
    approximate = [[r.row.passage_id for r in nearest(tenant_a, q)] for q in queries]

    assert all(set(e) == t for e, t in zip(exact, truth, strict=True))
    overlap = [len(set(a) & set(e)) / 10 for a, e in zip(approximate, exact, strict=True)]
    # Measured on these vectors: mean 0.9975, worst 0.9; with 100 candidates 0.97 (the bench has the
    # figures on real MiniLM vectors).
    assert np.mean(overlap) >= 0.98 and min(overlap) >= 0.8, overlap
    # The codes come from the covering index alone, and only the candidates' rows are read.
    ran = [n for n in nodes(explain(tenant_a, vector_statement(tenant_a, queries[0]))) if n.get("Actual Loops")]
    (codes,) = [n for n in ran if n.get("Index Name") == "passage_subject_codes" and n["Actual Rows"] == 5000]
    assert codes["Node Type"] == "Index Only Scan" and codes["Heap Fetches"] == 0
    # The primary key is probed for the 400 candidates, and then for the 10 rows the statement returns.
    probes = [n["Actual Rows"] * n["Actual Loops"] for n in ran if n.get("Index Name") == "episodic_passage_pkey"]
    assert sorted(probes) == [10, 400]
    # With fewer candidates the prefilter loses neighbours: the bound above is the candidates' doing.
    candidates(settings, 100)
    few = [[r.row.passage_id for r in nearest(tenant_a, q)] for q in queries]
    assert np.mean([len(set(a) & set(e)) / 10 for a, e in zip(few, exact, strict=True)]) < np.mean(overlap)


def test_a_subject_with_no_more_passages_than_the_candidates_gets_the_exact_answer(append, tenant_a, settings) -> None:
    both = clustered(np.random.default_rng(5), 121, clusters=6)
    store(append, tenant_a, both[:120])
    query = both[120]

    def answer() -> list[tuple[int, float]]:
        return [(r.row.passage_id, r.score_parts["vector"]) for r in nearest(tenant_a, query, limit=100)]

    candidates(settings, 0)
    exact = answer()
    candidates(settings, 120)
    assert answer() == exact
    # The Hamming branch is in the statement but gated off: it never runs for this subject.
    assert hamming_ran(tenant_a, query) is False
    candidates(settings, 119)
    assert hamming_ran(tenant_a, query) is True
    assert answer() == exact


def test_the_prefilter_keeps_the_channels_filters_and_its_tenant(append, tenant_a, tenant_b, settings) -> None:
    mine = clustered(np.random.default_rng(8), 300, clusters=5)
    query = mine[0]
    ids = store(append, tenant_a, mine)
    # Another tenant's subject of the same name, holding the query's own vector and its near copies.
    store(append, tenant_b, np.repeat(query[None, :], 300, axis=0))
    candidates(settings, 50)

    found = [r.row.passage_id for r in nearest(tenant_a, query, limit=100)]
    assert found[0] == ids[0] and set(found) <= set(ids)
    excluded = nearest(tenant_a, query, limit=5)[0].row.id
    again = nearest(tenant_a, query, limit=100, exclude_episode_ids=[excluded])
    assert excluded not in {r.row.id for r in again} and {r.row.passage_id for r in again} <= set(ids)
    assert nearest(tenant_a, query, limit=10, until=T0) == []


def test_the_gated_exact_scan_stays_exact_where_the_planner_would_take_the_hnsw_index(
    append, tenant_a, settings
) -> None:
    # A subject below the candidate count takes the exact branch. Its order must not come from the HNSW
    # index, whose iterative scan hands rows over in relaxed order: with stale statistics the planner
    # took it, and a sort that trusted it as presorted served misordered neighbours.
    both = clustered(np.random.default_rng(5), 81, clusters=8)
    vectors, query = both[:80], both[80]
    ids = np.asarray(store(append, tenant_a, vectors))
    truth = ids[np.argsort(-(vectors @ query), kind="stable")[:30]].tolist()
    candidates(settings, 400)
    statement = vector_statement(tenant_a, query, limit=30)
    with transaction.atomic():
        set_locals({"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_sort": "off"})
        plan = explain(tenant_a, statement)
        served = [r.row.passage_id for r in nearest(tenant_a, query, limit=30)]
    assert not any("hnsw" in n.get("Index Name", "") for n in nodes(plan))
    assert served == truth


@pytest.mark.parametrize("prefilter", [50, 0], ids=["prefiltered", "exact"])
def test_the_parts_of_summary_episodes_are_left_out_on_request(append, tenant_a, settings, prefilter) -> None:
    candidates(settings, prefilter)
    vectors = clustered(np.random.default_rng(11), 200, clusters=8)
    ids = store(append, tenant_a, vectors)
    # A session's summary episode, whose vector is the query's own.
    summary = append(
        tenant_a,
        [item("summary: note 7 and more", session="alice-s", kind="summary", external_id="engram:summary",
              occurred_at=T0.replace(microsecond=0).isoformat())],
    )[0]  # fmt: skip
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE episodic_passage SET embedding = (SELECT embedding FROM episodic_passage WHERE id = %s)"
            " WHERE tenant_id = %s AND episode_id = %s",
            [ids[7], tenant_a.id, summary.id],
        )
    with_summaries = nearest(tenant_a, vectors[7], limit=10)
    # Found by default (episode search), as near as the passage whose vector it shares.
    assert summary.id in {row.row.id for row in with_summaries[:2]}
    without = nearest(tenant_a, vectors[7], limit=10, summaries=False)
    assert len(without) == 10 and summary.id not in {row.row.id for row in without}
    assert without[0].row.passage_id == ids[7]
