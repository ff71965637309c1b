"""Operators see sessions and episodes read-only (episodes are append-only), with the embedding backlog."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.response import TemplateResponse

from episodic.models import Episode, Session
from tenants.admin import TenantOwnedAdmin, operator_tenant_ids


class ReadOnlyAdmin(TenantOwnedAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = ("external_id", "subject", "agent", "status", "outcome", "episode_count", "started_at", "ended_at")
    list_filter = ("status", "outcome")
    search_fields = ("external_id", "subject", "agent")
    date_hierarchy = "started_at"


@admin.register(Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "session",
        "subject",
        "kind",
        "role",
        "short_content",
        "occurred_at",
        "token_count",
        "embedded",
    )
    list_filter = ("kind",)
    search_fields = ("subject", "external_id", "session__external_id")
    list_select_related = ("tenant", "session")  # type: ignore[assignment]
    exclude = ("embedding",)
    show_full_result_count = False

    @admin.display(description="content")
    def short_content(self, obj: Episode) -> str:
        return obj.content[:80]

    @admin.display(boolean=True)
    def embedded(self, obj: Episode) -> bool:
        return obj.embedding is not None

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> TemplateResponse:
        pending = Episode.objects.filter(tenant_id__in=operator_tenant_ids(request), embedding__isnull=True).count()
        self.message_user(request, f"Embedding backlog: {pending} episodes waiting for an embedding.")
        return super().changelist_view(request, extra_context)  # type: ignore[return-value]
