"""A tenant's lock is a row lock in its own shard: it holds across connections (and, on Citus, nodes)
until the transaction that took it ends, and other resources or tenants do not wait for it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, connections

from core.db import set_local
from tenants.locks import tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db(transaction=True)


def _other_connection(work: Callable[[], None]) -> BaseException | None:
    """Run `work` on a second connection (another thread); the exception it raised, if any."""
    outcome: list[BaseException | None] = [None]

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # noqa: BLE001 (handed back to the test)
            outcome[0] = exc
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=30)
    return outcome[0]


def _messages(exc: BaseException | None) -> str:
    # tenant_scope's cleanup statement fails after the error in an aborted transaction; the cause is
    # in the chain.
    out = []
    while exc is not None:
        out.append(str(exc))
        exc = exc.__context__
    return " / ".join(out)


def _try_lock(tenant: Tenant, *parts: object) -> Callable[[], None]:
    def work() -> None:
        with tenant_scope(tenant):
            set_local("lock_timeout", "300ms")
            tenant_xact_lock(tenant.id, *parts)

    return work


def test_a_held_lock_makes_the_same_resource_wait_and_frees_others(tenant_a, tenant_b) -> None:
    with tenant_scope(tenant_a):
        tenant_xact_lock(tenant_a.id, "consolidation")
        blocked = _other_connection(_try_lock(tenant_a, "consolidation"))
        other_resource = _other_connection(_try_lock(tenant_a, "archive"))
        other_tenant = _other_connection(_try_lock(tenant_b, "consolidation"))
    assert "lock timeout" in _messages(blocked), _messages(blocked)
    assert other_resource is None and other_tenant is None
    # Released with the transaction.
    assert _other_connection(_try_lock(tenant_a, "consolidation")) is None
    assert connection.in_atomic_block is False
