"""Factories for tenants, and the base of every tenant-owned factory."""

from __future__ import annotations

from typing import Any

import factory
from factory.django import DjangoModelFactory

from tenants.models import Tenant
from tenants.scope import tenant_scope


class TenantFactory(DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Tenant {n}")
    slug = factory.Sequence(lambda n: f"tenant-{n}")


class TenantOwnedFactory(DjangoModelFactory):
    """Creates the row inside its tenant's scope. Sub-factories should take the parent's tenant:
    `session = factory.SubFactory(SessionFactory, tenant=factory.SelfAttribute("..tenant"))`."""

    class Meta:
        abstract = True

    tenant = factory.SubFactory(TenantFactory)

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Any:
        with tenant_scope(kwargs["tenant"]):
            return super()._create(model_class, *args, **kwargs)
