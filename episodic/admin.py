"""Operator admin of episodic memory: sessions and their episodes, both read-only (episodes are
append-only; erasure is the only deletion). Built for tables of millions of rows: exact-match or
full-text search only, no full counts, no dropdown of sessions."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator

from episodic.models import Episode, Session, SessionStatus
from tenants.admin import (
    InputFilter,
    ReadOnlyAdminMixin,
    SubjectFilter,
    TenantOwnedAdmin,
    breakable,
    operator_tenant_ids,
    search_text_or_exact,
    timestamp_column,
)


class SessionFilter(InputFilter):
    title = "session"
    parameter_name = "session"
    lookup = "session__external_id"


class EntityFilter(InputFilter):
    title = "entity"
    parameter_name = "entity"
    lookup = "entities__contains"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        return queryset.filter(entities__contains=[value]) if value else queryset


def dashboard_subject_link(tenant_slug: str, subject: str) -> str:
    url = reverse("dashboard:subject", kwargs={"tenant": tenant_slug, "subject": subject})
    return format_html('<a href="{}">{}</a>', url, subject)


class ReadOnlyAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    pass


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    # The agent and the outcome's signal are on the session's page (issue 44: fits 1280 px).
    list_display = ("session_id", "subject_link", "outcome_shown", "episode_count", "started", "ended", "tenant")
    list_filter = ("status", "outcome", SubjectFilter)
    search_fields = ("=external_id", "=subject", "=agent")
    date_hierarchy = "started_at"
    search_help_text = "Exact session id, subject or agent."
    ordering = ("-started_at", "-id")
    show_full_result_count = False
    list_per_page = 50
    fields = (
        "external_id",
        "tenant",
        "subject",
        "agent",
        "status",
        "started_at",
        "ended_at",
        "last_event_at",
        "outcome",
        "outcome_signal",
        "episode_count",
        "summary",
        "episodes_link",
    )
    readonly_fields = fields

    @admin.display(description="session", ordering="external_id")
    def session_id(self, obj: Session) -> str:
        return breakable(obj.external_id)

    started = timestamp_column("started_at", "started")
    ended = timestamp_column("ended_at", "ended")

    @admin.display(description="outcome", ordering="outcome")
    def outcome_shown(self, obj: Session) -> str:
        # An open session has no outcome yet; an ended one may have none recorded.
        return obj.status if obj.status != SessionStatus.ENDED else obj.outcome or "ended"

    @admin.display(description="subject", ordering="subject")
    def subject_link(self, obj: Session) -> str:
        return dashboard_subject_link(obj.tenant.slug, obj.subject)

    @admin.display(description="episodes")
    def episodes_link(self, obj: Session) -> str:
        url = reverse("admin:episodic_episode_changelist") + f"?session={obj.external_id}"
        return format_html('<a href="{}">{} episodes</a>', url, obj.episode_count)


@admin.register(Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    # The id, the outcome and the token count are on the episode's page (issue 44: fits 1280 px).
    list_display = ("occurred", "session_link", "subject", "kind_role", "content_short", "embedded", "tenant")
    list_display_links = ("occurred",)
    list_filter = (
        "kind",
        "outcome",
        ("occurred_at", admin.DateFieldListFilter),
        SubjectFilter,
        SessionFilter,
        EntityFilter,
    )
    list_select_related = ("tenant", "session")  # type: ignore[assignment]
    search_fields = ("=subject",)
    search_help_text = "Words of the content (full text), or an exact subject; filter by session on the right."
    ordering = ("-created_at", "-id")
    show_full_result_count = False
    list_per_page = 50
    raw_id_fields = ("session",)
    fields: ClassVar[tuple[str, ...]] = (
        "id",
        "tenant",
        "session_link",
        *(f for f in Episode.RECORD_FIELDS if f != "content_hash"),
        "embedded",
        "drawn_facts",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Episode]:
        # The vector stays in the database; the list only needs to know whether it is there.
        return (
            super()
            .get_queryset(request)
            .defer("embedding", "search_vector", "session__summary")
            .annotate(has_embedding=ExpressionWrapper(Q(embedding__isnull=False), output_field=BooleanField()))
        )

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        return search_text_or_exact(queryset, search_term, lambda term: Q(subject=term))

    @admin.display(description="session", ordering="session__external_id")
    def session_link(self, obj: Episode) -> str:
        url = reverse("admin:episodic_session_change", args=[obj.session_id])
        return format_html('<a href="{}">{}</a>', url, breakable(obj.session.external_id))

    occurred = timestamp_column("occurred_at", "occurred")

    @admin.display(description="kind", ordering="kind")
    def kind_role(self, obj: Episode) -> str:
        return f"{obj.kind} · {obj.role}" if obj.role else obj.kind

    @admin.display(description="content")
    def content_short(self, obj: Episode) -> str:
        return Truncator(obj.content).chars(100)

    @admin.display(description="embedded", boolean=True)
    def embedded(self, obj: Episode) -> bool:
        if hasattr(obj, "has_embedding"):  # annotated in lists, where the vector itself is deferred
            return bool(obj.has_embedding)
        return obj.embedding is not None

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # An index-only count on the partial backlog index.
        pending = Episode.objects.filter(tenant_id__in=operator_tenant_ids(request), embedding__isnull=True).count()
        self.message_user(request, f"Embedding backlog: {pending} episodes waiting for an embedding.")
        return super().changelist_view(request, extra_context)

    @admin.display(description="facts drawn from it")
    def drawn_facts(self, obj: Episode) -> str:
        # Through the reverse relation: the episodic layer does not import the semantic one.
        sources = obj.fact_sources.filter(tenant_id=obj.tenant_id).select_related("fact")
        sources = sources.defer("fact__embedding", "fact__search_vector")
        return (
            format_html_join(
                "",
                '<div><a href="{}">{}.{} = {}</a> ({})</div>',
                (
                    (
                        reverse("admin:semantic_fact_change", args=[s.fact_id]),
                        s.fact.entity,
                        s.fact.attribute,
                        s.fact.value,
                        s.fact.status,
                    )
                    for s in sources
                ),
            )
            or "-"
        )
