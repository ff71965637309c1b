"""Load an export_tenant file into an empty tenant (new ids, references rewritten)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consolidation.export import tenant_import
from core.errors import DomainError
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant


class Command(BaseCommand):
    help = "Import FILE (made by export_tenant) into an empty tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--in", dest="infile", required=True, help="Input file (.jsonl.gz)")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        try:
            with open(options["infile"], "rb") as fh:
                counts = tenant_import(tenant=tenant, fh=fh)
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        for label, n in counts.items():
            self.stdout.write(f"{n:>10} {label}")
        self.stdout.write(self.style.SUCCESS(f"Imported into {tenant.slug}"))
