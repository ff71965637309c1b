"""Issue an API key for a tenant (printed once)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant
from tenants.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a tenant; the key is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--name", default="cli")
        parser.add_argument("--scopes", default="read,write")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        issued = api_key_create(
            tenant=tenant, name=options["name"], scopes=options["scopes"].split(","), created_by="cli"
        )
        self.stdout.write(issued.raw)
