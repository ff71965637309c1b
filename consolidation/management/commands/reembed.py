"""Embed a deployment's stored memory again with today's embedding file, after a change of file
(ENGRAM_EMBEDDING_INT8 switched either way): passages and the episodes they make up, facts, and
procedure triggers. A query is embedded with the new file at once, and vectors of two files do not
compare as well as vectors of one (docs/production.md, "Changing the embedding file")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from episodic.passages import passages_reembed
from procedural.services import procedures_reembed
from semantic.services import facts_reembed
from tenants.management.commands._tenant import add_tenants_arguments, progress_bar, resolve_tenants
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Embed every stored vector again with the configured embedding file (passages, episodes, facts, "
        "procedure triggers), one batch per transaction: safe to interrupt and run again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenants_arguments(parser)
        parser.add_argument("--batch", type=int, default=256, help="Rows per transaction (default 256)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1.")
        tenants = resolve_tenants(options, Tenant.objects.all())
        for tenant in tenants:
            counts = {}
            for label, reembed in (
                ("passages", passages_reembed),
                ("facts", facts_reembed),
                ("procedures", procedures_reembed),
            ):
                with progress_bar(options, unit=f" {label}", desc=f"{tenant.slug} {label}") as bar:
                    counts[label] = reembed(tenant=tenant, batch_size=options["batch"], progress=bar.update)
            self.stdout.write(
                f"{tenant.slug}: {counts['passages']} passages (and their episodes), {counts['facts']} facts, "
                f"{counts['procedures']} procedure triggers embedded again"
            )
        self.stdout.write(self.style.SUCCESS(f"Embedded {len(tenants)} tenants again."))
