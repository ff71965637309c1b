"""Entity graph traversal: both directions, depth, and the size cap."""

from __future__ import annotations

import pytest

from semantic.selectors import entity_graph
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def test_graph_follows_edges_both_ways_up_to_the_depth(upsert, tenant_a) -> None:
    upsert(subject="", entity="acme", attribute="database", value="postgres", object_entity="postgres")
    upsert(subject="", entity="globex", attribute="database", value="postgres", object_entity="postgres")
    upsert(subject="", entity="postgres", attribute="runs_on", value="aws", object_entity="aws")
    upsert(subject="", entity="aws", attribute="region", value="eu-west-1")
    with tenant_scope(tenant_a):
        graph = entity_graph(tenant=tenant_a, entity="acme", depth=2)
        deep = entity_graph(tenant=tenant_a, entity="acme", depth=3)
    assert {n.entity: n.depth for n in graph.nodes} == {"acme": 0, "postgres": 1, "globex": 2, "aws": 2}
    assert {f.attribute for f in graph.facts} == {"database", "runs_on"}
    assert not graph.truncated
    assert "region" in {f.attribute for f in deep.facts}


def test_graph_is_capped(upsert, tenant_a) -> None:
    for n in range(8):
        upsert(subject="", entity="hub", attribute="uses", value=f"tool {n}", object_entity=f"tool-{n}")
    with tenant_scope(tenant_a):
        graph = entity_graph(tenant=tenant_a, entity="hub", depth=2, max_nodes=4, max_facts=6)
    assert graph.truncated
    assert len(graph.nodes) <= 4 and len(graph.facts) <= 6
