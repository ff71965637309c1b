"""The merge's invariants: under any arrival order the latest observation wins at every instant, and
concurrent writers of one attribute end with one active fact."""

from __future__ import annotations

import threading
import uuid

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semantic.models import Fact, FactStatus
from semantic.selectors import facts_for_subject
from semantic.services import fact_upsert
from tenants.scope import tenant_scope
from tests.semantic.conftest import ACTOR, at, candidate

observations = st.lists(
    st.tuples(st.sampled_from(["SQLite", "PostgreSQL", "MySQL"]), st.integers(min_value=0, max_value=60)),
    min_size=1,
    max_size=7,
    unique_by=lambda o: o[1],
)


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(observed=observations, order=st.randoms(use_true_random=False))
def test_latest_observation_wins_at_every_instant_whatever_the_arrival_order(tenant_a, observed, order) -> None:
    entity = f"e-{uuid.uuid4().hex[:8]}"
    arrivals = list(observed)
    order.shuffle(arrivals)
    with tenant_scope(tenant_a):
        for value, day in arrivals:
            fact_upsert(
                tenant=tenant_a,
                candidate=candidate(entity=entity, subject=entity, value=value, observed_at=at(day)),
                actor=ACTOR,
            )
        facts = list(Fact.objects.for_tenant(tenant_a).filter(entity=entity))
        by_time = sorted(observed, key=lambda o: o[1])
        active = [f for f in facts if f.status == FactStatus.ACTIVE]
        assert [f.value for f in active] == [by_time[-1][0]]
        for probe in sorted({d for _, d in observed} | {d + 0.5 for _, d in observed} | {-1}):
            held = [v for v, d in by_time if d <= probe]
            believed = [f.value for f in facts_for_subject(tenant=tenant_a, subject=entity, as_of=at(probe))]
            assert believed == held[-1:], (arrivals, probe)
        # Intervals of one attribute never overlap.
        spans = sorted((f.valid_from, f.valid_to) for f in facts if f.status in ("active", "superseded"))
        for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
            assert end is not None and end <= start


def _run_concurrently(tenant, values: list[str]) -> list[BaseException]:
    barrier = threading.Barrier(len(values))
    errors: list[BaseException] = []

    def worker(value: str) -> None:
        try:
            barrier.wait()
            with tenant_scope(tenant):
                fact_upsert(tenant=tenant, candidate=candidate(value=value), actor=ACTOR)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(v,)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.django_db(transaction=True)
def test_concurrent_upserts_of_one_attribute_end_with_one_active_fact(tenant_a) -> None:
    values = [f"db-{n}" for n in range(6)]
    assert _run_concurrently(tenant_a, values) == []
    with tenant_scope(tenant_a):
        facts = list(Fact.objects.for_tenant(tenant_a).filter(entity="user-1", attribute="database"))
    active = [f for f in facts if f.status == FactStatus.ACTIVE]
    assert len(facts) == 6
    assert len(active) == 1
    # The winner is the latest observation, whichever writer took the lock last.
    assert active[0].valid_from == max(f.valid_from for f in facts)
    assert all(f.superseded_by_id is not None for f in facts if f.status == FactStatus.SUPERSEDED)


@pytest.mark.django_db(transaction=True)
def test_concurrent_upserts_of_one_value_confirm_a_single_fact(tenant_a) -> None:
    assert _run_concurrently(tenant_a, ["PostgreSQL"] * 5) == []
    with tenant_scope(tenant_a):
        facts = list(Fact.objects.for_tenant(tenant_a).filter(entity="user-1", attribute="database"))
    assert len(facts) == 1
    assert facts[0].confirmation_count == 5
