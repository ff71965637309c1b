"""The tenant scope: which tenants the current code may touch, in Python and in PostgreSQL.

Two guards hold together. In Python, a context variable names the active tenants; the default manager
of every tenant-owned model limits each query to them (`tenant_id = <id>` for one tenant) and refuses
to build a query without it. In PostgreSQL, the same ids go into the transaction-local setting
`app.tenant_id`, which the row-level security policy of every tenant table compares with `tenant_id`;
the setting dies with the transaction, so a pooled connection never carries a tenant into the next
request.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import connections, transaction
from django.db.models import Model, QuerySet

from core.db import set_locals

if TYPE_CHECKING:
    from tenants.models import Tenant

SETTING = "app.tenant_id"

M = TypeVar("M", bound=Model)

_active: ContextVar[frozenset[uuid.UUID] | None] = ContextVar("engram_tenant_scope", default=None)
_disabled: ContextVar[bool] = ContextVar("engram_scope_disabled", default=False)
# What the default connection's setting names: the Python scope's tenants, or more inside narrowed_to().
_granted: ContextVar[frozenset[uuid.UUID] | None] = ContextVar("engram_scope_granted", default=None)


class ScopeError(RuntimeError):
    """A tenant-owned model was queried outside any tenant scope."""


def _ids(tenants: Iterable[Tenant | uuid.UUID | str]) -> frozenset[uuid.UUID]:
    out: set[uuid.UUID] = set()
    for t in tenants:
        if isinstance(t, uuid.UUID):
            out.add(t)
        elif isinstance(t, str):
            out.add(uuid.UUID(t))
        else:
            out.add(t.id)
    return frozenset(out)


def active_tenant_ids() -> frozenset[uuid.UUID] | None:
    return _active.get()


def require_scope(model_label: str) -> frozenset[uuid.UUID] | None:
    """The tenants a query of `model_label` is limited to, or None under `scopes_disabled()`; raises
    outside any scope."""
    if _disabled.get():
        return None
    ids = _active.get()
    if ids is None:
        raise ScopeError(
            f"{model_label} was queried outside a tenant scope; use tenant_scope(tenant) "
            "or, for rare system work, scopes_disabled()."
        )
    return ids


def check_within_scope(model_label: str, tenant_id: uuid.UUID) -> None:
    active = None if _disabled.get() else _active.get()
    if active is not None and tenant_id not in active:
        raise ScopeError(f"{model_label} was asked for tenant {tenant_id}, which is outside the active scope.")


def _set_db(ids: frozenset[uuid.UUID] | None, using: str = "default", also: dict[str, str] | None = None) -> None:
    value = ",".join(sorted(str(i) for i in ids)) if ids else ""
    set_locals({**(also or {}), SETTING: value}, using=using)
    if using == "default":
        _granted.set(ids)


def clear_db_setting(using: str = "default") -> None:
    _set_db(None, using)


def activate(
    tenants: Iterable[Tenant | uuid.UUID | str], using: str = "default", *, also: dict[str, str] | None = None
) -> None:
    """Enter the scope for the rest of the current transaction (API authentication, admin requests).
    `also`: other transaction-local settings to set in the same round trip (authentication clears the
    key prefix it looked its key up under).

    The caller owns the transaction and resets the Python side with `deactivate()` when it ends.
    """
    if not connections[using].in_atomic_block:
        raise ScopeError("activate() needs a transaction: the database setting is transaction-local")
    ids = _ids(tenants)
    _set_db(ids, using, also)
    _active.set(ids)


def deactivate() -> None:
    _active.set(None)
    _granted.set(None)


@contextmanager
def tenant_scope(
    *tenants: Tenant | uuid.UUID | str, using: str = "default", also: dict[str, str] | None = None
) -> Iterator[None]:
    """Run the block inside a transaction scoped to the given tenants (tasks, commands, tests). `also`:
    other transaction-local settings, set in the same round trip as the tenant's (activate's); they hold
    until the transaction ends (a nested block's do not end with the block)."""
    ids = _ids(tenants)
    outer = _active.get()
    # Inside narrowed_to() the database setting names more tenants than the Python scope: put that back.
    granted = _granted.get() if using == "default" else None
    outer_db = granted if outer is not None and granted is not None and outer <= granted else outer
    conn = connections[using]
    # A block that opens the transaction ends it: the setting ends with it, and is not put back.
    nested = conn.in_atomic_block or not conn.get_autocommit()
    with transaction.atomic(using=using):
        _set_db(ids, using, also)
        token = _active.set(ids)
        try:
            yield
        finally:
            _active.reset(token)
            # When this block is nested in a longer transaction the setting would outlive it; put the
            # outer value back. After an error the savepoint rollback has already restored it.
            if nested and not conn.needs_rollback:
                _set_db(outer_db, using)
            elif using == "default":
                _granted.set(outer_db)


@contextmanager
def narrowed_to(tenant: Tenant | uuid.UUID | str) -> Iterator[None]:
    """Limit the Python scope to one of the active tenants for the block: an admin or dashboard page of
    one tenant, whose request scope holds every tenant of the operator. The database setting already
    admits that tenant and stays as it is, so this costs no statement and opens no transaction."""
    ids = _ids([tenant])
    active = _active.get()
    if active is None or not ids <= active:
        raise ScopeError(f"tenant {next(iter(ids))} is outside the active scope")
    token = _active.set(ids)
    try:
        yield
    finally:
        _active.reset(token)


@contextmanager
def scopes_disabled() -> Iterator[None]:
    """Lift the Python guard for system work across tenants: the manager neither refuses nor filters.
    Row-level security still applies."""
    token = _disabled.set(True)
    try:
        yield
    finally:
        _disabled.reset(token)


def for_each_batch(
    *,
    tenant: Tenant,
    rows: Callable[[], QuerySet[M]],
    each: Callable[[list[M]], Any],
    batch_size: int,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Walk `rows()` of `tenant` in id order, `batch_size` at a time, and call `each` on every batch
    inside the tenant's scope, one transaction a batch (a walk stopped half-way keeps the batches
    done); `progress` hears each batch's size. Returns how many rows were walked."""
    done = 0
    after: Any = None
    while True:
        with tenant_scope(tenant):
            qs = rows()
            if after is not None:
                qs = qs.filter(id__gt=after)
            batch = list(qs.order_by("id")[:batch_size])
            if not batch:
                return done
            each(batch)
        after = batch[-1].pk
        done += len(batch)
        if progress is not None:
            progress(len(batch))
