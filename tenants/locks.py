"""Transaction-scoped locks on a tenant's resources, taken as row locks in the tenant's own shard.

`pg_advisory_xact_lock` serialises only the transactions of one PostgreSQL node; once tenant tables are
distributed (docs/scale-out.md) two coordinators, or a coordinator and a worker, could both hold "the"
lock. A row of tenants_tenantlock lives on the tenant's shard, so locking it serialises every
transaction that names the resource, wherever it runs.

A resource maps to one of 65,536 slots per tenant: the table stays small, holds nothing from which a
subject could be read back (erasure has nothing to remove), and two resources sharing a slot only
wait for each other now and then.

Lock order, everywhere (two transactions taking two locks in opposite orders deadlock, and PostgreSQL
answers one of them with an error):
1. tenant-wide slots: "consolidation", "archive", "entity_alias";
2. a subject's slot ("subject", the exact subject id; `subject_lock`), several in slot order: shared by
   every writer of the subject's data (episodes, session ends, scratchpads, facts, context traces,
   consolidation batches), exclusive for its erasure, which thus never runs beside a write of its
   subject: a write waits for the erasure and is then a new write, and the erasure waits for the
   writes under way (before, an episode appended during an erasure broke its session's foreign key:
   issue 40); a session end takes it before the session's row;
   2b. a scratchpad's slot ("scratchpad", session id), after its subject's: merge patches of one
   scratchpad take turns (episodic.scratchpad.scratchpad_patch);
3. a subject's erasure slot ("erasure", subject hash), then its ErasureRequest rows (filing a request
   takes this one alone; the erasure takes it after the subject's slot, to record its end);
4. a fact's slot ("fact", subject, entity, attribute), before any row of semantic_fact is locked or
   written: `fact_upsert` takes the slot and then writes rows, so `semantic.services.lock_fact` takes
   the slot before it locks the fact's row (it once did the reverse: tests/concurrency/test_facts.py);
5. rows, each table's in primary-key order where a statement locks several.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from django.db import connections

from core.db import lock_key

SLOTS = 1 << 16

# One statement: inserting the slot's row the first time, or updating it in place, leaves it locked
# until the transaction ends; a concurrent locker of the same slot waits on it either way.
_LOCK = (
    "INSERT INTO tenants_tenantlock (tenant_id, slot) VALUES (%s, %s) "
    "ON CONFLICT (tenant_id, slot) DO UPDATE SET slot = EXCLUDED.slot"
)


def slot_of(*parts: object) -> int:
    return lock_key(*parts) % SLOTS


def tenant_xact_lock(tenant_id: uuid.UUID, *parts: object, using: str = "default") -> None:
    """Serialise every transaction that names the same (tenant, resource) until this one ends. The
    caller is inside a transaction and the tenant's scope (row-level security applies)."""
    with connections[using].cursor() as cursor:
        cursor.execute(_LOCK, [tenant_id, slot_of(tenant_id, *parts)])


_ENSURE = "INSERT INTO tenants_tenantlock (tenant_id, slot) VALUES (%s, %s) ON CONFLICT (tenant_id, slot) DO NOTHING"
_SHARE = "SELECT slot FROM tenants_tenantlock WHERE tenant_id = %s AND slot = %s FOR SHARE"


def subject_lock(
    tenant_id: uuid.UUID, subjects: Iterable[str], *, exclusive: bool = False, using: str = "default"
) -> None:
    """The subjects' slots (order 2 above) until the transaction ends: shared for a writer of their data,
    so that writers do not wait for each other; `exclusive` for an erasure, which waits for the writers
    under way and holds back new ones. Several slots are taken in slot order (two writers of the same two
    subjects never wait for each other crosswise). A subject id is hashed exactly as given."""
    slots = sorted({slot_of(tenant_id, "subject", subject) for subject in subjects if subject})
    with connections[using].cursor() as cursor:
        for slot in slots:
            if exclusive:
                cursor.execute(_LOCK, [tenant_id, slot])
                continue
            cursor.execute(_SHARE, [tenant_id, slot])
            if cursor.fetchone() is None:
                # The slot's first use: create its row (or wait for a concurrent creator), then share it.
                cursor.execute(_ENSURE, [tenant_id, slot])
                cursor.execute(_SHARE, [tenant_id, slot])
