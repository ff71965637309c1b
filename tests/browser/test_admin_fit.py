"""The operator's pages at 1280x800 (issue 44). Every admin changelist fits with the navigation sidebar
open: a superuser of two tenants (so the tenant column and filter are shown) opens the list of every
registered model, each with rows of realistic length, and no table is wider than its box, no cell's
content runs out of its cell (headers included) and no word is broken across lines. The subject
timeline draws each session over its own events. The screenshots of docs/admin.md are taken here."""

from __future__ import annotations

import io
from datetime import timedelta
from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import ClockedSchedule, SolarSchedule

from consolidation.models import ArchiveManifest
from episodic.models import AliasSource, EntityAlias, Session
from episodic.services import episodes_append
from privacy.erasure import subject_hash
from privacy.models import ErasureRequest, ErasureStatus
from procedural.models import ProcedureOutcome, ProcedureSource, ProcedureStatus
from router.models import ValueModel, ValueModelState
from semantic.models import ActorType
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.scope import tenant_scope
from tenants.services import api_key_create
from tests.browser.support import PASSWORD, doc_screenshot, login
from tests.factories.admin import build_history, build_memory, make_operator
from tests.factories.procedural import ProcedureFactory
from tests.factories.tenants import TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What does not fit, measured in the page: the table against its box, the page against the window,
# every cell's content against its cell, and every word (a run of letters and digits) on one line.
MEASURE = """
() => {
  const problems = [];
  const table = document.querySelector('#result_list');
  if (!table) return ['no #result_list'];
  const box = table.closest('.results') || table.parentElement;
  const t = table.getBoundingClientRect(), b = box.getBoundingClientRect();
  if (t.width > b.width + 1) problems.push(`table ${Math.round(t.width)} px in a box of ${Math.round(b.width)} px`);
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1) problems.push(`page ${page.scrollWidth} px wide`);
  const range = document.createRange();
  for (const cell of table.querySelectorAll('th, td')) {
    if (!cell.textContent.trim()) continue;
    const c = cell.getBoundingClientRect();
    range.selectNodeContents(cell);
    const r = range.getBoundingClientRect();
    const name = (cell.className || cell.tagName) + ': ' + cell.textContent.trim().slice(0, 40);
    if (r.right > c.right + 1 || r.left < c.left - 1) problems.push(`runs out of its cell: ${name}`);
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[\\p{L}\\p{N}]+/gu)) {
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((x) => Math.round(x.top)));
        if (tops.size > 1) problems.push(`word broken: ${m[0]} in ${name}`);
      }
    }
  }
  return problems;
}
"""

LONG_REASON = (
    "newer statement in session support-2026-11-29-0917 contradicts the stored value; the subject said "
    "the migration to the managed cluster finished last Tuesday"
)


