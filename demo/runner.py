"""Seeding the demo tenant and comparing memory on and off.

Both talk to Engram through the Python client. With a URL they use a running service; without one
they serve the API in-process: the client's HTTP requests go through Django's WSGI application (the
same middleware, authentication, validation and error handling as a server), so seeding works at first
start, before any server is up. Consolidation runs eagerly, in this process, so that each
conversation's facts exist before the next one starts, as they would with a worker that keeps up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta

import httpx
from celery import current_app
from engram_client import EngramClient, NotFoundError

from demo import script
from demo.agent import CONTEXT_TOKENS, ScriptedAgent, UserStats, session_id
from demo.script import UserScript
from procedural.seeds import seed_procedures
from tenants.models import Tenant
from tenants.services import api_key_create, api_key_revoke

DEMO_DAYS_AGO = 32


def demo_start(now: datetime | None = None) -> datetime:
    """The first conversation's time: midnight UTC a month ago, so runs on any day look alike."""
    today = (now or datetime.now(UTC)).replace(hour=9, minute=0, second=0, microsecond=0)
    return today - timedelta(days=DEMO_DAYS_AGO)


@contextlib.contextmanager
def engram_for(tenant: Tenant, *, url: str | None = None, purpose: str = "demo") -> Iterator[EngramClient]:
    """A client acting for the tenant with a short-lived key, revoked when done."""
    issued = api_key_create(tenant=tenant, name=purpose, scopes=["read", "write"], created_by=purpose)
    try:
        if url:
            client = EngramClient(url, issued.raw)
        else:
            from django.core.wsgi import get_wsgi_application

            transport = httpx.WSGITransport(app=get_wsgi_application())
            client = EngramClient("http://localhost", issued.raw, transport=transport)
        with client:
            yield client
    finally:
        api_key_revoke(tenant=tenant, prefix=issued.api_key.prefix)


@contextlib.contextmanager
def eager_tasks() -> Iterator[None]:
    app = current_app
    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


def demo_is_seeded(engram: EngramClient, users: Sequence[UserScript]) -> bool:

    last_user = users[-1]
    try:
        return engram.sessions.get(session_id(last_user, len(last_user.conversations) - 1))["status"] != "open"
    except NotFoundError:
        return False


def seed_demo(
    *,
    tenant: Tenant,
    url: str | None = None,
    progress: Callable[[str], None] | None = None,
    users: Sequence[UserScript] | None = None,
) -> list[UserStats] | None:
    """Seed procedures, then replay every conversation with memory on. Idempotent: conversations
    already stored are skipped, and a fully seeded tenant is left as it is (returns None)."""

    users = users or script.USERS
    seed_procedures(tenant=tenant)
    with engram_for(tenant, url=url, purpose="demo-seed") as engram:
        if demo_is_seeded(engram, users):
            return None
        with eager_tasks():
            return ScriptedAgent(engram, start=demo_start()).run(users, skip_done=True, progress=progress)


def compare(
    *,
    tenant: Tenant,
    url: str | None = None,
    users: Sequence[UserScript] | None = None,
    context_tokens: int = CONTEXT_TOKENS,
) -> tuple[list[UserStats], list[UserStats]]:
    """The same script with memory off and with memory on (in `tenant`, which should be empty)."""

    users = users or script.USERS
    off = ScriptedAgent(None, start=demo_start()).run(users)
    seed_procedures(tenant=tenant)
    with engram_for(tenant, url=url, purpose="demo-compare") as engram, eager_tasks():
        on = ScriptedAgent(engram, start=demo_start(), context_tokens=context_tokens).run(users)
    return off, on
