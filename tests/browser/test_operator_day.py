"""Issue 34's operator's day at 1280 px in a real browser: the review queue filtered and searched, the
conflict audit that fits its box and confirms a revert, erasure found by subject with its counts
before filing, and a dashboard that says what it shows."""

from __future__ import annotations

import re
from typing import Any

import pytest

from semantic.models import FactChange, FactChangeKind
from tenants.scope import tenant_scope
from tests.admin.test_review_and_audit import _pending
from tests.browser.support import PASSWORD, login
from tests.factories.admin import build_history, build_memory, make_operator
from tests.factories.tenants import TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def narrow(page: Any) -> Any:
    page.set_viewport_size({"width": 1280, "height": 900})
    return page


@pytest.fixture
def world() -> dict[str, Any]:
    tenant_a: Any = TenantFactory(name="Acme Support", slug="acme")
    tenant_b: Any = TenantFactory(name="Globex", slug="globex")
    memory_a = build_memory(tenant_a, subject="alice")
    memory_b = build_memory(tenant_b, subject="bob", prefix="b-")
    make_operator("operator-a", tenant_a, password=PASSWORD)
    return {"a": tenant_a, "b": tenant_b, "memory_a": memory_a, "memory_b": memory_b}


def inside(page: Any, selector: str, box: str) -> None:
    """Every element of `selector` lies within `box` and within the 1280 px window."""
    outer = page.locator(box).bounding_box()
    assert outer is not None
    for i in range(page.locator(selector).count()):
        inner = page.locator(selector).nth(i).bounding_box()
        assert inner is not None, selector
        right = inner["x"] + inner["width"]
        assert right <= outer["x"] + outer["width"] + 1 and right <= 1280, (selector, i, inner, outer)


def test_conflict_audit_fits_1280px_and_a_revert_is_confirmed_and_logged_once(
    live_server: Any, narrow: Any, shoot: Any, world: Any
) -> None:
    page, base, tenant = narrow, live_server.url, world["a"]
    login(page, base)
    page.goto(f"{base}/admin/semantic/factchange/")
    shoot("issue34-conflict-audit-1280")
    table = page.locator("#result_list").bounding_box()
    box = page.locator("#changelist .results").bounding_box()
    assert table is not None and box is not None
    assert table["width"] <= box["width"] + 1, (table, box)
    inside(page, "#result_list .engram-revert", "#changelist .results")
    inside(page, "#result_list .field-when", "#changelist .results")  # with the actor under the time
    inside(page, "#result_list td.field-reason_short", "#changelist .results")

    with tenant_scope(tenant):
        before = FactChange.objects.count()
    page.locator("a.engram-revert").first.click()
    page.wait_for_url(re.compile(r".*/revert/$"))
    assert "Berlin" in page.locator(".engram-confirm-table").inner_text()
    with tenant_scope(tenant):
        assert FactChange.objects.count() == before  # nothing yet: this is the question
    page.fill("#revert-reason", "the move was a misunderstanding")
    shoot("issue34-revert-confirm-1280")
    page.click("#confirm-revert")
    page.wait_for_selector("ul.messagelist")
    assert "Reverted: 1" in page.locator("ul.messagelist").inner_text()
    with tenant_scope(tenant):
        rows = list(FactChange.objects.order_by("id")[before:])
    assert [(r.kind, r.old_value, r.new_value) for r in rows] == [(FactChangeKind.REVERTED, "Berlin", "Paris")]
    assert "misunderstanding" in rows[0].reason


def test_review_queue_filters_and_search_at_1280px(live_server: Any, narrow: Any, shoot: Any, world: Any) -> None:
    page, base = narrow, live_server.url
    tenant, memory_b = world["a"], world["memory_b"]
    tea = _pending(tenant, "carol", "drink", "green tea")
    coffee = _pending(tenant, "dave", "drink", "black coffee")
    login(page, base)
    page.goto(f"{base}/admin/semantic/fact/review/")
    items = page.locator(".engram-review-item")
    assert items.first.get_attribute("data-fact") == str(coffee.id)  # newest first
    page.fill("#review-filters input[name=subject]", "carol")
    page.click("#review-filters button[type=submit]")
    page.wait_for_url(re.compile(r".*subject=carol.*"))
    assert [items.nth(i).get_attribute("data-fact") for i in range(items.count())] == [str(tea.id)]
    page.goto(f"{base}/admin/semantic/fact/review/")
    page.fill("#review-filters input[name=q]", "coffee")
    page.press("#review-filters input[name=q]", "Enter")
    page.wait_for_url(re.compile(r".*q=coffee.*"))
    assert [items.nth(i).get_attribute("data-fact") for i in range(items.count())] == [str(coffee.id)]
    shoot("issue34-review-filtered-1280")
    inside(page, "#review-filters", "#content-main")
    page.goto(f"{base}/admin/semantic/fact/review/?q=bob")  # tenant B's subject: nothing
    assert page.locator(f"[data-fact='{memory_b.pending_fact.id}']").count() == 0
    assert "No fact matches these filters." in page.locator("#content-main").inner_text()


