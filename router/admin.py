"""Operator admin of the router's traces (what each context offered) and the feedback on them (what
was used): read-only, the raw material of the memory hit rate."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from router.models import ContextFeedback, ContextTrace, ValueModel, ValueModelState
from router.value import model_serve, model_stop
from tenants.admin import (
    InputFilter,
    ReadOnlyAdminMixin,
    SubjectFilter,
    TenantOwnedAdmin,
    breakable,
    stacked,
    timestamp_column,
)
from tenants.scope import tenant_scope


class SessionFilter(InputFilter):
    title = "session"
    parameter_name = "session"
    lookup = "session"


def _rate(used: int | None, offered: int | None) -> str:
    return f"{used} of {offered} ({used / offered:.0%})" if offered and used is not None else "-"


@admin.register(ContextTrace)
class ContextTraceAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    # The agent, the policy, the latency and the items themselves are on the trace's page (issue 44).
    list_display = ("created", "subject_session", "query_short", "token_total", "hit_rate", "outcome", "tenant")
    list_filter = (("created_at", admin.DateFieldListFilter), "policy", SubjectFilter, SessionFilter)
    ordering = ("-created_at",)
    show_full_result_count = False
    list_per_page = 50
    fields = (
        "id",
        "tenant",
        "subject",
        "session",
        "agent",
        "query",
        "policy",
        "budgets",
        "tokens",
        "total_tokens",
        "latency_ms",
        "offered",
        "considered",
        "request",
        "feedback_link",
        "created_at",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[ContextTrace]:
        feedback = ContextFeedback.objects.filter(trace_id=OuterRef("pk"), tenant_id=OuterRef("tenant_id"))
        qs = super().get_queryset(request)
        if request.resolver_match is not None and request.resolver_match.url_name == "router_contexttrace_changelist":
            # The offered and considered items can run to many kilobytes per trace; the list needs none.
            qs = qs.defer("offered", "considered", "request", "budgets")
        return qs.annotate(
            fb_used=Subquery(feedback.values("used_count")[:1]),
            fb_offered=Subquery(feedback.values("offered_count")[:1]),
            fb_outcome=Subquery(feedback.values("outcome")[:1]),
        )

    @admin.display(description="query")
    def query_short(self, obj: ContextTrace) -> str:
        return Truncator(obj.query).chars(60)

    @admin.display(description="offered")
    def offered_count(self, obj: ContextTrace) -> int:
        return len(obj.offered_ids)

    created = timestamp_column("created_at", "created")

    @admin.display(description="tokens", ordering="total_tokens")
    def token_total(self, obj: ContextTrace) -> int:
        return obj.total_tokens

    @admin.display(description="subject, session", ordering="subject")
    def subject_session(self, obj: ContextTrace) -> str:
        return stacked(obj.subject, breakable(obj.session))

    @admin.display(description="used of offered")
    def hit_rate(self, obj: Any) -> str:
        return _rate(obj.fb_used, obj.fb_offered)

    @admin.display(description="outcome")
    def outcome(self, obj: Any) -> str:
        return obj.fb_outcome or "-"

    @admin.display(description="feedback")
    def feedback_link(self, obj: ContextTrace) -> str:
        fb = ContextFeedback.objects.filter(tenant_id=obj.tenant_id, trace=obj).first()
        if fb is None:
            return "none yet"
        return format_html(
            '<a href="{}">{} of {} used, {}</a>',
            reverse("admin:router_contextfeedback_change", args=[fb.pk]),
            fb.used_count,
            fb.offered_count,
            fb.outcome,
        )


@admin.register(ContextFeedback)
class ContextFeedbackAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    # The signal and the items used are on the feedback's page (issue 44); "asked to repeat" is said
    # with the outcome.
    list_display = ("created", "subject_session", "trace_link", "hit_rate", "outcome_shown", "tenant")
    list_filter = (
        "outcome",
        "asked_to_repeat",
        ("created_at", admin.DateFieldListFilter),
        SubjectFilter,
        SessionFilter,
    )
    ordering = ("-created_at",)
    show_full_result_count = False
    list_per_page = 50
    fields = (
        "tenant",
        "trace_link",
        "subject",
        "session",
        "used_item_ids",
        "offered_count",
        "used_count",
        "outcome",
        "signal",
        "asked_to_repeat",
        "created_at",
    )
    readonly_fields = fields

    @admin.display(description="trace")
    def trace_link(self, obj: ContextFeedback) -> str:
        url = reverse("admin:router_contexttrace_change", args=[obj.trace_id])
        return format_html('<a href="{}">{}</a>', url, str(obj.trace_id)[:8])

    @admin.display(description="subject, session", ordering="subject")
    def subject_session(self, obj: ContextFeedback) -> str:
        return stacked(obj.subject, breakable(obj.session))

    created = timestamp_column("created_at", "created")

    @admin.display(description="outcome", ordering="outcome")
    def outcome_shown(self, obj: ContextFeedback) -> str:
        return f"{obj.outcome}, asked to repeat" if obj.asked_to_repeat else obj.outcome

    @admin.display(description="used of offered")
    def hit_rate(self, obj: ContextFeedback) -> str:
        return _rate(obj.used_count, obj.offered_count)


@admin.register(ValueModel)
class ValueModelAdmin(TenantOwnedAdmin):
    """Each tenant's learned value models: version, state (trial: served on a share of the requests,
    interleaved with the formula), the off-policy estimate against the formula, the trial's estimate and
    what serving measured; the switch (off: the formula serves; on: only a model whose estimate or trial
    beat the formula)."""

    list_display = ("version", "state", "estimate_short", "trial_short", "measured_short", "created", "tenant")
    list_filter = ("state",)
    ordering = ("-created_at",)
    actions = ("switch_off", "switch_on")
    fields = (
        "tenant",
        "version",
        "state",
        "note",
        "estimate",
        "trial",
        "measured",
        "trained_on",
        "features",
        "coefficients",
        "intercept",
        "created_at",
        "state_changed_at",
    )
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    created = timestamp_column("created_at", "created")

    @admin.display(description="estimate (used per context)")
    def estimate_short(self, obj: ValueModel) -> str:
        e = obj.estimate
        if not e:
            return "-"
        return f"{e['model']:.2f} vs {e['formula']:.2f} ({e['low']:+.2f} to {e['high']:+.2f})"

    @admin.display(description="trial (model - formula)")
    def trial_short(self, obj: ValueModel) -> str:
        t = obj.trial
        if not t or "low" not in t:
            return f"{t['contexts']} contexts" if t else "-"
        difference = t["model"] - t["formula"]
        sequence = f"; sequence {t['sequence_low']:+.2f} to {t['sequence_high']:+.2f}" if "sequence_low" in t else ""
        return f"{difference:+.2f} ({t['low']:+.2f} to {t['high']:+.2f}{sequence}), {t['contexts']} contexts"

    @admin.display(description="measured serving")
    def measured_short(self, obj: ValueModel) -> str:
        m = obj.measured
        if not m or m.get("used_per_context") is None:
            return "-"
        return f"{m['used_per_context']:.2f} over {m['contexts']}"

    @admin.action(description="Switch off (the formula serves)", permissions=("change",))
    def switch_off(self, request: HttpRequest, queryset: QuerySet[ValueModel]) -> None:
        done = 0
        for model in queryset.filter(state__in=(ValueModelState.SERVING, ValueModelState.TRIAL)):
            with tenant_scope(model.tenant_id):
                model_stop(
                    tenant=model.tenant, model=model, state=ValueModelState.DISABLED, note="switched off in the admin"
                )
            done += 1
        self.message_user(
            request, f"Switched off: {done}." if done else "None of these models was serving or on trial."
        )

    @admin.action(
        description="Switch on (only a model whose estimate or trial beat the formula)", permissions=("change",)
    )
    def switch_on(self, request: HttpRequest, queryset: QuerySet[ValueModel]) -> None:
        done = 0
        for model in queryset.exclude(state=ValueModelState.SERVING):
            # The trial's confidence sequence where it logged one (what the job decides on), else its interval.
            trial_low = float(model.trial.get("sequence_low", model.trial.get("low", 0.0)))
            if max(float(model.estimate.get("low", 0.0)), trial_low) <= 0.0:
                messages.warning(request, f"v{model.version}: neither its estimate nor its trial beat the formula.")
                continue
            with tenant_scope(model.tenant_id):
                model_serve(tenant=model.tenant, model=model)
            done += 1
        if done:
            self.message_user(request, f"Switched on: {done}.")
