"""Operator admin of consolidation and lifecycle: runs (when and why facts were extracted, what they read
and wrote, what they cost) and archive manifests. Erasure requests and tenant exports are privacy's
(privacy/admin.py)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat
from django.utils.html import format_html

from consolidation.models import ArchiveManifest, ConsolidationRun
from tenants.admin import (
    ReadOnlyAdminMixin,
    SubjectFilter,
    TenantOwnedAdmin,
    breakable,
    stacked,
    timestamp_column,
)


def pretty_json(value: Any) -> str:
    if not value:
        return "-"
    return format_html('<pre class="engram-json">{}</pre>', json.dumps(value, indent=2, sort_keys=True, default=str))


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    # Why it ran (trigger, subject, session), what it read and wrote, what it cost; the reason, the
    # counts one by one and the timings are on the run's page (issue 44: fits 1280 px).
    list_display = (
        "created",
        "trigger_status",
        "subject_session",
        "work",
        "cost_usd",
        "tenant",
    )
    list_filter = ("trigger", "status", ("created_at", admin.DateFieldListFilter), "extractor", SubjectFilter)
    search_fields = ("=session_external_id", "=entity", "=task_id", "reason")
    search_help_text = "Exact session id, entity or Celery task id, or words of the reason."
    ordering = ("-created_at", "-id")
    show_full_result_count = False
    list_per_page = 50
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "tenant",
                    "trigger",
                    "reason",
                    "status",
                    "subject",
                    "session_external_id",
                    "entity",
                    "task_id",
                    "extractor",
                    "attempts",
                    "error",
                )
            },
        ),
        (
            "Work",
            {
                "fields": (
                    "first_episode_id",
                    "last_episode_id",
                    "episodes_read",
                    "candidates",
                    "facts_created",
                    "facts_confirmed",
                    "facts_superseded",
                    "facts_pending",
                    "candidates_rejected",
                    "summaries_written",
                    "problems_pretty",
                )
            },
        ),
        ("Cost", {"fields": ("llm_calls", "input_tokens", "output_tokens", "cache_read_tokens", "cost_usd")}),
        ("Time", {"fields": ("started_at", "finished_at", "duration_ms", "created_at")}),
    )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return [f for fs in self.fieldsets for f in fs[1]["fields"]]

    created = timestamp_column("created_at", "created")

    @admin.display(description="trigger, status", ordering="trigger")
    def trigger_status(self, obj: ConsolidationRun) -> str:
        return stacked(obj.get_trigger_display(), obj.get_status_display().lower())

    @admin.display(description="subject, session", ordering="subject")
    def subject_session(self, obj: ConsolidationRun) -> str:
        return stacked(obj.subject or "-", breakable(obj.session_external_id))

    @admin.display(description="episodes read → facts")
    def work(self, obj: ConsolidationRun) -> str:
        counts = (
            (obj.facts_created, "new"),
            (obj.facts_confirmed, "confirmed"),
            (obj.facts_superseded, "superseded"),
            (obj.facts_pending, "pending"),
        )
        facts = ", ".join(f"{n} {what}" for n, what in counts if n) or "none"
        return f"{obj.episodes_read} → {facts}"

    @admin.display(description="problems")
    def problems_pretty(self, obj: ConsolidationRun) -> str:
        return pretty_json(obj.problems)


@admin.register(ArchiveManifest)
class ArchiveManifestAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = ("month", "episode_count", "size", "occurred", "tenant")
    ordering = ("-month",)
    fields = (
        "tenant",
        "month",
        "path",
        "episode_count",
        "bytes",
        "sha256",
        "first_occurred_at",
        "last_occurred_at",
        "created_at",
        "updated_at",
    )
    readonly_fields = fields

    @admin.display(description="size", ordering="bytes")
    def size(self, obj: ArchiveManifest) -> str:
        return filesizeformat(obj.bytes)

    @admin.display(description="episodes occurred", ordering="first_occurred_at")
    def occurred(self, obj: ArchiveManifest) -> str:
        if obj.first_occurred_at is None or obj.last_occurred_at is None:
            return "-"
        return f"{obj.first_occurred_at:%Y-%m-%d} → {obj.last_occurred_at:%Y-%m-%d}"
