"""Write a tenant's context trajectories as JSONL, for training a learned memory policy.

    manage.py export_traces --tenant acme [--since 2025-01-01T00:00:00Z] [--output traces.jsonl]

One line per context request, oldest first: the state (the request), the items offered (with score
parts and tokens), the candidates considered and left out, the items used, the outcome and signal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils.dateparse import parse_datetime

from router.selectors import trace_export_rows
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant
from tenants.scope import tenant_scope


class Command(BaseCommand):
    help = "Export context traces (state, offered, used, outcome) as JSONL."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument("--since", default="", help="ISO 8601 time with a zone; only traces from then on")
        parser.add_argument("--output", default="-", help="File to write; '-' for standard output")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = resolve_tenant(options["tenant"])
        since = None
        if options["since"]:
            since = parse_datetime(options["since"])
            if since is None or since.tzinfo is None:
                raise CommandError("--since must be an ISO 8601 time with a time zone.")
        to_file = options["output"] != "-"
        out: Any = Path(options["output"]).open("w", encoding="utf-8") if to_file else self.stdout
        count = 0
        try:
            with tenant_scope(tenant):
                for row in trace_export_rows(tenant=tenant, since=since):
                    out.write(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n")
                    count += 1
        finally:
            if to_file:
                out.close()
        self.stderr.write(f"exported {count} traces of {tenant.slug}")
