"""Working memory: one scratchpad per session, a JSON document in Redis with a TTL and a version.

Layout in Redis (all writes go through Lua scripts, so each is atomic):
- `engram:scratch:<tenant>:<session>`: the live hash (document, version, generation, times), with
  the tenant's TTL (scratchpad_ttl_seconds), renewed on every write;
- `engram:scratch-shadow:<tenant>:<session>`: the same hash, living SCRATCHPAD_SHADOW_GRACE_SECONDS
  longer than the live one, so that expiry loses nothing: the periodic sweep turns it into a
  `summary` episode, then drops it (and a shadow the sweep never reached expires on its own);
- `engram:scratch-expiry`: a sorted set of `<tenant>:<session>` by expiry time, the sweep's index;
- `engram:scratch-orphans`: shadows of expired scratchpads that a new write replaced before the
  sweep came by; the sweep summarises them too.

Versions start at 1 and grow by one per write; `If-Match` compares them (412 when stale). A
scratchpad created after an earlier one ended gets a new `generation`, and the summary episode's
external_id is `scratchpad:<generation>:<version>`, so a summary is stored once however often a
sweep or a session end is retried.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import NotFound, PayloadTooLarge, PreconditionFailed, ValidationProblem
from core.redis import get_redis
from episodic.models import Episode, EpisodeKind, Session
from episodic.services import episodes_append
from episodic.validation import check_session_id
from tenants.locks import subject_lock, tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import tenant_scope

INDEX_KEY = "engram:scratch-expiry"
ORPHANS_KEY = "engram:scratch-orphans"
PATCH_RETRIES = 5


class ScratchpadSummaryReason(StrEnum):
    SESSION_END = "session_end"
    DELETED = "deleted"
    EXPIRED = "expired"


@dataclass(frozen=True)
class Scratchpad:
    document: dict[str, Any]
    version: int
    updated_at: datetime
    session: str = ""
    created_at: datetime | None = None
    expires_at: datetime | None = None
    generation: str = ""


@dataclass(frozen=True)
class ScratchpadDeletion:
    version: int
    summary_episode: Episode | None


# ARGV: expected version ('' any, '0' must be absent), document, now, ttl ms, expiry score, member, new generation,
# shadow grace ms.
_WRITE = """
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= version then return {0, version} end
if version == 0 then
  if redis.call('EXISTS', KEYS[2]) == 1 then
    local old = redis.call('HGETALL', KEYS[2])
    table.insert(old, 'member')
    table.insert(old, ARGV[6])
    redis.call('RPUSH', KEYS[4], cjson.encode(old))
    redis.call('DEL', KEYS[2])
  end
  redis.call('HSET', KEYS[1], 'created_at', ARGV[3], 'generation', ARGV[7])
