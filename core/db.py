"""Database helpers that know nothing of our tables: transaction-local settings, lock keys and array
literals.

Every transaction-local setting of the project goes through here, so that the scheme is in one place
(how a setting reaches the server, how a lock's key is made)."""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connections
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from psycopg import Cursor, sql

_NAME = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$")


def set_local(name: str, value: str, *, using: str = "default") -> None:
    """Set configuration parameters until the current transaction ends (outside one: until the
    statement ends, which is useless; callers are inside a transaction).

    `SET LOCAL`, not `set_config(..., true)`: with Citus and `citus.propagate_set_commands = local`,
    the coordinator replays a transaction's SET LOCAL commands on the worker connections it opens, so
    the row-level security policies and the vector scan settings see the same values on every shard;
    a set_config call is an ordinary function and stays on the coordinator (docs/scale-out.md)."""
    set_locals({name: value}, using=using)


def set_locals(values: dict[str, str], *, using: str = "default") -> None:
    """Several settings in one round trip (a simple-protocol batch of SET LOCAL commands)."""
    conn = connections[using]
    with conn.cursor() as cursor:
        cursor.execute("; ".join(_set_local_commands(values, using=using)))


def _set_local_commands(values: dict[str, str], *, using: str) -> list[str]:
    conn = connections[using]
    conn.ensure_connection()
    statements = []
    for name, value in values.items():
        if not _NAME.match(name):
            raise ValueError(f"not a configuration parameter name: {name!r}")
        literal = sql.Literal(str(value)).as_string(conn.connection)
        statements.append(f"SET LOCAL {name} = {literal}")
    return statements


@contextmanager
def set_locals_with_next_statement(values: dict[str, str], *, using: str = "default") -> Iterator[None]:
    """SET LOCAL `values` in the same round trip as the next statement the block runs on the connection
    (an ORM query among them), sent in front of it as fetch_after_set_locals sends them; they hold
    for the rest of the transaction, as set_locals' do. A block that runs no statement sets them as
    it ends."""
    commands = _set_local_commands(values, using=using)
    sent = False

    def prepend(execute: Any, query: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        nonlocal sent
        if sent or many:
            return execute(query, params, many, context)
        sent = True
        escaped = [command.replace("%", "%%") for command in commands] if params is not None else commands
        result = execute("; ".join([*escaped, query]), params, many, context)
        # One result per command: the statement's is the last, where its caller reads it.
        for _ in commands:
            context["cursor"].nextset()
        return result

    with connections[using].execute_wrapper(prepend):
        yield
    if not sent:
        with connections[using].cursor() as cursor:
            cursor.execute("; ".join(commands))


def fetch_after_set_locals(
    values: dict[str, str], query: str, params: Sequence[Any] | dict[str, Any], *, using: str = "default"
) -> list[tuple[Any, ...]]:
    """The rows of `query`, sent in one round trip after SET LOCAL of `values` (set_local), which hold
    for the rest of the transaction as if set on their own. The parameters are bound client-side
    (Django's default), so the batch goes as one simple-protocol message."""
    commands = [command.replace("%", "%%") for command in _set_local_commands(values, using=using)]
    with connections[using].cursor() as cursor:
        cursor.execute("; ".join([*commands, query]), params)
        # One result per command: the query's is the last.
        for _ in commands:
            cursor.nextset()
        return cursor.fetchall()


def fetch_prepared(
    query: str, params: Sequence[Any] | dict[str, Any], *, using: str = "default"
) -> list[tuple[Any, ...]]:
    """The rows of `query`, a lookup by key whose plan does not depend on its parameters' values, with
    its parameters bound by the server, so that the connection prepares it once it has run it
    `prepare_threshold` times (DATABASES OPTIONS, from DB_PREPARE_THRESHOLD) and PostgreSQL parses
    and plans it once per connection instead of on every request.

    Bound client-side as every other statement (Django's default) when the connection prepares
    nothing (`prepare_threshold` None, Django's default, which a transaction-mode pooler needs: the
    next transaction may get another server connection, without the statement), and when an execute
    wrapper is installed: set_locals_with_next_statement sends its SET LOCAL commands in front of the
    next statement as one batch, which a statement bound by the server cannot be part of."""
    conn = connections[using]
    conn.ensure_connection()
    if conn.connection.prepare_threshold is None or conn.execute_wrappers:
        with conn.cursor() as cursor:
            cursor.execute(query, params)
            return cursor.fetchall()
    with _server_bound_cursor(using) as cursor:
        cursor.execute(query, params)
        return cursor.fetchall()


def execute_bound_by_server(query: str, params: Sequence[Any] | dict[str, Any], *, using: str = "default") -> int:
    """Run `query` (a write) with its parameters bound by the server: the statement's text and its
    values travel apart, so that a large value (a context's trace documents, tens of kilobytes) is not
    quoted into the text by the driver, nor scanned back out of it by PostgreSQL. Prepared as
    fetch_prepared's statements are, when the connection prepares. The number of rows it changed.

    Its own statement, always: it cannot carry SET LOCAL commands in front of it
    (set_locals_with_next_statement fails on it), so the settings it needs are set before it."""
    connections[using].ensure_connection()
    with _server_bound_cursor(using) as cursor:
        cursor.execute(query, params)
        return int(cursor.rowcount)


def _server_bound_cursor(using: str) -> CursorWrapper:
    # A server-binding cursor in Django's own wrapper, as Django wraps its cursors (thread check, the
    # query log where it is kept, database errors mapped).
    conn = connections[using]
    conn.validate_thread_sharing()
    raw = Cursor(conn.connection)
    wrapper = CursorDebugWrapper if conn.queries_logged else CursorWrapper
    return wrapper(raw, conn)


def lock_key(*parts: object) -> int:
    """The signed 64-bit key of a named resource, e.g. ("fact", tenant_id, entity, attr)."""
    digest = hashlib.blake2b("|".join(str(part) for part in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def array_literal(values: Iterable[int | float | uuid.UUID]) -> str:
    """An array of numbers or UUIDs as PostgreSQL's text form, to bind with a cast (`%s::bigint[]`):
    the driver dumps a list element by element in Python, and the router sends arrays of hundreds of
    ids a request. Only numbers and UUIDs, whose text forms need no quoting; anything else is refused."""
    parts = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | uuid.UUID):
            raise TypeError(f"not a number or a UUID: {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        parts.append(str(value))
    return "{" + ",".join(parts) + "}"
