"""Revoke an API key by its prefix."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant
from tenants.models import ApiKey
from tenants.services import api_key_revoke


class Command(BaseCommand):
    help = "Revoke an API key (by the prefix shown in the admin, or the whole key)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("key", help="The key's prefix, or the whole key")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        value: str = options["key"]
        prefix = value.split("_")[1] if value.startswith("eng_") else value
        try:
            api_key = api_key_revoke(tenant=tenant, prefix=prefix)
        except ApiKey.DoesNotExist as exc:
            raise CommandError("No such key for this tenant.") from exc
        self.stdout.write(f"Revoked {api_key.prefix} at {api_key.revoked_at:%Y-%m-%d %H:%M:%S}Z")
