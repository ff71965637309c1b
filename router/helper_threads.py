"""Work beside the request: a function run on a helper thread with its own database connection, in
its own transaction under the same tenant scope (row-level security included).

- `read_beside`: a read that the request needs. A context request reads several layers that do not
  depend on each other; on the request thread they queue behind one another, each waiting on its
  PostgreSQL backend. Beside it, two backends work at once.
- `write_after_commit`: bookkeeping that the answer does not need (a context's trace items), written
  once the request's transaction has committed, by one writer thread, so that the client is not kept
  waiting for it. Writes queue in memory: `close_readers` (worker exit) waits for them, a crash loses
  them, so only what may be lost goes this way.

ENGRAM["PARALLEL_READERS"] read threads per process (and then one writer); 0 runs both in line on the
caller's thread, at once (the test suite does so: its data lives in a transaction no other connection
can see).

A helper's connection follows the request cycle's rules: it is checked and closed when past
CONN_MAX_AGE or broken before each use, and `close_readers` closes every helper's connection.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper

from tenants.scope import active_tenant_ids, tenant_scope

P = ParamSpec("P")
T = TypeVar("T")

logger = logging.getLogger(__name__)

# A write after commit is bookkeeping that may be lost (see the module's docstring): its transaction's
# commit need not wait for the WAL to reach the disk. Set with the tenant's setting, in one round trip.
WRITE_SETTINGS = {"synchronous_commit": "off"}

# Writes waiting for the writer beyond this are done in line by the request that adds one: the queue
# stays bounded when the writer falls behind, and the requests that caused it pay for it.
MAX_PENDING_WRITES = 64

_pool: ThreadPoolExecutor | None = None
_writer: ThreadPoolExecutor | None = None
_pending_writes = 0
_lock = threading.Lock()
# Every helper's connection wrapper (with its thread's name), so that close_readers can close them once
# the helpers have stopped.
_wrappers: dict[int, tuple[str, BaseDatabaseWrapper]] = {}


def _forget_after_fork() -> None:
    # A forked child (a gunicorn or Celery worker) inherits the executors but not their threads.
    global _pool, _writer, _pending_writes
    _pool = _writer = None
    _pending_writes = 0
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


def _scoped(
    ids: frozenset[uuid.UUID], settings: dict[str, str] | None, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs
) -> T:
    close_old_connections()
    wrapper = connections[DEFAULT_DB_ALIAS]  # this thread's own
    with _lock:
        _wrappers[id(wrapper)] = (threading.current_thread().name, wrapper)
    try:
        with tenant_scope(*ids, also=settings):
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
        return _scoped(ids, None, fn, *args, **kwargs)

    return pool.submit(run)


def _write_done(future: Future[None]) -> None:
    global _pending_writes
    with _lock:
        _pending_writes -= 1
    if (exc := future.exception()) is not None:
        logger.error("a write after commit failed", exc_info=exc)


def write_after_commit(fn: Callable[P, None], /, *args: P.args, **kwargs: P.kwargs) -> None:
    """fn(*args, **kwargs) once the caller's transaction commits (never if it rolls back), on the writer
    thread, in a transaction of its own under the caller's tenant scope, whose commit does not wait for
    the disk (WRITE_SETTINGS). In line and at once, in the caller's transaction, when no helpers are
    configured; in line after the commit, in a transaction of its own, when MAX_PENDING_WRITES are
    already waiting."""
    ids = active_tenant_ids()
    if not ids:
        raise RuntimeError("write_after_commit needs an active tenant scope to hand on")
    if _executor() is None:
        fn(*args, **kwargs)
        return

    def submit() -> None:
        global _writer, _pending_writes
        with _lock:
            if _pending_writes >= MAX_PENDING_WRITES:
                writer = None
            else:
                if _writer is None:
                    _writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-write")
                writer = _writer
                _pending_writes += 1
        if writer is None:
            with tenant_scope(*ids, also=WRITE_SETTINGS):
                fn(*args, **kwargs)
            return

        def run() -> None:
            _scoped(ids, WRITE_SETTINGS, fn, *args, **kwargs)

        writer.submit(run).add_done_callback(_write_done)

    transaction.on_commit(submit)


def close_readers() -> None:
    """Stop the helpers, once the writer has written what it holds, and close their connections
    (worker exit, tests)."""
    global _pool, _writer
    with _lock:
        pool, _pool = _pool, None
        writer, _writer = _writer, None
    for executor in (writer, pool):
        if executor is not None:
            executor.shutdown(wait=True)
    with _lock:
        wrappers = [wrapper for _, wrapper in _wrappers.values()]
        _wrappers.clear()
    for wrapper in wrappers:
        # Opened by a helper that has now stopped: closing it from here is the only way left.
        wrapper.inc_thread_sharing()
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()
