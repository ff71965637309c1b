"""Admin for tenants, operators and API keys, and the base of every tenant-owned ModelAdmin.

Operators are staff users with memberships; the request's scope (entered by TenantScopeMiddleware)
holds their tenants, so row-level security already hides other tenants' rows. The mixin below also
narrows querysets and tenant choices explicitly, so that the admin never offers what it cannot show.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.postgres.search import SearchQuery
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from tenants import scope
from tenants.models import ApiKey, ApiKeyScope, Tenant, TenantMembership
from tenants.services import api_key_create

admin.site.site_header = "Engram operator admin"
admin.site.site_title = "Engram admin"
admin.site.index_title = "Memory operations"
# "View site": the memory dashboard, the operators' other page (there is no public site at /).
admin.site.site_url = "/dashboard/"


# Where an identifier may wrap: after a dot, slash, underscore, colon, at sign or hyphen.
_SEPARATOR = re.compile(r"([./_:@-])")


def breakable(text: str) -> SafeString:
    """An identifier (an entity, a session id, an actor) that wraps at its separators in a narrow list
    column instead of pushing the table wider or breaking inside a word (issue 44)."""
    return mark_safe(_SEPARATOR.sub(r"\1<wbr>", escape(text)))  # noqa: S308 - escaped first


def timestamp(value: datetime | None) -> str:
    """A list's date and time that wrap between them, never inside the date ("2026-12-04" breaks at
    its hyphens otherwise)."""
    if value is None:
        return "-"
    local = timezone.localtime(value)
    return format_html(
        '<span class="nowrap">{}</span> <span class="nowrap">{}</span>', f"{local:%Y-%m-%d}", f"{local:%H:%M}"
    )


def stacked(main: Any, detail: Any) -> str:
    """Two values of one list column, the second under the first and quieter (a date and who acted, a
    subject and its session): one column where two would not fit."""
    if detail in (None, ""):
        return format_html("{}", main)
    return format_html('{}<br><span class="engram-muted">{}</span>', main, detail)


def timestamp_column(field: str, description: str) -> Callable[[Any, Any], str]:
    """A list column of the datetime `field`, shown by `timestamp` and sorted by the field."""

    @admin.display(description=description, ordering=field)
    def column(model_admin: Any, obj: Any) -> str:
        return timestamp(getattr(obj, field))

    return column


def operator_tenant_ids(request: HttpRequest) -> frozenset[Any]:
    return scope.active_tenant_ids() or frozenset()


def is_superuser(request: HttpRequest) -> bool:
    return bool(getattr(request.user, "is_superuser", False))


# Apps whose rows belong to the whole platform, not to a tenant: periodic tasks, their intervals and
# crontabs run for every tenant (and take tenant ids as arguments), so only superusers touch them.
PLATFORM_APPS = frozenset({"django_celery_beat"})
# Their lists, narrowed to fit 1280 px beside the sidebar (the schedule says the interval; the start
# time is on the task's page).
PLATFORM_LIST_DISPLAY: dict[str, dict[str, Any]] = {
    "django_celery_beat.PeriodicTask": {
        "list_display": ("name", "enabled", "scheduler", "last_run", "one_off"),
        "last_run": timestamp_column("last_run_at", "last run"),
    },
}


class SuperuserOnlyAdminMixin:
    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return is_superuser(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)


def restrict_platform_admin(site: admin.AdminSite = admin.site) -> list[str]:
    """Re-register every platform model's admin as superuser-only; returns their labels. Call once
    every admin module is loaded (the tenants app's ready())."""
    restricted = []
    for model, model_admin in list(site._registry.items()):
        if model._meta.app_label not in PLATFORM_APPS or isinstance(model_admin, SuperuserOnlyAdminMixin):
            continue
        cls = type(model_admin)
        site.unregister(model)
        attrs = PLATFORM_LIST_DISPLAY.get(model._meta.label, {})
        site.register(model, type(f"SuperuserOnly{cls.__name__}", (SuperuserOnlyAdminMixin, cls), attrs))
        restricted.append(model._meta.label)
    return restricted


class TenantOwnedAdmin(admin.ModelAdmin):
    """Base for ModelAdmins of tenant-owned models."""

    list_select_related = ("tenant",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(tenant_id__in=operator_tenant_ids(request))

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "tenant":
            kwargs["queryset"] = Tenant.objects.filter(id__in=operator_tenant_ids(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_display(self, request: HttpRequest) -> Any:
        # The tenant column only tells something to operators of several tenants.
        base = tuple(super().get_list_display(request))
        return base if len(operator_tenant_ids(request)) > 1 else tuple(f for f in base if f != "tenant")

    def get_list_filter(self, request: HttpRequest) -> Any:
        base = tuple(super().get_list_filter(request))
        return ("tenant", *base) if len(operator_tenant_ids(request)) > 1 and "tenant" not in base else base


class ReadOnlyAdminMixin:
    """For append-only or derived rows (episodes, runs, traces, the audit log): view, never edit."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def search_text_or_exact(
    queryset: QuerySet[Any], search_term: str, exact: Callable[[str], Q]
) -> tuple[QuerySet[Any], bool]:
    """The admin search of a large table: full text on `search_vector` (GIN) or the `exact(term)` matches
    (B-tree), never ILIKE '%x%', which would scan. An empty term searches nothing."""
    term = search_term.strip()
    if not term:
        return queryset, False
    words = SearchQuery(term, config="english", search_type="websearch")
    return queryset.filter(Q(search_vector=words) | exact(term)), False


class InputFilter(admin.SimpleListFilter):
    """A free-text exact-match filter: on tables with millions of rows a list of choices is no option.
    Subclasses set `title`, `parameter_name` and `lookup` (the ORM lookup the text is matched with)."""

    template = "admin/engram_input_filter.html"
    lookup = ""

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # A non-empty list, or Django hides the filter; the template renders a text box instead.
        return [("", "")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = (self.value() or "").strip()
        return queryset.filter(**{self.lookup: value}) if value else queryset

    def choices(self, changelist: Any) -> Any:
        # The template reads the other query parameters from here, to keep them when the box is submitted.
        params = {k: v for k, v in changelist.filter_params.items() if k != self.parameter_name}
        yield {
            "value": self.value() or "",
            "parameter_name": self.parameter_name,
            "other_params": [(k, item) for k, values in params.items() for item in _as_list(values)],
            "clear_url": changelist.get_query_string(remove=[self.parameter_name]),
        }


class SubjectFilter(InputFilter):
    """Every memory layer is read by subject."""

    title = "subject"
    parameter_name = "subject"
    lookup = "subject"


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


class MembershipInline(admin.TabularInline):
    model = TenantMembership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):
    list_display = ("slug", "name", "active", "created")
    search_fields = ("slug", "name")
    inlines = (MembershipInline,)
    # Whether the tenant runs and its tunables (rate limit, budgets, retention) are the platform's call.
    platform_fields = ("active", "settings")
    created = timestamp_column("created_at", "created")
    # Kept by the alias services (episodic.aliases), never by hand.
    readonly_fields = ("has_entity_aliases",)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        base = tuple(super().get_readonly_fields(request, obj))
        return base if is_superuser(request) else (*base, *self.platform_fields)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return super().get_queryset(request).filter(id__in=operator_tenant_ids(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_superuser(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_superuser(request)


class ApiKeyAdminForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=ApiKeyScope.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = ApiKey
        fields = ("tenant", "name", "scopes")


@admin.register(ApiKey)
class ApiKeyAdmin(TenantOwnedAdmin):
    form = ApiKeyAdminForm
    # The rest (who created it, when) is on the key's page.
    list_display = ("name", "prefix", "scopes_shown", "last_used", "revoked", "tenant")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix")
    fields = ("tenant", "name", "scopes", "prefix", "created_at", "last_used_at", "revoked_at", "created_by")
    readonly_fields = ("prefix", "created_at", "last_used_at", "revoked_at", "created_by")
    actions = ("revoke",)

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            obj.save(update_fields=["name", "scopes"])
            return
        issued = api_key_create(
            tenant=obj.tenant, name=obj.name, scopes=obj.scopes or ["read", "write"], created_by=str(request.user)
        )
        obj.pk = issued.api_key.pk
        obj.prefix = issued.api_key.prefix
        messages.warning(request, f"New API key (shown once, copy it now): {issued.raw}")

    last_used = timestamp_column("last_used_at", "last used")
    revoked = timestamp_column("revoked_at", "revoked")

    @admin.display(description="scopes")
    def scopes_shown(self, obj: ApiKey) -> str:
        return ", ".join(obj.scopes or [])

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key(s).")
