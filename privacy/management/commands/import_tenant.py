"""Load an export_tenant file into an empty tenant (new ids, references rewritten), with a progress
bar against the total the export's header announces."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from core.errors import DomainError
from privacy.export import tenant_import
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant


class Command(BaseCommand):
    help = "Import FILE (made by export_tenant) into an empty tenant."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--in", dest="infile", required=True, help="Input file (.jsonl.gz)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        bar = tqdm(unit=" rows", file=self.stderr._out, disable=options["no_progress"])

        def on_total(total: int | None) -> None:
            bar.reset(total=total)

        def progress(label: str, n: int) -> None:
            bar.set_description(label, refresh=False)
            bar.update(n)

        try:
            with open(options["infile"], "rb") as fh:
                counts = tenant_import(tenant=tenant, fh=fh, progress=progress, on_total=on_total)
        except DomainError as exc:
            raise CommandError(exc.detail) from exc
        finally:
            bar.close()
        for label, n in counts.items():
            self.stdout.write(f"{n:>10} {label}")
        self.stdout.write(self.style.SUCCESS(f"Imported into {tenant.slug}"))
