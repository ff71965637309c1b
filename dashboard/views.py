"""The memory dashboard: what a tenant's agents remember, per tenant and per subject.

Staff pages under /dashboard/, linked from the admin index. TenantScopeMiddleware has already entered
the operator's tenants (so row-level security hides every other tenant); the views look the tenant
up among the operator's own and answer 404 otherwise, exactly like another tenant's object in the API,
and read it in its own scope. Charts are SVG drawn here (dashboard.charts): nothing is fetched from the internet.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from functools import wraps

from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from dashboard import charts
from dashboard.selectors import (
    SessionRow,
    backlogs,
    consolidation_triggers,
    memory_growth,
    memory_hit_rates,
    memory_totals,
    recent_subjects,
    subject_facts,
    subject_session_count,
    subject_timeline,
)
from tenants.admin import operator_tenant_ids
from tenants.models import Tenant
from tenants.scope import narrowed_to


def _tenant_for(request: HttpRequest, slug: str) -> Tenant:
    """The operator's tenant by slug; another tenant's is as missing as an unknown one."""
    tenant = Tenant.objects.filter(slug=slug, id__in=operator_tenant_ids(request)).first()
    if tenant is None:
        raise Http404("No such tenant.")
    return tenant


def _in_its_scope(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page of one tenant runs in that tenant's scope alone (the request's holds every tenant of the
    operator), so the selectors read its rows without naming it."""

    @wraps(view)
    def scoped(request: HttpRequest, tenant: str, **kwargs: str) -> HttpResponse:
        current = _tenant_for(request, tenant)
        with narrowed_to(current):
            return view(request, current, **kwargs)

    return scoped


# The one time base of the growth charts (dashboard.selectors.memory_growth), said on each of them.
TIME_BASE = "by the week it happened (episode occurred, session started, fact observed)"


def _labels_weeks(weeks: list[date]) -> list[str]:
    return [f"{w:%d %b}" for w in weeks]


def _labels_days(days: list[date]) -> list[str]:
    return [f"{d:%d %b}" for d in days]


@staff_member_required
def dashboard_index(request: HttpRequest) -> HttpResponse:
    tenants = list(Tenant.objects.filter(id__in=operator_tenant_ids(request)).order_by("slug"))
    if len(tenants) == 1:
        return HttpResponseRedirect(reverse("dashboard:tenant", kwargs={"tenant": tenants[0].slug}))
    context = {**admin.site.each_context(request), "tenants": tenants, "title": "Memory dashboard"}
    return render(request, "dashboard/index.html", context)


@staff_member_required
@_in_its_scope
def tenant_dashboard(request: HttpRequest, current: Tenant) -> HttpResponse:
    # The subject id exactly as typed: never trimmed (DESIGN.md invariant 12).
    subject = request.GET.get("subject") or ""
    if subject.strip():
        return HttpResponseRedirect(reverse("dashboard:subject", kwargs={"tenant": current.slug, "subject": subject}))
    growth = memory_growth(tenant=current)
    triggers = consolidation_triggers(tenant=current)
    hits = memory_hit_rates(tenant=current)
    context = {
        **admin.site.each_context(request),
        "title": f"Memory of {current.name}",
        "tenant": current,
        "totals": memory_totals(tenant=current),
        "backlogs": backlogs(tenant=current),
        "growth_chart": charts.bar_chart(
            f"Episodes per week, {TIME_BASE}",
            _labels_weeks(growth.weeks),
            {"episodes": growth.episodes},
        ),
        "facts_chart": charts.bar_chart(
            f"New facts and sessions per week, {TIME_BASE}",
            _labels_weeks(growth.weeks),
            {"facts": growth.facts, "sessions": growth.sessions},
        ),
        "trigger_chart": charts.bar_chart(
            "Consolidation runs per day, by trigger", _labels_days(triggers.days), triggers.runs, legend=True
        ),
        "trigger_facts_chart": charts.bar_chart(
            "Facts written per day, by trigger", _labels_days(triggers.days), triggers.facts, legend=True
        ),
        "trigger_totals": triggers.totals,
        "time_base": TIME_BASE,
        "hit_chart": charts.line_chart(
            "Memory hit rate per day", _labels_days(hits.days), {"hit rate": hits.daily}, percent=True, y_max=1.0
        ),
        "hits": hits,
        "subjects": recent_subjects(tenant=current),
        "growth": growth,
    }
    return render(request, "dashboard/tenant.html", context)


@staff_member_required
@_in_its_scope
def subject_dashboard(request: HttpRequest, current: Tenant, subject: str) -> HttpResponse:
    timeline = subject_timeline(tenant=current, subject=subject)
    facts = subject_facts(tenant=current, subject=subject)
    if not timeline and not any(facts.values()):
        raise Http404("No memory of this subject.")
    spans = [
        charts.Span(
            label=row.session.external_id,
            # The conversation's own events: not the end call nor the summary written at it, which a
            # seeded demo or an import makes today and would stretch every bar to now.
            start=row.first_event or row.session.started_at,
            end=row.last_event or row.session.started_at,
            size=row.session.episode_count,
            outcome=row.session.outcome or ("" if row.session.status == "open" else "unknown"),
            href=f"#session-{row.session.pk}",
        )
        for row in timeline
    ]
    hits = memory_hit_rates(tenant=current, subject=subject)
    triggers = consolidation_triggers(tenant=current, subject=subject)
    growth = memory_growth(tenant=current, subject=subject)
    context = {
        **admin.site.each_context(request),
        "title": f"{subject} · {current.name}",
        "tenant": current,
        "subject": subject,
        "timeline": timeline,
        "timeline_chart": charts.timeline_chart(
            "Sessions over time: a bar per session as long as it lasted, its episodes written in it, coloured by"
            " outcome; overlapping sessions on separate lanes",
            spans,
        ),
        "facts": facts,
        "hits": hits,
        "hit_chart": charts.line_chart(
            "Memory hit rate per day", _labels_days(hits.days), {"hit rate": hits.daily}, percent=True, y_max=1.0
        ),
        "trigger_totals": triggers.totals,
        "time_base": TIME_BASE,
        "growth_chart": charts.bar_chart(
            f"Episodes and facts per week, {TIME_BASE}",
            _labels_weeks(growth.weeks),
            {"episodes": growth.episodes, "facts": growth.facts},
        ),
        # The first and last events, as on the chart: the header names both ends of what is shown.
        "first_seen": min(s.start for s in spans) if spans else None,
        "last_seen": max(s.end for s in spans) if spans else None,
        "session_total": subject_session_count(tenant=current, subject=subject),
        "outcomes": _outcome_counts(timeline),
    }
    return render(request, "dashboard/subject.html", context)


def _outcome_counts(timeline: list[SessionRow]) -> dict[str, int]:
    out: dict[str, int] = {}
    for row in timeline:
        key = row.session.outcome or row.session.status
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))
