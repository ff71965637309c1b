"""Split the episodes stored before passages existed into passages (episodic.passages), with progress."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from episodic.passages import passages_backfill, passages_missing
from tenants.management.commands._tenant import add_tenants_arguments, progress_bar, resolve_tenants
from tenants.models import Tenant
from tenants.scope import tenant_scope


class Command(BaseCommand):
    help = (
        "Give every episode without passages its passages, one batch per transaction (safe to interrupt "
        "and run again). Embeddings of one-passage episodes are reused; the rest join the embedding backlog."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenants_arguments(parser)
        parser.add_argument("--batch", type=int, default=500, help="Episodes per transaction (default 500)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        tenants = resolve_tenants(options, Tenant.objects.all())
        total = 0
        for tenant in tenants:
            with tenant_scope(tenant):
                missing = passages_missing(tenant=tenant)
            if not missing:
                self.stdout.write(f"{tenant.slug}: every episode has its passages")
                continue
            with progress_bar(options, total=missing, unit=" episodes", desc=tenant.slug) as bar:
                done = passages_backfill(tenant=tenant, batch_size=options["batch"], progress=bar.update)
            total += done
            self.stdout.write(f"{tenant.slug}: {done} episodes split into passages")
        self.stdout.write(self.style.SUCCESS(f"Backfilled {total} episodes."))
