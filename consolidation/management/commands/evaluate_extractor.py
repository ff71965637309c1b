"""Measure an extractor: on the hand-labelled fixtures (the rule patterns' precision and recall), or,
with --locomo, against LoCoMo's own per-turn observations and session summaries.

    manage.py evaluate_extractor
    manage.py evaluate_extractor --locomo [--extractor dotted.Path] [--sample 100]

--locomo builds the episodes as import_conversations would (never saved), runs the extractor one
session at a time, and embeds facts and gold observations with MiniLM (ENGRAM_EMBEDDER is ignored
unless --embedder is given): coverage is the share of gold observations for which a fact from their
evidence turn has cosine at least the threshold, precision the share of facts at least that close to
a gold observation of their own turn.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils.module_loading import import_string

from consolidation.evaluation import (
    FIXTURES,
    LOCOMO_THRESHOLDS,
    evaluate,
    labelled_check,
    load_conversations,
    locomo_run,
    locomo_sample_draw,
    locomo_score,
)
from consolidation.extractors.base import get_extractor
from tenants.models import Tenant

LOCOMO = Path(__file__).resolve().parents[3].parent / "shared" / "datasets" / "locomo" / "locomo10.json"


def _extractor(options: dict[str, Any]) -> Any:
    """The extractor --extractor names, or the configured one."""
    return import_string(options["extractor"])() if options["extractor"] else get_extractor()


def _evaluation_tenant() -> Tenant:
    """An unsaved tenant with default settings: nothing is written."""
    return Tenant(name="evaluation", slug="evaluation")


class Command(BaseCommand):
    help = "Measure an extractor on tests/fixtures/extraction, or with --locomo against LoCoMo's observations."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fixtures", default=str(FIXTURES))
        parser.add_argument("--verbose-misses", action="store_true")
        parser.add_argument("--locomo", action="store_true")
        parser.add_argument("--dataset", default=str(LOCOMO))
        parser.add_argument("--extractor", default="", help="dotted path; default: the configured extractor")
        parser.add_argument("--embedder", default="core.embedding.MiniLMEmbedder")
        parser.add_argument("--thresholds", default=",".join(str(t) for t in LOCOMO_THRESHOLDS))
        parser.add_argument("--conversations", type=int, default=0, help="only the first N (0: all)")
        parser.add_argument("--no-summaries", action="store_true")
        parser.add_argument("--sample", type=int, default=0, help="print N facts, drawn with a fixed seed")
        parser.add_argument("--seed", type=int, default=20)
        parser.add_argument("--draw", type=int, default=0, help="with --locomo: write N facts to --out for labelling")
        parser.add_argument("--out", default="")
        parser.add_argument(
            "--labelled", default="", help="JSONL of hand-labelled facts: precision, and which are still produced"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["labelled"]:
            self._labelled(options)
            return
        if options["locomo"] and options["draw"]:
            self._draw(options)
            return
        if options["locomo"]:
            self._locomo(options)
            return
        conversations = load_conversations(Path(options["fixtures"]))
        score = evaluate(conversations)
        labels = sum(len(c["expected"]) for c in conversations)
        self._table(
            ("conversations", "labelled facts", "predicted", "correct", "precision", "recall", "F1"),
            [
                (
                    len(conversations),
                    labels,
                    score.tp + score.fp,
                    score.tp,
                    f"{score.precision:.2f}",
                    f"{score.recall:.2f}",
                    f"{score.f1:.2f}",
                )
            ],
        )
        if options["verbose_misses"]:
            for item in score.false_positives:
                self.stdout.write(f"false positive: {item}")
            for item in score.missed:
                self.stdout.write(f"missed: {item}")

    def _draw(self, options: dict[str, Any]) -> None:
        import json

        conversations = json.loads(Path(options["dataset"]).read_text())
        rows = locomo_sample_draw(
            conversations,
            _extractor(options),
            tenant=_evaluation_tenant(),
            size=options["draw"],
            seed=options["seed"],
        )
        with open(options["out"], "w") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.stdout.write(f"{len(rows)} facts written to {options['out']}")

    def _labelled(self, options: dict[str, Any]) -> None:
        import json

        rows = [json.loads(line) for line in Path(options["labelled"]).read_text().splitlines() if line.strip()]
        check = labelled_check(rows, _extractor(options), tenant=_evaluation_tenant())
        self._table(
            ("labelled", "correct", "precision", "still produced", "of them correct", "precision of those"),
            [
                (
                    check.labelled,
                    check.correct,
                    f"{check.precision:.3f}",
                    check.still_produced,
                    check.still_correct,
                    f"{check.precision_still_produced:.3f}",
                )
            ],
        )
        if options["verbose_misses"]:
            for row, still in check.rows:
                mark = "still produced" if still else "no longer produced"
                self.stdout.write(f"{row['id']} {row['label']} ({mark}): {row['statement']} -- {row['reason']}")

    def _locomo(self, options: dict[str, Any]) -> None:
        import json

        conversations = json.loads(Path(options["dataset"]).read_text())
        if options["conversations"]:
            conversations = conversations[: options["conversations"]]
        extractor = _extractor(options)
        embedder = import_string(options["embedder"])()
        thresholds = tuple(float(t) for t in options["thresholds"].split(","))
        run = locomo_run(conversations, extractor, tenant=_evaluation_tenant(), summaries=not options["no_summaries"])
        n = len(conversations)
        halves = [list(range(min(5, n))), list(range(5, n))] if n > 5 else [list(range(n))]
        halves.append(list(range(n)))
        scores, best = locomo_score(run, embedder, thresholds=thresholds, halves=halves)
        self.stdout.write(f"extractor: {getattr(extractor, 'name', type(extractor).__name__)}")
        self._table(
            (
                "conversations",
                "turns",
                "gold observations",
                "facts",
                *(f"{name} @{t}" for t in thresholds for name in ("coverage", "precision")),
                "summary similarity",
            ),
            [
                (
                    f"{score.conversations[0]}-{score.conversations[-1]}" if score.conversations else "-",
                    score.turns,
                    score.observations,
                    score.facts,
                    *(f"{value:.3f}" for t in thresholds for value in (score.coverage(t), score.precision(t))),
                    f"{score.summary_similarity:.3f} ({score.sessions} sessions)",
                )
                for score in scores
            ],
        )
        if options["sample"] and run.facts:
            rng = random.Random(options["seed"])
            picked = sorted(rng.sample(range(len(run.facts)), min(options["sample"], len(run.facts))))
            self.stdout.write("")
            self._table(
                ("#", "turn", "fact", "best gold observation of the turn", "cosine"),
                [
                    (
                        i,
                        f"{run.facts[i].conversation}/{run.facts[i].dia_id}",
                        run.facts[i].statement,
                        run.observations[best[i][1]].text if best[i][1] >= 0 else "(no observation for this turn)",
                        f"{best[i][0]:.2f}",
                    )
                    for i in picked
                ],
            )

    def _table(self, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
        """A Markdown table: the header, its rule, a line a row."""
        self.stdout.write("| " + " | ".join(header) + " |")
        self.stdout.write("|" + "---|" * len(header))
        for row in rows:
            self.stdout.write("| " + " | ".join(str(cell) for cell in row) + " |")
