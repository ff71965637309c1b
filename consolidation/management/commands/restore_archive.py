"""Bring a month of archived episodes back into the hot table."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from consolidation.lifecycle import archive_restore
from consolidation.models import ArchiveManifest
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant
from tenants.scope import tenant_scope


class Command(BaseCommand):
    help = "Restore archived episodes of a tenant (one month, or --all). Raise retention first."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--month", help="YYYY-MM")
        parser.add_argument("--all", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        if options["all"]:
            with tenant_scope(tenant):
                months = list(ArchiveManifest.objects.values_list("month", flat=True))
        elif options["month"]:
            months = [options["month"]]
        else:
            self.stderr.write("Give --month YYYY-MM or --all.")
            return
        for month in months:
            self.stdout.write(f"{month}: {archive_restore(tenant=tenant, month=month)} episodes restored")
