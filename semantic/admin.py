"""Operator admin of semantic memory: facts, the review queue of pending facts and fact changes (the audit).

Every decision goes through semantic.services (fact_review_decide, fact_edit, fact_revert, ...), so
each one is a FactChange with the operator as actor, exactly like a change made through the API.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.utils.text import Truncator

from core.errors import DomainError
from episodic.aliases import alias_key, entity_alias_check, entity_alias_delete
from episodic.models import AliasSource, EntityAlias
from semantic.aliases import entity_alias_set
from semantic.models import ActorType, Fact, FactChange, FactChangeKind, FactSource, FactStatus
from semantic.selectors import needs_confirmation_q
from semantic.services import (
    allowed_categories,
    fact_confirm,
    fact_edit,
    fact_retract,
    fact_revert,
    fact_review_decide,
)
from semantic.types import Actor
from tenants.admin import (
    InputFilter,
    ReadOnlyAdminMixin,
    SubjectFilter,
    TenantOwnedAdmin,
    breakable,
    operator_tenant_ids,
    search_text_or_exact,
    stacked,
    timestamp,
    timestamp_column,
)
from tenants.models import Tenant, TenantSettings
from tenants.scope import tenant_scope

LIVE = (FactStatus.ACTIVE, FactStatus.PENDING_REVIEW)
EDITABLE_FIELDS = ("value", "statement", "category", "confidence")
REVIEW_PAGE_SIZE = 25
# Newest first by default: what consolidation has just learned is what the agents are about to be served.
REVIEW_ORDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "newest": ("newest first", ("-recorded_at", "-id")),
    "oldest": ("oldest first", ("recorded_at", "id")),
    "confidence": ("least confident first", ("confidence", "-recorded_at", "-id")),
}


def operator_actor(request: HttpRequest, reason: str = "") -> Actor:
    user = request.user
    return Actor(type=ActorType.OPERATOR, id=user.get_username() if user.is_authenticated else "", reason=reason)


def episode_links(episode_ids: Iterable[int]) -> str:
    return format_html_join(
        ", ",
        '<a href="{}">#{}</a>',
        ((reverse("admin:episodic_episode_change", args=[eid]), eid) for eid in episode_ids),
    )


def _shown_value(value: str) -> str:
    # A LangGraph EngramStore fact (clients/python) keeps {"created_at", "key", "value"}: show the item.
    try:
        stored = json.loads(value)
    except ValueError:
        return value
    if isinstance(stored, dict) and set(stored) == {"created_at", "key", "value"}:
        return json.dumps(stored["value"], ensure_ascii=False, sort_keys=True)
    return value


def _short(text: str | None, n: int = 60) -> str:
    return Truncator(text or "").chars(n)


class NothingToDo(DomainError):
    """An action that would change nothing: said as a warning, not counted as done."""


def apply_each(request: HttpRequest, items: Iterable[Any], fn: Callable[[Any], object], done: str) -> tuple[int, int]:
    """Run one service call per item, each in its own savepoint and in the scope of the item's tenant
    alone (the admin's holds every tenant of the operator), so that one refusal (a Conflict, say) is
    reported and the others still go through."""
    ok = failed = 0
    for item in items:
        try:
            with tenant_scope(item.tenant_id):
                fn(item)
        except NothingToDo as exc:
            messages.warning(request, exc.detail)
        except DomainError as exc:
            failed += 1
            messages.error(request, f"{item}: {exc.detail}")
        else:
            ok += 1
    if ok:
        messages.success(request, f"{done}: {ok}.")
    return ok, failed


class EntityFilter(InputFilter):
    title = "entity"
    parameter_name = "entity"
    lookup = "entity"


class AttributeFilter(InputFilter):
    title = "attribute"
    parameter_name = "attribute"
    lookup = "attribute"


class ChangeEntityFilter(EntityFilter):
    lookup = "fact__entity"


class ChangeAttributeFilter(AttributeFilter):
    lookup = "fact__attribute"


class FactEditForm(forms.ModelForm):
    """The operator's correction of a live fact; checks here mirror fact_edit's so that the admin
    shows them next to the field."""

    class Meta:
        model = Fact
        fields = EDITABLE_FIELDS

    def clean_category(self) -> str:
        category = str(self.cleaned_data["category"])
        if category not in allowed_categories(self.instance.tenant):
            raise forms.ValidationError(f"Unknown category {category!r}.")
        return category

    def clean_confidence(self) -> float:
        confidence = float(self.cleaned_data["confidence"])
        if not 0.0 <= confidence <= 1.0:
            raise forms.ValidationError("Confidence must be between 0 and 1.")
        return confidence

    def validate_constraints(self) -> None:
        # fact_edit checks the live-value clash itself, under a row lock; the form's check would race.
        return None


class NeedsConfirmationFilter(admin.SimpleListFilter):
    """Facts to put to the subject again (GET /v1/facts?needs_confirmation=true). Across tenants the
    default horizons apply; a tenant's own are used by the API."""

    title = "needs confirmation"
    parameter_name = "needs_confirmation"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Yes")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Fact]) -> QuerySet[Fact]:
        if self.value() != "yes":
            return queryset
        horizons = TenantSettings().decay_half_life_days
        return queryset.filter(needs_confirmation_q(horizons=horizons, now=timezone.now()))


@admin.register(Fact)
class FactAdmin(TenantOwnedAdmin):
    form = FactEditForm
    # What an operator scans for: which fact, its value, whether it is believed and how firmly. The
    # statement, category and the rest are on the fact's page (issue 44: fits 1280 px beside the filters).
    list_display = ("fact_name", "value_short", "status_shown", "subject", "recorded", "tenant")
    list_filter = (
        "status",
        "category",
        "origin",
        "cardinality",
        NeedsConfirmationFilter,
        EntityFilter,
        AttributeFilter,
        SubjectFilter,
    )
    search_fields = ("entity",)
    search_help_text = "Words of the statement (full text), or an exact entity or subject."
    ordering = ("-recorded_at",)
    show_full_result_count = False
    list_per_page = 50
    actions = ("approve_selected", "reject_selected", "confirm_selected", "retract_selected")
    readonly_fields = (
        "id",
        "tenant",
        "subject",
        "entity",
        "attribute",
        "status",
        "cardinality",
        "origin",
        "valid_from",
        "valid_to",
        "recorded_at",
        "last_confirmed_at",
        "confirmation_count",
        "use_count",
        "last_used_at",
        "superseded_by_link",
        "object_entity",
        "source_episodes_list",
        "history",
    )
    fieldsets = (
        (None, {"fields": ("id", "tenant", "subject", "entity", "attribute", *EDITABLE_FIELDS, "status")}),
        ("Validity", {"fields": ("valid_from", "valid_to", "recorded_at", "last_confirmed_at", "superseded_by_link")}),
        (
            "Use",
            {"fields": ("confirmation_count", "use_count", "last_used_at", "cardinality", "origin", "object_entity")},
        ),
        ("Provenance and history", {"fields": ("source_episodes_list", "history")}),
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[Fact]:
        return super().get_queryset(request).defer("embedding", "search_vector")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        return search_text_or_exact(queryset, search_term, lambda term: Q(entity=term.lower()) | Q(subject=term))

    def get_readonly_fields(self, request: HttpRequest, obj: Fact | None = None) -> Any:
        if obj is not None and obj.status not in LIVE:
            return (*self.readonly_fields, *EDITABLE_FIELDS)
        return self.readonly_fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Retract instead: the history stays. Erasure is the only deletion.
        return False

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Fact | None = None,
    ) -> HttpResponse:
        # A superseded, retracted or rejected fact is history: every field is read-only, so no Save.
        if obj is not None and obj.status not in LIVE:
            context.update(show_save=False, show_save_and_continue=False, show_save_and_add_another=False)
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    recorded = timestamp_column("recorded_at", "recorded")

    @admin.display(description="fact", ordering="entity")
    def fact_name(self, obj: Fact) -> str:
        return breakable(f"{obj.entity}.{obj.attribute}")

    @admin.display(description="value", ordering="value")
    def value_short(self, obj: Fact) -> str:
        return _short(_shown_value(obj.value), 80)

    @admin.display(description="status, confidence", ordering="status")
    def status_shown(self, obj: Fact) -> str:
        return stacked(obj.get_status_display(), f"{obj.confidence:.2f}")

    @admin.display(description="superseded by")
    def superseded_by_link(self, obj: Fact) -> str:
        if obj.superseded_by_id is None:
            return "-"
        url = reverse("admin:semantic_fact_change", args=[obj.superseded_by_id])
        return format_html('<a href="{}">{}</a>', url, obj.superseded_by_id)

    @admin.display(description="source episodes")
    def source_episodes_list(self, obj: Fact) -> str:
        sources = (
            FactSource.objects.filter(tenant_id=obj.tenant_id, fact=obj)
            .select_related("episode__session")
            .defer("episode__embedding", "episode__search_vector")
            .order_by("episode__occurred_at", "episode_id")
        )
        rows = format_html_join(
            "",
            '<li><a href="{}">#{}</a> {} · session {}: {}</li>',
            (
                (
                    reverse("admin:episodic_episode_change", args=[s.episode_id]),
                    s.episode_id,
                    s.episode.occurred_at.strftime("%Y-%m-%d %H:%M"),
                    s.episode.session.external_id,
                    _short(s.episode.content, 200),
                )
                for s in sources
            ),
        )
        return format_html('<ul class="engram-sources">{}</ul>', rows) if rows else "-"

    @admin.display(description="history")
    def history(self, obj: Fact) -> str:
        changes = (
            # The admin's scope may hold several tenants: name the fact's own.
            FactChange.objects.filter(tenant_id=obj.tenant_id)
            # A revert is logged once, on the reinstated fact; the displaced one shows it too.
            .filter(Q(fact=obj) | Q(related_fact=obj, kind=FactChangeKind.REVERTED))
            .order_by("created_at", "id")
        )
        rows = format_html_join(
            "",
            "<li>{} <b>{}</b> {} → {} by {}:{} {}</li>",
            (
                (
                    c.created_at.strftime("%Y-%m-%d %H:%M"),
                    c.kind,
                    c.old_value or "∅",
                    c.new_value or "∅",
                    c.actor_type,
                    c.actor_id,
                    c.reason,
                )
                for c in changes
            ),
        )
        url = reverse("admin:semantic_factchange_changelist") + f"?fact={obj.id}"
        return format_html('<ul class="engram-history">{}</ul><a href="{}">in fact changes</a>', rows, url)

    def save_model(self, request: HttpRequest, obj: Fact, form: Any, change: bool) -> None:
        changed = {name: form.cleaned_data[name] for name in form.changed_data if name in EDITABLE_FIELDS}
        if not changed:
            return
        try:
            with tenant_scope(obj.tenant_id):
                fact_edit(tenant=obj.tenant, fact_id=obj.id, actor=operator_actor(request, "admin edit"), **changed)
        except DomainError as exc:
            request._engram_edit_error = exc.detail  # type: ignore[attr-defined]

    def response_change(self, request: HttpRequest, obj: Fact) -> HttpResponse:
        error = getattr(request, "_engram_edit_error", None)
        if error:
            messages.error(request, f"Not saved: {error}")
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)

    def _decide(self, request: HttpRequest, queryset: QuerySet[Fact], approve: bool) -> None:
        pending = queryset.filter(status=FactStatus.PENDING_REVIEW)
        skipped = queryset.exclude(status=FactStatus.PENDING_REVIEW).count()
        actor = operator_actor(request, "review queue")
        apply_each(
            request,
            pending,
            lambda f: fact_review_decide(tenant=f.tenant, fact_id=f.id, approve=approve, actor=actor),
            "Approved" if approve else "Rejected",
        )
        if skipped:
            messages.warning(request, f"{skipped} selected fact(s) were not pending review and were left alone.")

    @admin.action(description="Approve selected pending facts", permissions=("change",))
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Reject selected pending facts", permissions=("change",))
    def reject_selected(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        self._decide(request, queryset, approve=False)

    @admin.action(description="Confirm selected facts", permissions=("change",))
    def confirm_selected(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        actor = operator_actor(request, "confirmed in the admin")
        apply_each(request, queryset, lambda f: fact_confirm(tenant=f.tenant, fact_id=f.id, actor=actor), "Confirmed")

    @admin.action(description="Retract selected facts (history is kept)", permissions=("change",))
    def retract_selected(self, request: HttpRequest, queryset: QuerySet[Fact]) -> None:
        actor = operator_actor(request, "retracted in the admin")
        apply_each(request, queryset, lambda f: fact_retract(tenant=f.tenant, fact_id=f.id, actor=actor), "Retracted")

    # --- the review queue ------------------------------------------------------------------------
    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.review_view)
        return [path("review/", view, name="semantic_fact_review"), *super().get_urls()]

    def review_view(self, request: HttpRequest) -> HttpResponse:
        """Pending facts, each with its source episodes; approve, reject or correct-and-approve many
        at once."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            if not self.has_change_permission(request):
                raise PermissionDenied
            self._review_post(request)
            return HttpResponseRedirect(request.get_full_path())
        queryset, filters = self._review_queryset(request)
        page = Paginator(queryset, REVIEW_PAGE_SIZE).get_page(request.GET.get("p"))
        facts = list(page.object_list)
        show_tenant = len(operator_tenant_ids(request)) > 1
        sources: dict[uuid.UUID, list[FactSource]] = {f.id: [] for f in facts}
        rows = (
            FactSource.objects.filter(tenant_id__in=operator_tenant_ids(request), fact_id__in=list(sources))
            .select_related("episode__session")
            .defer("episode__embedding", "episode__search_vector")
            .order_by("episode__occurred_at", "episode_id")
        )
        for source in rows:
            sources[source.fact_id].append(source)
        context = {
            **self.admin_site.each_context(request),
            "title": "Fact review queue",
            "opts": self.opts,
            "page": page,
            "items": [(f, sources[f.id]) for f in facts],
            "can_change": self.has_change_permission(request),
            "show_tenant": show_tenant,
            "tenants": Tenant.objects.filter(id__in=operator_tenant_ids(request)).order_by("slug")
            if show_tenant
            else [],
            "filters": filters,
            "filtered": any(filters[k] for k in ("tenant", "subject", "q")),
            "orders": [(key, label) for key, (label, _fields) in REVIEW_ORDERS.items()],
            "query": urlencode({k: v for k, v in filters.items() if v and not (k == "order" and v == "newest")}),
        }
        return TemplateResponse(request, "admin/semantic/fact/review.html", context)

    def _review_queryset(self, request: HttpRequest) -> tuple[QuerySet[Fact], dict[str, str]]:
        """The pending facts the operator asked for: one tenant, one subject, words or a name
        (FactAdmin's search), in the chosen order. The base queryset holds the operator's tenants, so
        a filter can only narrow it."""
        filters = {name: request.GET.get(name, "").strip() for name in ("tenant", "subject", "q", "order")}
        if filters["order"] not in REVIEW_ORDERS:
            filters["order"] = "newest"
        queryset = self.get_queryset(request).filter(status=FactStatus.PENDING_REVIEW)
        if filters["tenant"]:
            try:
                queryset = queryset.filter(tenant_id=uuid.UUID(filters["tenant"]))
            except ValueError:
                queryset = queryset.none()
        if filters["subject"]:
            queryset = queryset.filter(subject=filters["subject"])
        if filters["q"]:
            queryset, _ = self.get_search_results(request, queryset, filters["q"])
        return queryset.order_by(*REVIEW_ORDERS[filters["order"]][1]), filters

    def _review_post(self, request: HttpRequest) -> None:
        decision = request.POST.get("decision")
        if decision not in ("approve", "reject"):
            messages.error(request, "Choose approve or reject.")
            return
        ids = []
        for raw in request.POST.getlist("fact"):
            try:
                ids.append(uuid.UUID(raw))
            except ValueError:
                continue
        if not ids:
            messages.warning(request, "No fact selected.")
            return
        facts = self.get_queryset(request).filter(id__in=ids).order_by("recorded_at", "id")
        actor = operator_actor(request, "review queue")

        def decide(fact: Fact) -> Fact:
            edits: dict[str, str] = {}
            if decision == "approve":
                for name in ("value", "statement"):
                    submitted = request.POST.get(f"{name}-{fact.id}")
                    if submitted is not None and submitted.strip() and submitted.strip() != getattr(fact, name):
                        edits[name] = submitted
            return fact_review_decide(
                tenant=fact.tenant, fact_id=fact.id, approve=decision == "approve", actor=actor, **edits
            )

        apply_each(request, facts, decide, "Approved" if decision == "approve" else "Rejected")


@admin.register(FactChange)
class FactChangeAdmin(ReadOnlyAdminMixin, TenantOwnedAdmin):
    """Fact changes, the audit: every change of every fact, who made it and why; supersessions can be
    reverted (through fact_revert, itself logged)."""

    # Fits 1280 px beside the sidebar and the filters: when and by whom in one column, old -> new in
    # another, the revert under the kind, identifiers that wrap at their dots and colons; the source
    # episodes are on the change's page.
    list_display = ("when", "fact_link", "kind_and_revert", "change", "reason_short", "tenant")
    list_filter = (
        "kind",
        "actor_type",
        ("created_at", admin.DateFieldListFilter),
        ChangeEntityFilter,
        ChangeAttributeFilter,
    )
    list_select_related = ("tenant", "fact")  # type: ignore[assignment]
    ordering = ("-created_at", "-id")
    show_full_result_count = False
    list_per_page = 50
    actions = ("revert_selected",)
    fields = (
        "fact_link",
        "kind",
        "old_value",
        "new_value",
        "old_status",
        "new_status",
        "old_confidence",
        "new_confidence",
        "related_fact_link",
        "reason",
        "actor",
        "sources",
        "created_at",
        "tenant",
    )
    readonly_fields = fields

    class FactFilter(InputFilter):
        title = "fact id"
        parameter_name = "fact"
        lookup = "fact_id"

        def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
            value = (self.value() or "").strip()
            if not value:
                return queryset
            try:
                return queryset.filter(fact_id=uuid.UUID(value))
            except ValueError:
                return queryset.none()  # a malformed id matches nothing, like any unknown one

    def get_list_filter(self, request: HttpRequest) -> Any:
        return (*super().get_list_filter(request), self.FactFilter)

    def get_queryset(self, request: HttpRequest) -> QuerySet[FactChange]:
        # Whether the value a supersession closed is the current one again (reverted already, or
        # observed anew): then a revert would change nothing, and none is offered.
        value_is_current = Exists(
            Fact.objects.filter(
                tenant_id=OuterRef("tenant_id"),
                entity=OuterRef("fact__entity"),
                attribute=OuterRef("fact__attribute"),
                value_key=OuterRef("fact__value_key"),
                status=FactStatus.ACTIVE,
            )
        )
        return (
            super()
            .get_queryset(request)
            .defer("fact__embedding", "fact__search_vector")
            .annotate(value_is_current=value_is_current)
        )

    @admin.display(description="fact")
    def fact_link(self, obj: FactChange) -> str:
        url = reverse("admin:semantic_fact_change", args=[obj.fact_id])
        return format_html('<a href="{}">{}</a>', url, breakable(f"{obj.fact.entity}.{obj.fact.attribute}"))

    @admin.display(description="related fact")
    def related_fact_link(self, obj: FactChange) -> str:
        if obj.related_fact_id is None:
            return "-"
        return format_html(
            '<a href="{}">{}</a>',
            reverse("admin:semantic_fact_change", args=[obj.related_fact_id]),
            obj.related_fact_id,
        )

    @admin.display(description="kind", ordering="kind")
    def kind_and_revert(self, obj: FactChange) -> str:
        return format_html("{}<br>{}", obj.get_kind_display(), self.revert_button(obj))

    @admin.display(description="when, by", ordering="created_at")
    def when(self, obj: FactChange) -> str:
        return stacked(timestamp(obj.created_at), self.actor(obj))

    @admin.display(description="old → new value")
    def change(self, obj: FactChange) -> str:
        old, new = _short(obj.old_value, 40), _short(obj.new_value, 40)
        if old and new and old != new:
            return f"{old} → {new}"
        return new or old or "-"

    @admin.display(description="old value")
    def old_value_short(self, obj: FactChange) -> str:
        return _short(obj.old_value, 40) or "-"

    @admin.display(description="new value")
    def new_value_short(self, obj: FactChange) -> str:
        return _short(obj.new_value, 40) or "-"

    @admin.display(description="reason")
    def reason_short(self, obj: FactChange) -> str:
        return breakable(_short(obj.reason, 48))

    @admin.display(description="actor", ordering="actor_type")
    def actor(self, obj: FactChange) -> str:
        return breakable(f"{obj.actor_type}:{obj.actor_id}" if obj.actor_id else obj.actor_type)

    @admin.display(description="sources")
    def sources(self, obj: FactChange) -> str:
        return episode_links(obj.source_episode_ids) or "-"

    @admin.display(description="")
    def revert_button(self, obj: FactChange) -> str:
        if not _revertible(obj):
            return ""
        # A link to a confirmation page: one click used to revert at once.
        url = reverse("admin:semantic_factchange_revert", args=[obj.pk])
        return format_html('<a class="button engram-revert" href="{}">Revert…</a>', url)

    def has_revert_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("semantic.change_fact"))

    def _revert(self, request: HttpRequest, changes: Iterable[FactChange]) -> None:
        reason = " ".join(request.POST.get("reason", "").split())[:500]
        actor = operator_actor(request, "; ".join(p for p in ("reverted in the admin", reason) if p))

        def revert(change: FactChange) -> None:
            if _reverted_already(change):
                raise NothingToDo(_nothing_to_revert(change))
            current = set(
                Fact.objects.filter(
                    entity=change.fact.entity, attribute=change.fact.attribute, status=FactStatus.ACTIVE
                ).values_list("id", flat=True)
            )
            result = fact_revert(tenant=change.tenant, change_id=change.pk, actor=actor)
            # The service answers a revert carried out meanwhile (or a value written another way that
            # is current already) with that fact, writing nothing.
            if result.action == "confirmed" and result.fact.pk in current:
                raise NothingToDo(_nothing_to_revert(change))

        apply_each(request, changes, revert, "Reverted")

    def _revert_confirmation(
        self, request: HttpRequest, changes: list[FactChange], *, next_url: str, action: str = "", form_url: str = ""
    ) -> TemplateResponse:
        """What a revert would do, before it does it: the value now and the value after, per fact."""
        keys = {(c.tenant_id, c.fact.entity, c.fact.attribute) for c in changes}
        current: dict[tuple[Any, str, str], str] = {}
        if keys:
            q = Q()
            for tenant_id, entity, attribute in keys:
                q |= Q(tenant_id=tenant_id, entity=entity, attribute=attribute)
            live = Fact.objects.filter(tenant_id__in=operator_tenant_ids(request), status=FactStatus.ACTIVE).filter(q)
            for tenant_id, entity, attribute, value in live.values_list("tenant_id", "entity", "attribute", "value"):
                current[(tenant_id, entity, attribute)] = value
        items = [
            {
                "change": c,
                "current": current.get((c.tenant_id, c.fact.entity, c.fact.attribute)),
                "unchanged": _reverted_already(c),
            }
            for c in changes
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "Revert supersession" if len(changes) == 1 else "Revert supersessions",
            "opts": self.opts,
            "items": items,
            "to_revert": sum(1 for item in items if not item["unchanged"]),
            "next": next_url,
            "action": action,
            "form_url": form_url,
        }
        return TemplateResponse(request, "admin/semantic/factchange/revert_confirm.html", context)

    def _next_url(self, request: HttpRequest, candidate: str) -> str:
        if candidate and url_has_allowed_host_and_scheme(candidate, allowed_hosts={request.get_host()}):
            parts = urlsplit(candidate)
            return f"{parts.path}?{parts.query}" if parts.query else parts.path
        return reverse("admin:semantic_factchange_changelist")

    @admin.action(description="Revert selected supersessions", permissions=("revert",))
    def revert_selected(self, request: HttpRequest, queryset: QuerySet[FactChange]) -> TemplateResponse | None:
        changes = list(queryset.order_by("created_at", "id"))
        if request.POST.get("post") != "yes":
            return self._revert_confirmation(
                request, changes, next_url=request.get_full_path(), action="revert_selected"
            )
        self._revert(request, changes)
        return None

    def get_urls(self) -> list[URLPattern]:
        view = self.admin_site.admin_view(self.revert_view)
        return [path("<int:change_id>/revert/", view, name="semantic_factchange_revert"), *super().get_urls()]

    def revert_view(self, request: HttpRequest, change_id: int) -> HttpResponse:
        """GET: the confirmation page; POST with post=yes: the revert, then back where the operator was."""
        if not self.has_revert_permission(request):
            raise PermissionDenied
        change = get_object_or_404(self.get_queryset(request), pk=change_id)
        if request.method == "POST" and request.POST.get("post") == "yes":
            self._revert(request, [change])
            return HttpResponseRedirect(self._next_url(request, request.POST.get("next", "")))
        next_url = self._next_url(request, request.META.get("HTTP_REFERER", ""))
        return self._revert_confirmation(request, [change], next_url=next_url)


def _is_open_supersession(change: FactChange) -> bool:
    return change.kind == FactChangeKind.SUPERSEDED and change.fact.status == FactStatus.SUPERSEDED


def _reverted_already(change: FactChange) -> bool:
    """A supersession whose closed value is the current one again: a revert would change nothing."""
    return _is_open_supersession(change) and bool(getattr(change, "value_is_current", False))


def _revertible(change: FactChange) -> bool:
    return _is_open_supersession(change) and not _reverted_already(change)


def _nothing_to_revert(change: FactChange) -> str:
    fact = change.fact
    return (
        f"Nothing to revert: {fact.entity}.{fact.attribute} already holds {fact.value!r} "
        f"(change {change.pk} was reverted before, or the value was observed again)."
    )


class AliasEntityFilter(EntityFilter):
    lookup = "entity"


class EntityAliasForm(forms.ModelForm):
    """An operator's alias; the checks are entity_alias_set's, shown next to the fields."""

    class Meta:
        model = EntityAlias
        fields = ("tenant", "alias", "entity")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        tenant = data.get("tenant") or getattr(self.instance, "tenant", None)
        if tenant is not None and data.get("alias") and data.get("entity"):
            try:
                with tenant_scope(tenant):
                    entity_alias_check(tenant=tenant, alias=data["alias"], entity=data["entity"])
            except DomainError as exc:
                raise forms.ValidationError(exc.detail) from exc
        return data

    def validate_constraints(self) -> None:
        # The service normalises the names first and holds the tenant's alias lock; the form's check would race.
        return None


@admin.register(EntityAlias)
class EntityAliasAdmin(TenantOwnedAdmin):
    """Aliases of entities: operators set them (the facts filed under the alias move to its entity,
    semantic.aliases); consolidation learns them per subject. An operator's alias wins."""

    form = EntityAliasForm
    list_display = ("alias", "entity_shown", "source", "subject", "created", "tenant")
    list_filter = ("source", AliasEntityFilter, SubjectFilter)
    search_fields = ("alias",)
    search_help_text = "An exact alias or entity."
    ordering = ("-created_at",)
    readonly_fields = ("source", "subject", "source_episode_id", "created_by", "created_at", "updated_at")

    created = timestamp_column("created_at", "created")

    @admin.display(description="entity", ordering="entity")
    def entity_shown(self, obj: EntityAlias) -> str:
        return breakable(obj.entity)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        term = alias_key(search_term)
        return (queryset.filter(Q(alias=term) | Q(entity=term)), False) if term else (queryset, False)

    def get_readonly_fields(self, request: HttpRequest, obj: EntityAlias | None = None) -> Any:
        if obj is None:
            return self.readonly_fields
        # A learned alias is kept or removed, not rewritten; an operator's may point elsewhere.
        fixed = ("tenant", "alias", "entity") if obj.source == AliasSource.LEARNED else ("tenant", "alias")
        return (*fixed, *self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: EntityAlias, form: Any, change: bool) -> None:
        with tenant_scope(obj.tenant_id):
            result = entity_alias_set(
                tenant=obj.tenant, alias=obj.alias, entity=obj.entity, actor=operator_actor(request, "admin alias")
            )
        obj.pk, obj.alias, obj.entity = result.alias.pk, result.alias.alias, result.alias.entity
        if result.facts_moved:
            messages.info(request, f"{result.facts_moved} fact(s) filed under {obj.alias!r} moved to {obj.entity!r}.")

    def delete_model(self, request: HttpRequest, obj: EntityAlias) -> None:
        with tenant_scope(obj.tenant_id):
            entity_alias_delete(tenant=obj.tenant, alias_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[EntityAlias]) -> None:
        for row in queryset:
            with tenant_scope(row.tenant_id):
                entity_alias_delete(tenant=row.tenant, alias_id=row.pk)
