"""Rewrite the session summaries already stored with the current offline summariser, with progress."""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from consolidation.selectors import sessions_with_stored_summary
from consolidation.services import SummaryRebuild, session_summary_rebuild
from tenants.management.commands._tenant import add_tenants_arguments, progress_bar, resolve_tenants
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Rebuild the stored session summaries (offline summariser) of one tenant or of all; idempotent: "
        "unchanged summaries are left as they are, a session with nothing to summarise loses its summary."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenants_arguments(parser, every="Every active tenant")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = resolve_tenants(options, Tenant.objects.filter(active=True))
        if not tenants:
            raise CommandError("No tenant to rebuild.")
        work = [(tenant, sessions_with_stored_summary(tenant=tenant)) for tenant in tenants]
        total = sum(len(ids) for _tenant, ids in work)
        counts: Counter[str] = Counter()
        with progress_bar(options, total=total, unit=" summaries") as bar:
            for tenant, session_ids in work:
                bar.set_description(tenant.slug)
                for session_id in session_ids:
                    counts[session_summary_rebuild(tenant=tenant, session_id=session_id)] += 1
                    bar.update(1)
        done = sum(counts.values()) - counts[SummaryRebuild.MISSING]
        self.stdout.write(
            f"{len(tenants)} tenant(s), {done} summaries: {counts[SummaryRebuild.REWRITTEN]} rewritten, "
            f"{counts[SummaryRebuild.REMOVED]} removed, {counts[SummaryRebuild.UNCHANGED]} unchanged, "
            f"{counts[SummaryRebuild.KEPT]} written by a model and kept"
        )
