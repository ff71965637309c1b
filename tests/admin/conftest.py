"""Fixtures for the admin and dashboard tests: a staff operator of tenant A, and a memory in each tenant."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.factories.admin import Memory, build_memory, make_operator


@pytest.fixture
def operator_a(tenant_a: Any) -> Any:
    return make_operator("op-a", tenant_a)


@pytest.fixture
def op_client(client: Client, operator_a: Any) -> Client:
    client.force_login(operator_a)
    return client


@pytest.fixture
def memory_a(tenant_a: Any) -> Memory:
    return build_memory(tenant_a, subject="alice")


@pytest.fixture
def memory_b(tenant_b: Any) -> Memory:
    return build_memory(tenant_b, subject="bob", prefix="b-")
