"""Create Engram's periodic schedules in django-celery-beat (idempotent; operators' edits are kept)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from consolidation.schedules import schedules_setup


class Command(BaseCommand):
    help = (
        "Create the periodic schedules (consolidation, embedding, scratchpads, decay, archiving, discovery, erasure)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reset", action="store_true", help="Put every schedule back to its default.")

    def handle(self, *args: Any, **options: Any) -> None:
        for name, action in schedules_setup(reset=options["reset"]).items():
            self.stdout.write(f"{action:8} {name}")
