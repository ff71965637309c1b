"""The read path's lookups by key (core.db.fetch_prepared) are prepared by a connection when the
deployment asks for it (DB_PREPARE_THRESHOLD: PostgreSQL then parses and plans them once per connection,
not on every request), never by default (a transaction-mode pooler may not keep a prepared statement),
and a prepared plan is held to row-level security like any other statement."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection

from episodic.models import Passage
from episodic.selectors import passage_rows_neighbours
from tenants.scope import tenant_scope
from tests.router.conftest import believe, remember

pytestmark = pytest.mark.django_db

HISTORY = [
    "My printer keeps jamming on the second tray",
    ("assistant", "Try removing the second tray and cleaning the rollers"),
    "I adopted a dog called Biscuit",
    ("assistant", "Congratulations on Biscuit!"),
    "The VPN drops every evening around six",
]
NEIGHBOURS = "h.anchor"
SOURCES = "semantic_factsource"


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.fixture
def preparing() -> Iterator[None]:
    """The connection prepares a statement the first time it runs (what DB_PREPARE_THRESHOLD=0 sets)."""
    connection.ensure_connection()
    before = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = 0
    yield
    connection.connection.prepare_threshold = before


def _ask_twice(api) -> None:
    for _ in range(2):
        body = {"subject": "alice", "query": "what is the name of my dog Biscuit?", "max_tokens": 2000}
        response = api.post("/v1/context", body, format="json")
        assert response.status_code == 200
        assert "Biscuit" in response.json()["prompt"]


def test_a_context_requests_lookups_by_key_are_prepared_once_per_connection_when_asked(
    tenant_a, api_a, preparing
) -> None:
    episodes = remember(tenant_a, HISTORY)
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog.", sources=episodes[2:3])
    _ask_twice(api_a)
    prepared = _prepared()
    assert len([s for s in prepared if NEIGHBOURS in s]) == 1, prepared
    assert len([s for s in prepared if SOURCES in s]) == 1, prepared


def test_nothing_is_prepared_by_default(tenant_a, api_a) -> None:
    episodes = remember(tenant_a, HISTORY)
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog.", sources=episodes[2:3])
    _ask_twice(api_a)
    assert _prepared() == []


def test_a_prepared_lookup_sees_only_the_scoped_tenants_rows(tenant_a, tenant_b, preparing) -> None:
    remember(tenant_a, HISTORY)
    remember(tenant_b, HISTORY, subject="bob")
    with tenant_scope(tenant_b):
        theirs = list(Passage.objects.order_by("id").values_list("id", flat=True))
        assert passage_rows_neighbours(tenant=tenant_b, passage_ids=theirs[1:2])
    assert any(NEIGHBOURS in s for s in _prepared())
    # The same prepared statement, asked for the other tenant's rows from inside this tenant's scope:
    # row-level security holds whatever the statement names.
    with tenant_scope(tenant_a):
        assert passage_rows_neighbours(tenant=tenant_b, passage_ids=theirs[1:2]) == []
        mine = list(Passage.objects.order_by("id").values_list("id", flat=True))
        assert len(passage_rows_neighbours(tenant=tenant_a, passage_ids=mine[1:2])) == 2
