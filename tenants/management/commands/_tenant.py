"""Shared argument handling for commands that act on one tenant (`--tenant <slug or id>`)."""

from __future__ import annotations

import uuid

from django.core.management.base import CommandError, CommandParser

from tenants.models import Tenant


def add_tenant_argument(parser: CommandParser) -> None:
    parser.add_argument("--tenant", required=True, help="Tenant slug or id")


def resolve_tenant(value: str) -> Tenant:
    try:
        return Tenant.objects.get(id=uuid.UUID(value))
    except (ValueError, Tenant.DoesNotExist):
        pass
    try:
        return Tenant.objects.get(slug=value)
    except Tenant.DoesNotExist as exc:
        raise CommandError(f"No tenant {value!r}.") from exc
