"""Database helpers that know nothing of our tables: transaction-local settings and advisory locks.

Every transaction-local setting and every advisory lock of the project goes through here, so that the
scheme is in one place (how a setting reaches the server, how a lock's key is made)."""

from __future__ import annotations

import hashlib

from django.db import connections


def set_local(name: str, value: str, *, using: str = "default") -> None:
    """Set a configuration parameter until the current transaction ends (outside one: until the
    statement ends, which is useless; callers are inside a transaction)."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT set_config(%s, %s, true)", [name, value])


def lock_key(*parts: object) -> int:
    """The signed 64-bit advisory lock key of a named resource, e.g. ("fact", tenant_id, entity, attr)."""
    digest = hashlib.blake2b("|".join(str(part) for part in parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def advisory_xact_lock(*parts: object, using: str = "default") -> None:
    """Serialise every transaction that names the same resource until this transaction ends."""
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [lock_key(*parts)])
