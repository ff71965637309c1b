"""Print the offline extractor's precision and recall on the hand-labelled fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from consolidation.evaluation import FIXTURES, evaluate, load_conversations


class Command(BaseCommand):
    help = "Measure the rule-based extractor on tests/fixtures/extraction (precision, recall, misses)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fixtures", default=str(FIXTURES))
        parser.add_argument("--verbose-misses", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        conversations = load_conversations(Path(options["fixtures"]))
        score = evaluate(conversations)
        labels = sum(len(c["expected"]) for c in conversations)
        self.stdout.write("| conversations | labelled facts | predicted | correct | precision | recall | F1 |")
        self.stdout.write("|---|---|---|---|---|---|---|")
        self.stdout.write(
            f"| {len(conversations)} | {labels} | {score.tp + score.fp} | {score.tp} | "
            f"{score.precision:.2f} | {score.recall:.2f} | {score.f1:.2f} |"
        )
        if options["verbose_misses"]:
            for item in score.false_positives:
                self.stdout.write(f"false positive: {item}")
            for item in score.missed:
                self.stdout.write(f"missed: {item}")
