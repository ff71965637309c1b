"""The entity/topic GIN, full-text and subject-time indexes serve our queries as the application role,
under row-level security (the array and tsvector operators are LEAKPROOF), on a table with enough rows
and fresh statistics. The planner's choice is what is tested: nothing is switched off."""

from __future__ import annotations

import psycopg
import pytest
from django.contrib.postgres.search import SearchQuery
from django.db import connection

from episodic.selectors import episode_list
from tenants.dbroles import owner_credentials
from tenants.scope import tenant_scope
from tests.episodic.conftest import item

pytestmark = pytest.mark.django_db(transaction=True)


def _plan(queryset) -> str:
    return queryset.select_related(None).explain()


def _analyze() -> None:
    """VACUUM ANALYZE needs the table's owner; the tests run as the application role. VACUUM too, not
    ANALYZE alone: it merges the GIN indexes' pending lists (fastupdate), which the planner prices as
    read on every scan, so the plan would depend on whether autovacuum had got to them yet."""
    owner = owner_credentials()
    if owner is None:
        pytest.skip("no DATABASE_OWNER_URL: cannot refresh statistics")
    cfg = connection.settings_dict
    with psycopg.connect(
        host=cfg["HOST"],
        port=cfg["PORT"],
        dbname=cfg["NAME"],
        user=owner["USER"],
        password=owner["PASSWORD"],
        autocommit=True,
    ) as conn:
        conn.execute("VACUUM ANALYZE episodic_episode")
        conn.execute("VACUUM ANALYZE episodic_session")


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
