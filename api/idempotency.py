"""Idempotency-Key for POST: the first successful answer is stored with the write and replayed.

- same key, same request: the stored answer again, with `Idempotent-Replayed: true`;
- same key, another request: 422;
- same key while the first is still being processed: 409.
The stored answer commits in the same transaction as the write it describes, so the two cannot part.

Each record lists the subjects its stored answer is about, so that erasure finds it: those named in
the request body, those a view resolved (`idempotency_subjects`: an outcome names only its session,
a feedback only its trace), and every `subject` or `entity` anywhere in the stored answer. Reading the
answer is the safety net that cannot drift from what is stored; the view's declaration covers what
the answer reaches only by id. Records older than ENGRAM_IDEMPOTENCY_TTL_HOURS are purged on a schedule.

Erasure deletes those records and leaves a tombstone per key (its hash, nothing else): a replay of an
erased request answers 409 instead of running again and writing the erased subject's data back.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from typing import Any

from django.db import IntegrityError, transaction
from rest_framework.request import Request
from rest_framework.response import Response

from api.auth import request_tenant
from core.errors import Conflict, Unprocessable, ValidationProblem
from core.redis import get_redis
from tenants.models import IdempotencyRecord, IdempotencyTombstone

HEADER = "Idempotency-Key"
IN_FLIGHT_SECONDS = 300
SUBJECT_KEYS = ("subject", "entity")
_DECLARED = "_engram_idempotency_subjects"


def request_fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def subjects_in(data: Any) -> list[str]:
    """Subject ids named anywhere at the top of a request body (or of a batch's items)."""
    found: set[str] = set()
    if isinstance(data, dict):
        if isinstance(data.get("subject"), str):
            found.add(data["subject"])
        for value in data.values():
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, dict) and isinstance(item.get("subject"), str):
                        found.add(item["subject"])
    return sorted(found)


def subjects_in_answer(data: Any, *, depth: int = 0) -> set[str]:
    """Every non-empty `subject` or `entity` string anywhere in a stored answer."""
    found: set[str] = set()
    if depth > 20:
        return found
    if isinstance(data, dict):
        for key, value in data.items():
            if key in SUBJECT_KEYS and isinstance(value, str) and value:
                found.add(value)
            elif isinstance(value, dict | list):
                found |= subjects_in_answer(value, depth=depth + 1)
    elif isinstance(data, list):
        for item in data:
            found |= subjects_in_answer(item, depth=depth + 1)
    return found


def idempotency_subjects(request: Request, *subjects: str | None) -> None:
    """Declare the subjects a view resolved for this request (its answer may name them only by id)."""
    declared: set[str] = getattr(request, _DECLARED, set())
    declared |= {s for s in subjects if s}
    setattr(request, _DECLARED, declared)


def record_subjects(request: Request, answer: Any) -> list[str]:
    body = {s for s in subjects_in(request.data) if s}
    return sorted(body | getattr(request, _DECLARED, set()) | subjects_in_answer(answer))


def idempotent(method: Callable[..., Response]) -> Callable[..., Response]:
    @functools.wraps(method)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if not key:
            return method(view, request, *args, **kwargs)
        if len(key) > 255:
            raise ValidationProblem.at("/", f"{HEADER} must be at most 255 characters.")
        tenant = request_tenant(request)
        fingerprint = request_fingerprint(request)
        stored = IdempotencyRecord.objects.filter(key=key).first()
        if stored is not None:
            return _replay(stored, fingerprint)
        key_hash = IdempotencyTombstone.hash_key(tenant.id, key)
        if IdempotencyTombstone.objects.filter(key_hash=key_hash).exists():
            raise Conflict(
                f"This {HEADER} was used by a request whose data has since been erased; it is not run again. "
                "A new request needs a new key."
            )
        lock = f"engram:idem:{tenant.id}:{hashlib.sha256(key.encode()).hexdigest()}"
        redis = get_redis()
        if not redis.set(lock, "1", nx=True, ex=IN_FLIGHT_SECONDS):
            raise Conflict(f"A request with this {HEADER} is still being processed; retry later.")
        try:
            response = method(view, request, *args, **kwargs)
        except BaseException:
            redis.delete(lock)
            raise
        if not 200 <= response.status_code < 300:
            redis.delete(lock)
            return response
        answer = json.loads(json.dumps(response.data, default=str))
        try:
            with transaction.atomic():
                IdempotencyRecord.objects.create(
                    tenant=tenant,
                    key=key,
                    method=request.method or "POST",
                    path=request.path,
                    request_hash=fingerprint,
                    response_status=response.status_code,
                    response_body=answer,
                    subjects=record_subjects(request, answer),
                )
        except IntegrityError as exc:
            redis.delete(lock)
            raise Conflict(f"A request with this {HEADER} was processed concurrently.") from exc
        # The lock goes when the write is visible to others, not before.
        transaction.on_commit(lambda: redis.delete(lock))
        return response

    wrapper.idempotent = True  # type: ignore[attr-defined]  # read by the OpenAPI schema (api.schema)
    return wrapper


def _replay(stored: IdempotencyRecord, fingerprint: str) -> Response:
    if stored.request_hash != fingerprint:
        raise Unprocessable(f"This {HEADER} was already used with a different request.")
    response = Response(stored.response_body, status=stored.response_status)
    response["Idempotent-Replayed"] = "true"
    return response
