"""Reads beside the request: a read-only function run on a helper thread with its own database
connection, in its own transaction under the same tenant scope (row-level security included).

A context request reads several layers that do not depend on each other; on the request thread they
queue behind one another, each waiting on its PostgreSQL backend. Beside it, two backends work at once.
ENGRAM["PARALLEL_READERS"] threads per process; 0 runs the function on the caller's thread when it is
submitted (the test suite does so: its data lives in a transaction no other connection can see).

A helper's connection follows the request cycle's rules: it is checked and closed when past
CONN_MAX_AGE or broken before each read, and `close_readers` closes every helper's connection.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from tenants.scope import active_tenant_ids, tenant_scope

P = ParamSpec("P")
T = TypeVar("T")

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
# Every helper's connection wrapper, so that close_readers can close them once the helpers have stopped.
_wrappers: dict[int, BaseDatabaseWrapper] = {}


def _forget_after_fork() -> None:
    # A forked child (a gunicorn or Celery worker) inherits the executor but not its threads.
    global _pool
    _pool = None
    _wrappers.clear()


os.register_at_fork(after_in_child=_forget_after_fork)


def _executor() -> ThreadPoolExecutor | None:
    global _pool
    size = int(settings.ENGRAM.get("PARALLEL_READERS", 0))
    if size <= 0:
        return None
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="engram-read")
        return _pool


def _scoped(ids: frozenset[uuid.UUID], fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    close_old_connections()
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's own
    with _lock:
        _wrappers[id(wrapper)] = wrapper
    try:
        with tenant_scope(*ids):
            return fn(*args, **kwargs)
    finally:
        close_old_connections()


def read_beside(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
    """fn(*args, **kwargs) on a helper thread, scoped to the caller's active tenants. `fn` must only
    read: it runs in a transaction of its own, which sees what was committed before it began."""
    ids = active_tenant_ids()
    if not ids:
        raise RuntimeError("read_beside needs an active tenant scope to hand on")
    pool = _executor()
    if pool is None:
        done: Future[T] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - handed to the caller through the future, as a thread would
            done.set_exception(exc)
        return done

    def run() -> T:
        return _scoped(ids, fn, *args, **kwargs)

    return pool.submit(run)


def close_readers() -> None:
    """Stop the helpers and close their connections (worker exit, tests)."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True)
    with _lock:
        wrappers = list(_wrappers.values())
        _wrappers.clear()
    for wrapper in wrappers:
        # Opened by a helper that has now stopped: closing it from here is the only way left.
        wrapper.inc_thread_sharing()
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()
