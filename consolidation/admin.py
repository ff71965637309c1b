"""Operator admin of consolidation and lifecycle: runs (why, what they read and wrote, what they cost),
archive manifests, and erasure requests (filed here, carried out by the erasure task, followed here)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html

from consolidation.models import ArchiveManifest, ConsolidationRun, ErasureRequest
from tenants.admin import InputFilter, ReadOnlyAdminMixin, TenantOwnedAdmin


class SubjectFilter(InputFilter):
    title = "subject"
    parameter_name = "subject"
    lookup = "subject"


def pretty_json(value: Any) -> str:
    if not value:
        return "-"
    return format_html('<pre class="engram-json">{}</pre>', json.dumps(value, indent=2, sort_keys=True, default=str))


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = (
        "created_at",
        "trigger",
        "status",
        "reason_short",
        "subject",
        "session_external_id",
        "episodes_read",
        "facts_created",
        "facts_confirmed",
        "facts_superseded",
        "facts_pending",
        "llm_calls",
        "cost_usd",
        "duration_ms",
        "tenant",
    )
    list_filter = ("trigger", "status", ("created_at", admin.DateFieldListFilter), "extractor", SubjectFilter)
    search_fields = ("=session_external_id", "=entity", "=task_id")
    search_help_text = "Exact session id, entity or Celery task id."
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

    @admin.display(description="reason")
    def reason_short(self, obj: ConsolidationRun) -> str:
        return obj.reason[:60]

    @admin.display(description="problems")
    def problems_pretty(self, obj: ConsolidationRun) -> str:
        return pretty_json(obj.problems)


@admin.register(ArchiveManifest)
class ArchiveManifestAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = ("month", "episode_count", "bytes", "first_occurred_at", "last_occurred_at", "updated_at", "tenant")
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


@admin.register(ErasureRequest)
class ErasureRequestAdmin(TenantOwnedAdmin):
    list_display = (
        "created_at",
        "short_id",
        "status",
        "requested_by",
        "deadline",
        "completed_at",
        "attempts",
        "removed_total",
        "tenant",
    )
    list_filter = ("status", ("created_at", admin.DateFieldListFilter))
    search_fields = ("=subject_hash",)
    search_help_text = "The SHA-256 subject hash of the receipt."
    ordering = ("-created_at",)
    show_full_result_count = False
    readonly_fields = (
        "id",
        "status",
        "subject_hash",
        "requested_by",
        "deadline",
        "created_at",
        "started_at",
        "completed_at",
        "attempts",
        "error",
        "counts_pretty",
        "verification_pretty",
        "receipt_pretty",
    )

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The request is the audit record of an erasure; it holds no personal data once done.
        return False

    @admin.display(description="id")
    def short_id(self, obj: ErasureRequest) -> str:
        return str(obj.pk)[:8]

    @admin.display(description="rows removed")
    def removed_total(self, obj: ErasureRequest) -> int:
        return sum(v for v in (obj.counts or {}).values() if isinstance(v, int))

    @admin.display(description="removed, per location")
    def counts_pretty(self, obj: ErasureRequest) -> str:
        return pretty_json(obj.counts)

    @admin.display(description="verification (rows left, per location)")
    def verification_pretty(self, obj: ErasureRequest) -> str:
        return pretty_json(obj.verification)

    @admin.display(description="receipt")
    def receipt_pretty(self, obj: ErasureRequest) -> str:
        return pretty_json(obj.receipt)
