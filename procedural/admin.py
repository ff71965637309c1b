"""Operator admin of procedural memory: rules with their success statistics and deprecation state;
approve candidates, deprecate, reactivate (each through procedural.services, logged as a
ProcedureEvent with the operator as actor). Editing a rule makes a new version: that is the API's
job, so the change page here is read-only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from core.errors import DomainError
from procedural.models import Procedure, ProcedureEvent, ProcedureOutcome, ProcedureStatus
from procedural.services import procedure_approve, procedure_deprecate, procedure_reactivate
from tenants.admin import InputFilter, ReadOnlyAdminMixin, TenantOwnedAdmin, breakable, stacked, timestamp_column
from tenants.scope import tenant_scope

RECENT_OUTCOMES = 20


class AgentFilter(InputFilter):
    title = "agent"
    parameter_name = "agent"
    lookup = "agent"


def _actor(request: HttpRequest) -> str:
    return f"operator:{request.user.get_username()}"


class ProcedureEventInline(admin.TabularInline):
    model = ProcedureEvent
    fk_name = "procedure"
    extra = 0
    can_delete = False
    fields = ("created_at", "kind", "actor", "reason", "figures")
    readonly_fields = fields
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Procedure)
class ProcedureAdmin(TenantOwnedAdmin):
    # The counts behind the rates, the source, the agent and the dates of a decision are on the
    # procedure's page (issue 44: fits 1280 px).
    list_display = ("name", "status_shown", "success_rate", "window", "confidence_shown", "last_applied", "tenant")
    list_filter = ("status", "source", "is_current", AgentFilter)
    search_fields = ("name", "trigger_text", "behaviour")
    ordering = ("-created_at", "-id")
    show_full_result_count = False
    list_per_page = 50
    actions = ("approve_selected", "deprecate_selected", "reactivate_selected")
    inlines = (ProcedureEventInline,)
    fieldsets = (
        (None, {"fields": ("tenant", "name", "description", "status", "source", "agent", "created_by")}),
        ("Rule", {"fields": ("trigger", "trigger_text", "behaviour", "steps")}),
        (
            "Statistics",
            {
                "fields": (
                    "applications",
                    "successes",
                    "failures",
                    "not_applied",
                    "success_rate",
                    "window_successes",
                    "window_failures",
                    "confidence",
                    "last_applied_at",
                    "recent_outcomes",
                )
            },
        ),
        (
            "Versions",
            {"fields": ("lineage", "version", "is_current", "superseded_by", "evidence", "discovery_key")},
        ),
        ("Time", {"fields": ("status_changed_at", "created_at", "updated_at")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Procedure]:
        return super().get_queryset(request).defer("trigger_embedding")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [f for _, options in self.fieldsets for f in options["fields"]]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # deprecate instead: the statistics and the decisions stay

    @admin.display(description="success rate")
    def success_rate(self, obj: Procedure) -> str:
        judged = obj.successes + obj.failures
        return f"{obj.successes / judged:.0%} of {judged}" if judged else "-"

    last_applied = timestamp_column("last_applied_at", "last applied")

    @admin.display(description="status", ordering="status")
    def status_shown(self, obj: Procedure) -> str:
        version = f"v{obj.version}" if obj.is_current else f"v{obj.version}, replaced"
        return stacked(obj.get_status_display(), version)

    @admin.display(description="confidence", ordering="confidence")
    def confidence_shown(self, obj: Procedure) -> str:
        return f"{obj.confidence:.2f}"

    @admin.display(description="since (re)activation")
    def window(self, obj: Procedure) -> str:
        return f"{obj.window_successes} ok / {obj.window_failures} failed"

    @admin.display(description="recent outcomes")
    def recent_outcomes(self, obj: Procedure) -> str:
        outcomes = (ProcedureOutcome.objects.filter(tenant_id=obj.tenant_id, procedure=obj).order_by("-recorded_at"))[
            :RECENT_OUTCOMES
        ]
        rows = format_html_join(
            "",
            "<li>{} · {} · {} · session {}</li>",
            (
                (
                    o.recorded_at.strftime("%Y-%m-%d %H:%M"),
                    "applied" if o.applied else "not applied",
                    {True: "success", False: "failure", None: "no verdict"}[o.success],
                    Truncator(o.session_external_id or "-").chars(40),
                )
                for o in outcomes
            ),
        )
        return format_html("<ul>{}</ul>", rows) if rows else "-"

    def _each(
        self, request: HttpRequest, queryset: QuerySet[Procedure], fn: Callable[..., Procedure], done: str
    ) -> None:
        ok = 0
        for procedure in queryset:
            try:
                # The admin's scope may hold several tenants: each call runs in its procedure's.
                with tenant_scope(procedure.tenant_id):
                    fn(tenant=procedure.tenant, procedure_id=procedure.pk, actor=_actor(request), reason="in the admin")
            except DomainError as exc:
                messages.error(request, f"{procedure.name}: {exc.detail}")
            else:
                ok += 1
        if ok:
            messages.success(request, f"{done}: {ok}.")

    @admin.action(description="Approve selected candidates", permissions=("change",))
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Procedure]) -> None:
        self._each(request, queryset, procedure_approve, "Approved")

    @admin.action(description="Deprecate selected procedures", permissions=("change",))
    def deprecate_selected(self, request: HttpRequest, queryset: QuerySet[Procedure]) -> None:
        self._each(request, queryset.exclude(status=ProcedureStatus.DEPRECATED), procedure_deprecate, "Deprecated")

    @admin.action(description="Reactivate selected procedures (a fresh hearing)", permissions=("change",))
    def reactivate_selected(self, request: HttpRequest, queryset: QuerySet[Procedure]) -> None:
        self._each(request, queryset.filter(status=ProcedureStatus.DEPRECATED), procedure_reactivate, "Reactivated")


@admin.register(ProcedureOutcome)
class ProcedureOutcomeAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = ("recorded", "procedure_link", "applied", "success", "session", "tenant")
    list_filter = ("applied", "success", ("recorded_at", admin.DateFieldListFilter))
    list_select_related = ("tenant", "procedure")  # type: ignore[assignment]
    search_fields = ("=session_external_id",)
    ordering = ("-recorded_at", "-id")
    show_full_result_count = False
    raw_id_fields = ("procedure", "episode")

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProcedureOutcome]:
        return super().get_queryset(request).defer("procedure__trigger_embedding")

    recorded = timestamp_column("recorded_at", "recorded")

    @admin.display(description="session", ordering="session_external_id")
    def session(self, obj: ProcedureOutcome) -> str:
        return breakable(obj.session_external_id) or "-"

    @admin.display(description="procedure")
    def procedure_link(self, obj: ProcedureOutcome) -> str:
        from django.urls import reverse

        url = reverse("admin:procedural_procedure_change", args=[obj.procedure_id])
        return format_html('<a href="{}">{} v{}</a>', url, obj.procedure.name, obj.procedure.version)
