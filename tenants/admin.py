"""Admin for tenants, operators and API keys, and the base of every tenant-owned ModelAdmin.

Operators are staff users with memberships; the request's scope (entered by TenantScopeMiddleware)
holds their tenants, so row-level security already hides other tenants' rows. The mixin below also
narrows querysets and tenant choices explicitly, so that the admin never offers what it cannot show.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from tenants import scope
from tenants.models import ApiKey, Tenant, TenantMembership
from tenants.services import api_key_create


def operator_tenant_ids(request: HttpRequest) -> frozenset[Any]:
    return scope.active_tenant_ids() or frozenset()


class TenantOwnedAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Base for ModelAdmins of tenant-owned models."""

    list_select_related = ("tenant",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).filter(tenant_id__in=operator_tenant_ids(request))

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "tenant":
            kwargs["queryset"] = Tenant.objects.filter(id__in=operator_tenant_ids(request))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request: HttpRequest) -> Any:
        base = tuple(super().get_list_filter(request))
        return ("tenant", *base) if len(operator_tenant_ids(request)) > 1 and "tenant" not in base else base


class MembershipInline(admin.TabularInline):  # type: ignore[type-arg]
    model = TenantMembership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Tenant)
class TenantAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("slug", "name", "active", "created_at")
    search_fields = ("slug", "name")
    inlines = (MembershipInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Tenant]:
        return super().get_queryset(request).filter(id__in=operator_tenant_ids(request))

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(getattr(request.user, "is_superuser", False))

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(getattr(request.user, "is_superuser", False))


@admin.register(ApiKey)
class ApiKeyAdmin(TenantOwnedAdmin):
    list_display = ("name", "tenant", "prefix", "scopes", "created_at", "last_used_at", "revoked_at")
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

    @admin.action(description="Revoke selected keys")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key(s).")
