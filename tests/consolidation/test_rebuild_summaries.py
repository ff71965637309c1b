"""`manage.py rebuild_summaries` rewrites the summaries stored before summaries summarised: per tenant
or all, with progress, idempotent, and a session with nothing to summarise ends with none."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.core.management import call_command

from consolidation import services
from episodic.models import Episode, Session
from tenants.scope import tenant_scope
from tests.consolidation.conftest import make_episode, make_session

pytestmark = pytest.mark.django_db

OLD = "\n".join(["assistant: husky - commit-msg hook exited with code 1 (error)"] * 20)


def _old_summary(tenant, session: Session, content: str = OLD) -> Episode:
    with tenant_scope(tenant):
        episode = Episode.objects.create(
            tenant=tenant,
            session=session,
            subject=session.subject,
            kind="summary",
            role="system",
            content=content,
            external_id=services.SUMMARY_EXTERNAL_ID,
            content_hash=hashlib.sha256(content.encode()).hexdigest(),
            payload={"source_episode_ids": [], "generated_by": "consolidation"},
        )
        Session.objects.for_tenant(tenant).filter(pk=session.pk).update(summary=content)
    return episode


def _seed(tenant, name: str) -> Session:
    session = make_session(tenant, name, ended=True)
    make_episode(tenant, session, "Our commit hook rejects every message since we added commitlint to the monorepo.")
    make_episode(tenant, session, "husky - commit-msg hook exited with code 1 (error)\n" * 20)
    make_episode(
        tenant,
        session,
        "The hook rejects messages that do not follow the conventional commit format.",
        role="assistant",
    )
    _old_summary(tenant, session)
    return session


def _summaries(tenant, session: Session) -> list[Episode]:
    with tenant_scope(tenant):
        return list(
            Episode.objects.for_tenant(tenant).filter(session=session, external_id=services.SUMMARY_EXTERNAL_ID)
        )


def _rebuild(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command("rebuild_summaries", *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_stored_summaries_are_rebuilt_per_tenant_once_and_idempotently(tenant_a, tenant_b, api_a, api_b) -> None:
    session_a, session_b = _seed(tenant_a, "hooks"), _seed(tenant_b, "hooks")
    hello = make_session(tenant_a, "hello", ended=True)
    make_episode(tenant_a, hello, "hi")
    make_episode(tenant_a, hello, "Hello! How can I help you today?", role="assistant")
    _old_summary(tenant_a, hello, "user: hi\nassistant: Hello! How can I help you today?")

    report = _rebuild("--tenant", tenant_a.slug)
    assert "2 summaries: 1 rewritten, 1 removed, 0 unchanged" in report

    summary = api_a.get("/v1/sessions/hooks").json()["summary"]
    assert "husky -" not in summary and summary.count("conventional commit format") == 1
    assert "commitlint" in summary
    [episode] = _summaries(tenant_a, session_a)
    assert episode.content == summary
    # Nothing to summarise: no summary left, in the session or as an episode.
    assert api_a.get("/v1/sessions/hello").json()["summary"] == ""
    assert _summaries(tenant_a, hello) == []
    # The other tenant was not asked for.
    assert api_b.get("/v1/sessions/hooks").json()["summary"] == OLD
    assert [e.content for e in _summaries(tenant_b, session_b)] == [OLD]

    again = _rebuild("--tenant", tenant_a.slug)
    assert "1 summaries: 0 rewritten, 0 removed, 1 unchanged" in again
    assert [e.id for e in _summaries(tenant_a, session_a)] == [episode.id]

    _rebuild("--all")
    assert "husky -" not in api_b.get("/v1/sessions/hooks").json()["summary"]