def test_erasure_found_by_subject_with_counts_first_and_a_readable_receipt_at_1280px(
    live_server: Any, narrow: Any, shoot: Any, world: Any
) -> None:
    page, base = narrow, live_server.url
    login(page, base)
    page.goto(f"{base}/admin/privacy/erasurerequest/add/")
    page.fill("#id_subject", "alcie")  # a typo
    page.click("input[name=_save]")
    # The click returns before the preview has loaded; is_visible() does not wait (it failed under CI's load).
    page.locator("#erasure-no-data").wait_for(state="visible")
    page.click("text=No, go back")
    page.fill("#id_subject", "alice")
    page.fill("#id_reason", "asked to be forgotten")
    page.click("input[name=_save]")
    counts = page.locator("#erasure-counts").inner_text()
    assert "episodes" in counts and page.locator("#erasure-no-data").count() == 0
    shoot("issue34-erasure-confirm-1280")
    inside(page, "#erasure-counts", "#content")
    page.click("#confirm-erasure")
    page.wait_for_url(re.compile(r".*/admin/privacy/erasurerequest/[0-9a-f-]+/change/"))
    page.reload()
    assert page.locator(".field-status .readonly").inner_text() == "Done"
    receipt = page.locator(".field-counts_pretty").inner_text().lower()
    assert "rows removed" in receipt and "episodes" in receipt and "{" not in receipt
    shoot("issue34-erasure-receipt-1280")
    inside(page, "table.engram-receipt", "#content")
    page.goto(f"{base}/admin/privacy/erasurerequest/")
    page.fill("#searchbar", "alice")
    page.press("#searchbar", "Enter")
    page.wait_for_url(re.compile(r".*q=alice.*"))
    assert page.locator("#result_list tbody tr").count() == 1
    page.fill("#searchbar", "bob")  # tenant B's subject
    page.press("#searchbar", "Enter")
    page.wait_for_url(re.compile(r".*q=bob.*"))
    assert page.locator("#result_list tbody tr").count() == 0


def test_dashboard_says_what_it_shows_at_1280px(live_server: Any, narrow: Any, shoot: Any, world: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from episodic.models import Session

    page, base, tenant = narrow, live_server.url, world["a"]
    build_history(tenant, weeks=8)
    with tenant_scope(tenant):  # an import: twelve sessions of alice replayed within a few minutes
        now = timezone.now() - timedelta(hours=2)
        for i in range(12):
            Session.objects.create(
                tenant=tenant, external_id=f"replay-{i}", subject="alice", status="ended", outcome="success",
                started_at=now + timedelta(seconds=15 * i), last_event_at=now + timedelta(minutes=4, seconds=15 * i),
                ended_at=now + timedelta(minutes=5, seconds=15 * i), episode_count=4,
            )  # fmt: skip
    login(page, base)
    page.goto(f"{base}/dashboard/acme/")
    assert page.locator("#hit-rate-help").is_visible()
    assert "most recent of" in page.locator("#hit-rate-rows").inner_text()
    inside(page, "#hit-rates", "#content")
    page.goto(f"{base}/dashboard/acme/subjects/alice/")
    assert (
        "→" in page.locator("#subject-range").inner_text()
        and "latest of" in page.locator("#subject-range").inner_text()
    )
    boxes = [b for b in (r.bounding_box() for r in page.locator("section.engram-panel svg.chart a rect").all()) if b]
    assert len(boxes) >= 12
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            apart = (
                a["x"] + a["width"] <= b["x"] + 0.5 or b["x"] + b["width"] <= a["x"] + 0.5
                or a["y"] + a["height"] <= b["y"] + 0.5 or b["y"] + b["height"] <= a["y"] + 0.5
            )  # fmt: skip
            assert apart, (a, b)
    shoot("issue34-dashboard-subject-1280")


def test_an_export_is_filed_from_the_admin_and_linked_when_done_at_1280px(
    live_server: Any, narrow: Any, shoot: Any, world: Any, settings: Any, tmp_path: Any
) -> None:
    settings.EXPORT_ROOT = str(tmp_path / "exports")
    page, base, tenant = narrow, live_server.url, world["a"]
    login(page, base)
    page.goto(f"{base}/admin/tenants/tenant/")
    page.locator(f"input[name=_selected_action][value='{tenant.id}']").check()
    page.select_option("select[name=action]", "export_selected")
    page.click("button[name=index]")
    page.wait_for_selector("ul.messagelist")
    assert "Export of acme filed" in page.locator("ul.messagelist").inner_text()
    page.goto(f"{base}/admin/tenants/tenant/{tenant.id}/change/")
    link = page.locator(".field-exports a").first
    assert link.inner_text().startswith("acme-") and link.inner_text().endswith(".jsonl.gz")
    shoot("issue34-tenant-export-1280")
    inside(page, ".field-exports", "#content")
    response = page.request.get(f"{base}{link.get_attribute('href')}")
    assert response.status == 200 and response.body()[:2] == b"\x1f\x8b"  # gzip