def _world() -> None:
    """Two tenants with a row in every list, values as long as the demo's."""
    get_user_model().objects.create_superuser("root", password=PASSWORD)
    Group.objects.create(name="Support operators (second line, Europe)")
    call_command("setup_schedules", stdout=io.StringIO())
    ClockedSchedule.objects.create(clocked_time=timezone.now())
    SolarSchedule.objects.create(event="sunrise", latitude=52.52, longitude=13.405)
    now = timezone.now()
    for slug, name, subject in (("acme", "Acme Support", "ana.ruiz"), ("globex", "Globex Customer Care", "ben.okafor")):
        tenant: Any = TenantFactory(name=name, slug=slug)
        build_memory(tenant, subject=subject, prefix=f"{slug}-")
        with tenant_scope(tenant):
            actor = Actor(type=ActorType.CONSOLIDATION, id="run-1842-session-ended", reason=LONG_REASON)
            for value in ("PostgreSQL 15 on a self-hosted VM in Frankfurt", "PostgreSQL 16 on the managed cluster"):
                fact_upsert(
                    tenant=tenant,
                    candidate=FactCandidate(
                        subject=subject, entity=f"{subject}/primary-database-cluster", attribute="database_version",
                        value=value, statement=f"{subject}'s team runs its primary database on {value}.",
                        category="technical_environment", confidence=0.92,
                    ),
                    actor=actor,
                )  # fmt: skip
            api_key_create(tenant=tenant, name="support-agent production (eu-central-1)", created_by="root")
            EntityAlias.objects.create(
                tenant=tenant, alias="the managed cluster", entity=f"{subject}/primary-database-cluster",
                source=AliasSource.LEARNED, subject=subject, created_by="consolidation:run-1842",
            )  # fmt: skip
            procedure: Any = ProcedureFactory(
                tenant=tenant, name="Escalate a failed database migration to the on-call engineer",
                source=ProcedureSource.EXPERIENCE, status=ProcedureStatus.ACTIVE, agent="support-agent",
            )  # fmt: skip
            ProcedureOutcome.objects.create(
                tenant=tenant, procedure=procedure, applied=True, success=True, signal=0.8,
                session_external_id="support-2026-11-29-0917",
            )  # fmt: skip
            ArchiveManifest.objects.create(
                tenant=tenant, month="2026-10", path=f"archive/{slug}/2026-10.jsonl.gz", episode_count=18234,
                bytes=73_400_320, sha256="0" * 64, first_occurred_at=now - timedelta(days=60),
                last_occurred_at=now - timedelta(days=30),
            )  # fmt: skip
            ErasureRequest.objects.create(
                tenant=tenant, subject_hash=subject_hash(tenant, "zoe.martin"), requested_by="operator:root",
                reason="the customer asked to be forgotten (ticket SUP-4411)", status=ErasureStatus.DONE,
                deadline=now + timedelta(days=30), created_at=now - timedelta(minutes=3),
                started_at=now - timedelta(minutes=3), completed_at=now - timedelta(minutes=2), attempts=1,
                counts={"episodes": 128, "facts": 14, "fact_changes": 31, "context_traces": 40},
                verification={"remaining": {"episodes": 0, "facts": 0}},
            )  # fmt: skip
            ValueModel.objects.create(
                tenant=tenant, version=3, state=ValueModelState.SERVING,
                estimate={"model": 1.84, "formula": 1.52, "low": 0.12, "high": 0.51},
                measured={"used_per_context": 1.77, "contexts": 4210},
            )  # fmt: skip
            ValueModel.objects.create(
                tenant=tenant, version=4, state=ValueModelState.TRIAL,
                estimate={"model": 1.86, "formula": 1.84, "low": -0.04, "high": 0.07},
                trial={"model": 1.93, "formula": 1.84, "low": -0.01, "high": 0.19, "contexts": 1180},
            )  # fmt: skip
            ErasureRequest.objects.create(
                tenant=tenant, subject_hash=subject_hash(tenant, "yann.leroy"), requested_by="api:support-agent",
                reason="", deadline=now + timedelta(days=30),
            )  # fmt: skip


def _changelists() -> list[str]:
    return [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist") for model in admin.site._registry
    ]


def test_every_changelist_fits_1280x800_with_the_sidebar_open(live_server: Any, page: Any, shoot: Any) -> None:
    _world()
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, live_server.url, username="root")
    misfits: dict[str, list[str]] = {}
    urls = _changelists()
    assert len(urls) >= 20
    for url in urls:
        page.goto(f"{live_server.url}{url}")
        assert page.locator("#nav-sidebar").is_visible(), url
        assert page.locator("#result_list tbody tr").count() >= 1, f"{url} has no rows to measure"
        problems = page.evaluate(MEASURE)
        if problems:
            misfits[url] = problems[:6]
            shoot("misfit" + url.replace("/admin/", "-").replace("/", "-").rstrip("-"))
    assert not misfits, "\n".join(f"{url}: {p}" for url, ps in misfits.items() for p in ps)

    # docs/admin.md shows these two as an operator sees them.
    page.goto(f"{live_server.url}{reverse('admin:semantic_factchange_changelist')}")
    doc_screenshot(page, "admin-conflict-audit")
    page.goto(f"{live_server.url}{reverse('admin:semantic_fact_changelist')}")
    doc_screenshot(page, "admin-facts")


def test_the_subject_timeline_draws_each_session_over_its_own_events(live_server: Any, page: Any) -> None:
    """Sessions ended (and summarised) long after they were held, as a seeded demo or an import ends
    them: every bar still spans its conversation, not the time up to the end call."""
    tenant: Any = TenantFactory(name="Acme Support", slug="acme")
    build_memory(tenant, subject="alice")
    build_history(tenant, subjects=("alice",), weeks=3)
    with tenant_scope(tenant):
        # Appended as consolidation appends a session's summary: at the time of the end call.
        for session in Session.objects.filter(subject="alice", status="ended"):
            episodes_append(
                tenant=tenant,
                items=[
                    {"subject": "alice", "session": session.external_id, "kind": "summary", "role": "system",
                     "content": f"summary of {session.external_id}", "occurred_at": timezone.now()},
                ],
            )  # fmt: skip
    make_operator("operator-a", tenant, password=PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 800})
    login(page, live_server.url)
    page.goto(f"{live_server.url}/dashboard/acme/subjects/alice/")
    panel = page.locator("section.engram-panel svg.chart").first.bounding_box()
    bars = [b for b in (r.bounding_box() for r in page.locator("section.engram-panel svg.chart a rect").all()) if b]
    assert panel is not None and len(bars) >= 5
    assert max(b["width"] for b in bars) < panel["width"] / 4  # no staircase up to today
    doc_screenshot(page, "dashboard-subject-timeline")
