"""Operator admin: consolidation runs (when and why facts were extracted), archives, erasure requests.

Erasure requests are created here through `erasure_request_create`, like through the API, and are
followed (status, counts, receipt) but never edited."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from consolidation.erasure import erasure_request_create
from consolidation.models import ArchiveManifest, ConsolidationRun, ErasureRequest
from tenants.admin import ReadOnlyAdminMixin, TenantOwnedAdmin


@admin.register(ConsolidationRun)
class ConsolidationRunAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = (
        "id",
        "created_at",
        "trigger",
        "status",
        "extractor",
        "episodes_read",
        "facts_created",
        "facts_confirmed",
        "facts_superseded",
        "facts_pending",
        "llm_calls",
        "cost_usd",
        "duration_ms",
    )
    list_filter = ("trigger", "status", "extractor")
    search_fields = ("reason", "entity")
    ordering = ("-created_at",)


@admin.register(ArchiveManifest)
class ArchiveManifestAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    list_display = ("month", "episode_count", "bytes", "path", "updated_at")
    ordering = ("-month",)
    exclude = ("subjects",)


class ErasureRequestForm(forms.ModelForm):  # type: ignore[type-arg]
    class Meta:
        model = ErasureRequest
        fields = ("tenant", "subject", "reason")


@admin.register(ErasureRequest)
class ErasureRequestAdmin(TenantOwnedAdmin):
    list_display = ("id", "created_at", "status", "requested_by", "deadline", "completed_at")
    list_filter = ("status",)
    ordering = ("-created_at",)
    readonly_fields = (
        "subject_hash",
        "requested_by",
        "status",
        "deadline",
        "counts",
        "verification",
        "receipt",
        "error",
        "attempts",
        "created_at",
        "started_at",
        "completed_at",
    )

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ErasureRequestForm
            kwargs["fields"] = ("tenant", "subject", "reason")
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return self.readonly_fields if obj is None else (*self.readonly_fields, "tenant", "subject", "reason")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ("tenant", "subject", "reason") if obj is None else super().get_fields(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: ErasureRequest, form: Any, change: bool) -> None:
        created = erasure_request_create(
            tenant=obj.tenant,
            subject=obj.subject,
            requested_by=f"operator:{request.user.get_username()}",
            reason=obj.reason,
        )
        obj.pk = created.pk
        obj._state.adding = False
