"""EngramStore through LangGraph's own store interface (put, get, search, delete, list_namespaces),
against the live service; the items are facts in semantic memory, with history."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import pytest
from engram_client import AsyncEngramClient, EngramClient
from engram_client.langgraph import EngramStore, attribute_for, entity_for
from langgraph.store.base import Item
from pytest_django.live_server_helper import LiveServer

from semantic.models import Fact
from tenants.scope import tenant_scope
from tests.conftest import TenantContext

pytestmark = pytest.mark.live


@pytest.fixture
def store(live_server: LiveServer, ctx_a: TenantContext) -> Iterator[EngramStore]:
    with EngramClient(live_server.url, ctx_a.raw_key) as client:
        yield EngramStore(client)


def test_put_get_overwrite_and_delete(store: EngramStore, ctx_a: TenantContext) -> None:
    ns = ("memories", "u1")
    assert store.get(ns, "food") is None
    store.put(ns, "food", {"text": "u1 likes pizza", "stars": 4})
    item = store.get(ns, "food")
    assert isinstance(item, Item)
    assert item.value == {"text": "u1 likes pizza", "stars": 4}
    assert item.key == "food" and item.namespace == ns
    created = item.created_at

    store.put(ns, "food", {"text": "u1 likes sushi", "stars": 5})
    again = store.get(ns, "food")
    assert again is not None and again.value == {"text": "u1 likes sushi", "stars": 5}
    assert again.created_at == created and again.updated_at >= item.updated_at

    # The old value is history in semantic memory, not gone; the subject is the namespace's last part.
    with tenant_scope(ctx_a.tenant):
        rows = Fact.objects.for_tenant(ctx_a.tenant).filter(entity=entity_for("langgraph/memories/u1"))
        assert sorted(rows.values_list("status", flat=True)) == ["active", "superseded"]
        assert set(rows.values_list("subject", flat=True)) == {"u1"}

    store.delete(ns, "food")
    assert store.get(ns, "food") is None


def test_a_case_changed_value_is_stored_exactly(store: EngramStore) -> None:
    ns = ("prefs", "u2")
    store.put(ns, "tone", {"text": "Formal"})
    store.put(ns, "tone", {"text": "formal"})
    item = store.get(ns, "tone")
    assert item is not None and item.value == {"text": "formal"}


def test_keys_that_differ_only_by_case_are_distinct(store: EngramStore) -> None:
    ns = ("kv", "u3")
    store.put(ns, "Name", {"text": "upper"})
    store.put(ns, "name", {"text": "lower"})
    store.put(ns, "the name", {"text": "spaced"})
    assert store.get(ns, "Name").value == {"text": "upper"}  # type: ignore[union-attr]
    assert store.get(ns, "name").value == {"text": "lower"}  # type: ignore[union-attr]
    assert store.get(ns, "the name").value == {"text": "spaced"}  # type: ignore[union-attr]
    assert len({attribute_for("Name"), attribute_for("name"), attribute_for("the name")}) == 3


def test_search_by_query_filter_and_prefix(store: EngramStore) -> None:
    store.put(("memories", "u1"), "db", {"text": "The team runs PostgreSQL 16 in production", "kind": "tech"})
    store.put(("memories", "u1"), "pet", {"text": "Has a cat called Miso", "kind": "personal"})
    store.put(("memories", "u2"), "db", {"text": "Uses MySQL 8 for billing", "kind": "tech"})
    store.put(("other", "u1"), "x", {"text": "unrelated database note", "kind": "tech"})

    hits = store.search(("memories",), query="which database do they run", limit=10)
    assert {(h.namespace, h.key) for h in hits} >= {(("memories", "u1"), "db"), (("memories", "u2"), "db")}
    assert all(h.namespace[0] == "memories" for h in hits)
    assert all(h.score is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)  # type: ignore[misc]

    tech = store.search(("memories", "u1"), filter={"kind": "tech"})
    assert [(h.key, h.value["kind"]) for h in tech] == [("db", "tech")]
    everything = store.search(("memories",), limit=2)
    assert len(everything) == 2
    rest = store.search(("memories",), limit=10, offset=2)
    assert len(rest) == 1
    assert {h.key for h in everything + rest} == {"db", "pet"}
    newest_first = [h.updated_at for h in everything + rest]
    assert newest_first == sorted(newest_first, reverse=True)


def test_list_namespaces_with_prefix_suffix_and_depth(store: EngramStore) -> None:
    store.put(("memories", "u1"), "a", {"text": "one"})
    store.put(("memories", "u2"), "a", {"text": "two"})
    store.put(("docs", "v1", "u1"), "a", {"text": "three"})
    assert store.list_namespaces() == [("docs", "v1", "u1"), ("memories", "u1"), ("memories", "u2")]
    assert store.list_namespaces(prefix=("memories",)) == [("memories", "u1"), ("memories", "u2")]
    assert store.list_namespaces(suffix=("u1",)) == [("docs", "v1", "u1"), ("memories", "u1")]
    assert store.list_namespaces(max_depth=1) == [("docs",), ("memories",)]
    store.delete(("memories", "u2"), "a")
    assert ("memories", "u2") not in store.list_namespaces()


def test_another_tenants_store_sees_nothing(store: EngramStore, live_server: LiveServer, ctx_b: TenantContext) -> None:
    store.put(("memories", "u1"), "secret", {"text": "tenant A only"})
    with EngramClient(live_server.url, ctx_b.raw_key) as client_b:
        other = EngramStore(client_b)
        assert other.get(("memories", "u1"), "secret") is None
        assert other.search(("memories",), query="tenant A") == []
        assert other.list_namespaces() == []


def test_async_interface(live_server: LiveServer, ctx_a: TenantContext) -> None:
    async def scenario() -> None:
        async with AsyncEngramClient(live_server.url, ctx_a.raw_key) as client:
            store = EngramStore(async_client=client)
            await store.aput(("memories", "u7"), "city", {"text": "u7 lives in Porto"})
            item = await store.aget(("memories", "u7"), "city")
            assert item is not None and item.value["text"] == "u7 lives in Porto"
            hits = await store.asearch(("memories", "u7"), query="where do they live")
            assert [h.key for h in hits] == ["city"]
            assert await store.alist_namespaces() == [("memories", "u7")]
            await store.adelete(("memories", "u7"), "city")
            assert await store.aget(("memories", "u7"), "city") is None

    anyio.run(scenario)
