"""An operator's day in a real browser: log in as staff of tenant A, see only tenant A, approve a
pending fact from the review queue, revert a conflict in the audit, file an erasure request and read
its receipt, open the memory dashboard; and
fail to open tenant B's objects by URL."""

from __future__ import annotations

import re
from typing import Any

import pytest

from episodic.models import Episode
from semantic.models import ActorType, Fact, FactChange, FactChangeKind, FactStatus
from tenants.scope import tenant_scope
from tests.browser.support import PASSWORD, login
from tests.factories.admin import build_history, build_memory, make_operator
from tests.factories.tenants import TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world() -> dict[str, Any]:
    tenant_a = TenantFactory(name="Acme Support", slug="acme")
    tenant_b = TenantFactory(name="Globex", slug="globex")
    memory_a = build_memory(tenant_a, subject="alice")
    build_memory(tenant_a, subject="carol", prefix="c-")
    build_history(tenant_a)
    memory_b = build_memory(tenant_b, subject="bob", prefix="b-")
    make_operator("operator-a", tenant_a, password=PASSWORD)
    return {"a": tenant_a, "b": tenant_b, "memory_a": memory_a, "memory_b": memory_b}


def test_operator_reviews_reverts_and_reads_the_dashboard(live_server: Any, page: Any, shoot: Any, world: Any) -> None:
    base = live_server.url
    tenant_a, memory_a, memory_b = world["a"], world["memory_a"], world["memory_b"]
    login(page, base)
    assert page.locator("#engram-memory").is_visible()
    shoot("01-admin-index")

    # Only tenant A exists for this operator.
    page.goto(f"{base}/admin/tenants/tenant/")
    assert page.locator("#result_list").inner_text().count("acme") == 1
    assert "globex" not in page.content()
    page.goto(f"{base}/admin/semantic/fact/")
    body = page.locator("#result_list").inner_text()
    assert "alice" in body and "bob" not in body

    # The review queue: the pending employer, with the episode it came from; correct it and approve.
    page.goto(f"{base}/admin/")
    page.click("text=Fact review queue")
    item = page.locator(f"[data-fact='{memory_a.pending_fact.id}']")
    assert "I think I work for Acme Corp now." in item.inner_text()
    assert page.locator(f"[data-fact='{memory_b.pending_fact.id}']").count() == 0
    page.fill(f"#value-{memory_a.pending_fact.id}", "Acme Corporation")
    item.locator("input[name=fact]").check()
    shoot("02-review-queue")
    page.click("button[value=approve]")
    page.wait_for_selector("ul.messagelist")
    assert "Approved: 1" in page.locator("ul.messagelist").inner_text()
    assert page.locator(f"[data-fact='{memory_a.pending_fact.id}']").count() == 0  # decided, so gone
    with tenant_scope(tenant_a):
        approved = Fact.objects.get(pk=memory_a.pending_fact.id)
        assert (approved.status, approved.value) == (FactStatus.ACTIVE, "Acme Corporation")
        decision = FactChange.objects.get(fact=approved, kind=FactChangeKind.REVIEW_APPROVED)
        assert (decision.actor_type, decision.actor_id) == (ActorType.OPERATOR, "operator-a")

    # Fact changes: Paris was superseded by Berlin; revert it from the list.
    page.goto(f"{base}/admin/")
    page.click("#engram-memory >> text=Fact changes")
    page.fill("input[name=entity]", "alice")
    page.press("input[name=entity]", "Enter")
    page.wait_for_url(re.compile(r".*entity=alice.*"))
    page.click("#changelist-filter a:text-is('Superseded')")
    page.wait_for_url(re.compile(r".*kind__exact=superseded.*"))
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1 and "Paris" in rows.first.inner_text()
    shoot("03-conflict-audit")
    page.locator("a.engram-revert").first.click()
    page.click("#confirm-revert")
    page.wait_for_selector("ul.messagelist")
    assert "Reverted: 1" in page.locator("ul.messagelist").inner_text()
    with tenant_scope(tenant_a):
        current = Fact.objects.get(entity="alice", attribute="city", status=FactStatus.ACTIVE)
        assert current.value == "Paris"
        assert FactChange.objects.filter(
            kind=FactChangeKind.REVERTED, actor_type=ActorType.OPERATOR, actor_id="operator-a"
        ).exists()

    # An erasure request for carol: filed, carried out after the commit, verified, with a receipt.
    page.goto(f"{base}/admin/")
    page.click("text=Erasure requests")
    page.click(".object-tools a.addlink")  # the changelist's own, not the sidebar's first
    page.fill("#id_subject", "carol")
    page.fill("#id_reason", "the user asked to be forgotten")
    page.click("input[name=_save]")
    page.click("#confirm-erasure")  # after the subject's rows are shown
    page.wait_for_url(re.compile(r".*/admin/privacy/erasurerequest/[0-9a-f-]+/change/"))
    page.reload()  # the status as it is now
    status = page.locator(".field-status .readonly").inner_text()
    assert status == "Done", status
    assert "verified empty" in page.locator(".field-receipt_pretty").inner_text()
    assert "carol" not in page.locator("#content-main").inner_text()
    shoot("04-erasure-receipt")
    with tenant_scope(tenant_a):
        assert not Episode.objects.filter(subject="carol").exists()
        assert Episode.objects.filter(subject="alice").exists()

    # The dashboard, from the admin index: one tenant, so straight to it.
    page.goto(f"{base}/admin/")
    page.click("text=Memory dashboard")
    page.wait_for_url(f"{base}/dashboard/acme/")
    assert page.locator("svg.chart").count() >= 5
    assert page.locator("#hit-rates tbody tr").count() >= 3
    assert "no data yet" not in page.locator(".engram-grid").inner_text()
    shoot("05-dashboard-tenant")
    page.click("#subjects >> text=alice")
    page.wait_for_url(f"{base}/dashboard/acme/subjects/alice/")
    current_facts = page.locator("#facts-current").inner_text()
    assert "Paris" in current_facts and "Acme Corporation" in current_facts
    assert page.locator("#facts-current a[href*='/admin/episodic/episode/']").count() >= 2
    assert page.locator("svg.chart rect").count() >= 3
    shoot("06-dashboard-subject")

    # Tenant B's objects, by URL: not there.
    page.goto(f"{base}/admin/semantic/fact/{memory_b.old_fact.id}/change/")
    assert page.url.rstrip("/").endswith("/admin")
    assert "Berlin" not in page.content()
    response = page.goto(f"{base}/dashboard/globex/")
    assert response is not None and response.status == 404
    response = page.goto(f"{base}/dashboard/globex/subjects/bob/")
    assert response is not None and response.status == 404
