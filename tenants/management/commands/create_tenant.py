"""Create a tenant and its first API key (printed once)."""

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from tenants.models import Tenant
from tenants.services import api_key_create, tenant_create


class Command(BaseCommand):
    help = "Create a tenant and print its first API key (shown once)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name")
        parser.add_argument("--slug")
        parser.add_argument("--scopes", default="read,write,admin")
        parser.add_argument("--if-not-exists", action="store_true", help="Do nothing when the slug exists")
        parser.add_argument("--quiet-key", action="store_true", help="Print only the key")

    def handle(self, *args: Any, **options: Any) -> None:
        from django.utils.text import slugify

        slug = options["slug"] or slugify(options["name"])
        if Tenant.objects.filter(slug=slug).exists():
            if options["if_not_exists"]:
                self.stdout.write(f"Tenant {slug!r} exists; no new key.")
                return
            self.stderr.write(f"Tenant {slug!r} exists.")
            raise SystemExit(1)
        tenant = tenant_create(name=options["name"], slug=slug)
        issued = api_key_create(tenant=tenant, name="initial", scopes=options["scopes"].split(","), created_by="cli")
        if options["quiet_key"]:
            self.stdout.write(issued.raw)
        else:
            self.stdout.write(f"Tenant {tenant.slug} ({tenant.id})\nAPI key (shown once): {issued.raw}")
