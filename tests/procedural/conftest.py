"""Fixtures of the procedural tests: a helper that creates through the service inside the tenant's scope."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from procedural.models import Procedure
from procedural.services import procedure_create
from tenants.models import Tenant
from tenants.scope import tenant_scope


@pytest.fixture
def make_procedure() -> Callable[..., Procedure]:
    def make(tenant: Tenant, **fields: Any) -> Procedure:
        fields.setdefault("name", "a rule")
        fields.setdefault("behaviour", "Do the careful thing.")
        fields.setdefault("trigger", {"keywords": ["deploy"]})
        fields.setdefault("created_by", "test")
        with tenant_scope(tenant):
            return procedure_create(tenant=tenant, **fields)

    return make
