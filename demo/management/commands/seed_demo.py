"""Seed the demo tenant: the support-agent conversations of three users, sent through the public API
and consolidated (see demo/). Idempotent: a seeded tenant is left as it is."""

from __future__ import annotations

import logging
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from demo.agent import totals
from demo.runner import seed_demo
from tenants.management.commands._tenant import add_tenant_argument, resolve_tenant


class Command(BaseCommand):
    help = "Replay the demo support conversations into a tenant through the API, then consolidate them."

    def add_arguments(self, parser: CommandParser) -> None:
        add_tenant_argument(parser)
        parser.add_argument(
            "--url",
            default=None,
            help="Send the requests to this running Engram (default: serve the API in-process, no server needed)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)
        tenant = resolve_tenant(options["tenant"])
        where = options["url"] or "the in-process API"
        self.stdout.write(f"Seeding demo conversations into {tenant.slug} through {where} ...")
        stats = seed_demo(tenant=tenant, url=options["url"], progress=lambda line: self.stdout.write(f"  {line}"))
        if stats is None:
            self.stdout.write("The demo data is already there; nothing to do.")
            return
        overall = totals(stats)
        self.stdout.write(
            f"Seeded {overall.conversations} conversations for {len(stats)} users. Of the {overall.told_before} "
            f"facts the agent needed and had been told in an earlier conversation, it answered {overall.recalled} "
            f"from memory, quoting what it had been told, and asked again for {overall.asked_known}; its answers "
            f"quoted {overall.used} of the {overall.offered} context items offered ({overall.hit_rate:.0%}). "
            "manage.py demo_compare runs the same agent without memory."
        )
