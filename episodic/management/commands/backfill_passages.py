"""Split the episodes stored before passages existed into passages (episodic.passages), with progress."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from episodic.passages import passages_backfill, passages_missing
from tenants.management.commands._tenant import add_tenants_arguments, backfill_tenants, resolve_tenants
from tenants.models import Tenant


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
        total = backfill_tenants(
            self,
            options,
            resolve_tenants(options, Tenant.objects.all()),
            missing=lambda tenant: passages_missing(tenant=tenant),
            backfill=lambda tenant, progress: passages_backfill(
                tenant=tenant, batch_size=options["batch"], progress=progress
            ),
            unit=" episodes",
            complete="every episode has its passages",
            done="{done} episodes split into passages",
        )
        self.stdout.write(self.style.SUCCESS(f"Backfilled {total} episodes."))