end
version = version + 1
redis.call('HSET', KEYS[1], 'document', ARGV[2], 'version', version, 'updated_at', ARGV[3], 'expires_at', ARGV[5])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], unpack(redis.call('HGETALL', KEYS[1])))
redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4]) + tonumber(ARGV[8]))
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[6])
return {1, version}
"""

# ARGV: expected version ('' any), expected generation ('' any), member. {1, v} deleted, {0, 0} absent, {-1, v} stale.
_DELETE = """
local version = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if version == 0 then return {0, 0} end
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= version then return {-1, version} end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'generation') ~= ARGV[2] then return {-1, version} end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[3])
return {1, version}
"""

# After an expired scratchpad was summarised: drop its shadow unless a new write came in meanwhile.
# ARGV: generation, version, member.
_FINISH_EXPIRED = """
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('HGET', KEYS[1], 'generation') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'version') ~= ARGV[2] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[3])
return 1
"""


def _member(tenant_id: Any, session: str) -> str:
    return f"{tenant_id}:{session}"


def _live_key(member: str) -> str:
    return f"engram:scratch:{member}"


def _shadow_key(member: str) -> str:
    return f"engram:scratch-shadow:{member}"


def _decode(raw: Mapping[bytes | str, bytes | str], session: str) -> Scratchpad | None:
    data = {
        (k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v) for k, v in raw.items()
    }
    if "version" not in data:
        return None
    return Scratchpad(
        document=json.loads(data["document"]),
        version=int(data["version"]),
        updated_at=datetime.fromisoformat(data["updated_at"]),
        session=session,
        created_at=datetime.fromisoformat(data["created_at"]) if data.get("created_at") else None,
        expires_at=datetime.fromtimestamp(float(data["expires_at"]), tz=UTC) if data.get("expires_at") else None,
        generation=data.get("generation", ""),
    )


def _require_session(tenant: Tenant, session_external_id: str, *, writing: bool = False) -> Session:
    """The session, or 404. `writing` (inside a transaction): its subject's slot is taken too
    (tenants.locks), and the session read again under it, so that working memory is never written
    beside an erasure of its subject, which would leave it behind."""
    check_session_id(session_external_id)
    session = Session.objects.filter(external_id=session_external_id).first()
    if session is not None and writing:
        subject_lock(tenant.id, [session.subject])
        session = Session.objects.filter(external_id=session_external_id).first()
    if session is None:
        raise NotFound(f"No session {session_external_id!r}.")
    return session


def _encode_document(document: Any) -> str:
    if not isinstance(document, dict):
        raise ValidationProblem.at("/", "A scratchpad is a JSON object.")
    encoded = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    if "\x00" in encoded or "\\u0000" in encoded:
        # It would become a summary episode, and PostgreSQL text cannot hold NUL.
        raise ValidationProblem.at("/", "Null characters are not allowed.")
    limit = settings.ENGRAM["MAX_SCRATCHPAD_BYTES"]
    size = len(encoded.encode())
    if size > limit:
        raise PayloadTooLarge(
            f"The scratchpad would be {size} bytes; the limit is {limit}.",
            errors=[{"pointer": "/", "detail": f"{size} bytes; the limit is {limit}."}],
        )
    return encoded


def _write(*, tenant: Tenant, session_external_id: str, document: dict[str, Any], expected: str) -> tuple[bool, int]:
    member = _member(tenant.id, session_external_id)
    ttl = max(1, int(tenant.config.scratchpad_ttl_seconds))
    expires = time.time() + ttl
    ok, version = get_redis().eval(
        _WRITE,
        4,
        _live_key(member),
        _shadow_key(member),
        INDEX_KEY,
        ORPHANS_KEY,
        expected,
        _encode_document(document),
        timezone.now().isoformat(),
        ttl * 1000,
        repr(expires),
        member,
        secrets.token_hex(6),
        int(settings.ENGRAM["SCRATCHPAD_SHADOW_GRACE_SECONDS"]) * 1000,
    )
    return bool(ok), int(version)


def _read(tenant: Tenant, session_external_id: str) -> Scratchpad | None:
    return _decode(get_redis().hgetall(_live_key(_member(tenant.id, session_external_id))), session_external_id)


def scratchpad_get(*, tenant: Tenant, session_external_id: str) -> Scratchpad | None:
    """The live scratchpad, or None when there is none (never written, deleted or expired)."""
    return _read(tenant, session_external_id)


def scratchpad_get_or_404(*, tenant: Tenant, session_external_id: str) -> Scratchpad:
    _require_session(tenant, session_external_id)
    pad = _read(tenant, session_external_id)
    if pad is None:
        raise NotFound(f"Session {session_external_id!r} has no scratchpad.")
    return pad


@transaction.atomic
def scratchpad_put(
    *,
    tenant: Tenant,
    session_external_id: str,
    document: dict[str, Any],
    if_match: int | None = None,
    if_none_match: bool = False,
) -> tuple[Scratchpad, bool]:
    """Replace (or create) the scratchpad. Returns it and whether it was created."""
    _require_session(tenant, session_external_id, writing=True)
    expected = "0" if if_none_match else ("" if if_match is None else str(if_match))
    ok, version = _write(tenant=tenant, session_external_id=session_external_id, document=document, expected=expected)
    if not ok:
        raise PreconditionFailed(_stale_detail(version, if_match, if_none_match), current_version=version)
    pad = _read(tenant, session_external_id)
    assert pad is not None
    return pad, version == 1


def _stale_detail(current: int, if_match: int | None, if_none_match: bool) -> str:
    if if_none_match:
        return f"The scratchpad already exists (version {current})."
    if current == 0:
        return "The scratchpad does not exist (any more)."
    return f"The scratchpad is at version {current}, not {if_match}."


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396 JSON merge patch: objects merge recursively, null removes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


@transaction.atomic
def scratchpad_patch(
    *, tenant: Tenant, session_external_id: str, patch: dict[str, Any], if_match: int | None = None
) -> Scratchpad:
    """Apply a JSON merge patch. Without If-Match a concurrent write is retried on the newer version;
    with it, a stale version is a 412."""
    _require_session(tenant, session_external_id, writing=True)
    if not isinstance(patch, dict):
        raise ValidationProblem.at("/", "A merge patch for a scratchpad is a JSON object.")
    # Patches of one scratchpad take turns (its slot, tenants.locks order 2b): eight at once each read
    # the version another had just written and, retried, ran out of tries with a 412 that no If-Match
    # asked for. The retries below are left for writes that take no turn (PUT, expiry).
    tenant_xact_lock(tenant.id, "scratchpad", session_external_id)
    for _ in range(PATCH_RETRIES):
        current = _read(tenant, session_external_id)
        if current is None:
            raise NotFound(f"Session {session_external_id!r} has no scratchpad to patch.")
        if if_match is not None and current.version != if_match:
            raise PreconditionFailed(_stale_detail(current.version, if_match, False), current_version=current.version)
        document = merge_patch(current.document, patch)
        ok, version = _write(
            tenant=tenant, session_external_id=session_external_id, document=document, expected=str(current.version)
        )
        if ok:
            pad = _read(tenant, session_external_id)
            assert pad is not None
            return pad
        if if_match is not None:
            raise PreconditionFailed(_stale_detail(version, if_match, False), current_version=version)
    raise PreconditionFailed("The scratchpad kept changing under this patch; retry.")


def _delete_if_unchanged(member: str, version: int | None, generation: str | None) -> tuple[int, int]:
    status, current = get_redis().eval(
        _DELETE,
        3,
        _live_key(member),
        _shadow_key(member),
        INDEX_KEY,
        "" if version is None else str(version),
        generation or "",
        member,
    )
    return int(status), int(current)


def _render(document: dict[str, Any], *, session: str, version: int, reason: str) -> str:
    lines = [f"Working memory of session {session} (scratchpad version {version}, {reason.replace('_', ' ')}):"]
    for key, value in document.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
        lines.append(f"- {key}: {text}")
    content = "\n".join(lines)
    limit = settings.ENGRAM["MAX_TEXT_CHARS"]
    return content if len(content) <= limit else content[: limit - 1] + "…"


def _append_summary(
    *, tenant: Tenant, session: Session, pad: Scratchpad, reason: ScratchpadSummaryReason, occurred_at: datetime
) -> Episode | None:

    item = {
        "subject": session.subject,
        "session": session.external_id,
        "agent": session.agent,
        "kind": EpisodeKind.SUMMARY,
        "role": "working_memory",
        "content": _render(pad.document, session=session.external_id, version=pad.version, reason=reason),
        "payload": {
            "scratchpad": pad.document,
            "version": pad.version,
            "generation": pad.generation,
            "reason": str(reason),
            "updated_at": pad.updated_at.isoformat(),
        },
        "occurred_at": occurred_at,
        "external_id": f"scratchpad:{pad.generation}:{pad.version}",
        "entities": [],
        "topics": [],
    }
    created = episodes_append(tenant=tenant, items=[item], skip_existing=True)
    return created[0] if created else None


@transaction.atomic
def scratchpad_summarise(
    *, tenant: Tenant, session_external_id: str, reason: ScratchpadSummaryReason, at: datetime | None = None
) -> Episode | None:
    """Turn the live scratchpad into a `summary` episode of its session (dated now, or `at`: when a
    replayed session ended) and drop it once the episode is committed (if nobody wrote to it
    meanwhile). None when there is no scratchpad."""
    session = _require_session(tenant, session_external_id, writing=True)
    pad = _read(tenant, session_external_id)
    if pad is None:
        return None
    episode = _append_summary(tenant=tenant, session=session, pad=pad, reason=reason, occurred_at=at or timezone.now())
    member = _member(tenant.id, session_external_id)
    version, generation = pad.version, pad.generation
    transaction.on_commit(lambda: _delete_if_unchanged(member, version, generation))
    return episode


@transaction.atomic
def scratchpad_delete(
    *, tenant: Tenant, session_external_id: str, summarise: bool = False, if_match: int | None = None
) -> ScratchpadDeletion:
    """Delete the scratchpad; with `summarise` its content first becomes a summary episode."""
    _require_session(tenant, session_external_id, writing=True)
    pad = _read(tenant, session_external_id)
    if pad is None:
        raise NotFound(f"Session {session_external_id!r} has no scratchpad.")
    if if_match is not None and pad.version != if_match:
        raise PreconditionFailed(_stale_detail(pad.version, if_match, False), current_version=pad.version)
    if summarise:
        episode = scratchpad_summarise(
            tenant=tenant, session_external_id=session_external_id, reason=ScratchpadSummaryReason.DELETED
        )
        return ScratchpadDeletion(version=pad.version, summary_episode=episode)
    status, current = _delete_if_unchanged(_member(tenant.id, session_external_id), if_match, None)
    if status == -1:
        raise PreconditionFailed(_stale_detail(current, if_match, False), current_version=current)
    if status == 0:
        raise NotFound(f"Session {session_external_id!r} has no scratchpad.")
    return ScratchpadDeletion(version=current, summary_episode=None)


def _orphans_of(members: set[str]) -> dict[bytes, str]:
    """The orphaned shadows (JSON arrays of field, value pairs) of these members, with their member."""
    found = {}
    for raw in get_redis().lrange(ORPHANS_KEY, 0, -1):
        flat = json.loads(raw)
        member = dict(zip(flat[::2], flat[1::2], strict=True)).get("member")
        if member in members:
            found[raw] = member
    return found


def scratchpads_held(*, tenant: Tenant, session_external_ids: list[str]) -> int:
    """How many of these sessions have working memory in Redis: live, shadow or orphaned."""
    redis = get_redis()
    members = {_member(tenant.id, s) for s in session_external_ids}
    held = {m for m in members if redis.exists(_live_key(m), _shadow_key(m))}
    return len(held | set(_orphans_of(members).values()))


def scratchpads_erase(*, tenant: Tenant, session_external_ids: list[str]) -> int:
    """Erasure: drop every copy of these sessions' working memory (live, shadow, orphaned), no
    summary. Returns how many sessions had one."""
    redis = get_redis()
    held = scratchpads_held(tenant=tenant, session_external_ids=session_external_ids)
    members = {_member(tenant.id, s) for s in session_external_ids}
    for member in members:
        pipe = redis.pipeline()
        pipe.delete(_live_key(member), _shadow_key(member))
        pipe.zrem(INDEX_KEY, member)
        pipe.execute()
    for raw in _orphans_of(members):
        redis.lrem(ORPHANS_KEY, 0, raw)
    return held


def _summarise_expired(member: str, raw: Mapping[Any, Any]) -> str:
    """Summarise one expired scratchpad state. Returns 'summarised', 'dropped' or 'kept'."""
    tenant_id, _, session_external_id = member.partition(":")
    pad = _decode(raw, session_external_id)
    tenant = Tenant.objects.filter(id=tenant_id, active=True).first()
    if pad is None or tenant is None:
        return "dropped"
    with tenant_scope(tenant):
        session = Session.objects.filter(external_id=session_external_id).first()
        if session is None:  # erased meanwhile: its working memory goes with it
            return "dropped"
        _append_summary(
            tenant=tenant,
            session=session,
            pad=pad,
            reason=ScratchpadSummaryReason.EXPIRED,
            occurred_at=pad.expires_at or timezone.now(),
        )
    return "summarised"


def scratchpads_sweep_expired(*, now: float | None = None, limit: int = 500) -> dict[str, int]:
    """Turn every expired scratchpad into a summary episode (the periodic sweep). Safe to run twice at
    once: summaries are keyed by generation and version, and shadows are dropped only if unchanged."""
    redis = get_redis()
    cutoff = time.time() if now is None else now
    counts = {"summarised": 0, "dropped": 0, "kept": 0}
    for raw_member in redis.zrangebyscore(INDEX_KEY, "-inf", cutoff, start=0, num=limit):
        member = raw_member.decode() if isinstance(raw_member, bytes) else str(raw_member)
        if redis.exists(_live_key(member)):
            counts["kept"] += 1  # renewed, or its TTL has a few milliseconds left
            continue
        raw = redis.hgetall(_shadow_key(member))
        if not raw:
            redis.zrem(INDEX_KEY, member)
            continue
        outcome = _summarise_expired(member, raw)
        counts[outcome] += 1
        data = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        redis.eval(
            _FINISH_EXPIRED,
            3,
            _shadow_key(member),
            _live_key(member),
            INDEX_KEY,
            data.get("generation", b""),
            data.get("version", b""),
            member,
        )
    for raw_orphan in redis.lrange(ORPHANS_KEY, 0, limit - 1):
        flat = json.loads(raw_orphan)
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        member = fields.pop("member")
        counts[_summarise_expired(member, fields)] += 1
        redis.lrem(ORPHANS_KEY, 1, raw_orphan)
    return counts
