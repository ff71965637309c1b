"""Store each passage's line, its token count and its index terms (episodic.passages.passage_line) where
they are missing: passages written before the columns existed. With progress and totals."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from episodic.passages import passage_lines_backfill, passage_lines_missing
from tenants.management.commands._tenant import add_tenants_arguments, backfill_tenants, resolve_tenants
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Give every passage without a stored line its line, line tokens and index terms, one batch per "
        "transaction (safe to interrupt and run again). Context requests read them instead of computing "
        "them per request."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenants_arguments(parser)
        parser.add_argument("--batch", type=int, default=1000, help="Passages per transaction (default 1000)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        total = backfill_tenants(
            self,
            options,
            resolve_tenants(options, Tenant.objects.all()),
            missing=lambda tenant: passage_lines_missing(tenant=tenant),
            backfill=lambda tenant, progress: passage_lines_backfill(
                tenant=tenant, batch_size=options["batch"], progress=progress
            ),
            unit=" passages",
            complete="every passage has its line",
            done="{done} of {missing} passages given their lines",
        )
        self.stdout.write(self.style.SUCCESS(f"Backfilled {total} passages."))
