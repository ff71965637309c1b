"""Stream a tenant to a gzip JSONL file (archives included), with a progress bar against the total."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from tqdm import tqdm

from privacy.export import export_totals, tenant_export
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant


class Command(BaseCommand):
    help = "Export every layer of one tenant's memory to FILE (gzip JSONL)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--out", required=True, help="Output file (.jsonl.gz)")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        total = sum(export_totals(tenant=tenant).values())
        # The raw stream under Django's wrapper: tqdm redraws its line with carriage returns.
        bar = tqdm(total=total, unit=" rows", file=self.stderr._out, disable=options["no_progress"])

        def progress(label: str, n: int) -> None:
            if n == 0:
                bar.set_description(label)
            bar.update(n)

        with open(options["out"], "wb") as fh:
            counts = tenant_export(tenant=tenant, out=fh, progress=progress)
        bar.close()
        for label, n in counts.items():
            self.stdout.write(f"{n:>10} {label}")
        self.stdout.write(self.style.SUCCESS(f"Exported {tenant.slug} to {options['out']}"))
