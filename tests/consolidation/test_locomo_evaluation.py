"""evaluate_extractor --locomo on a LoCoMo-shaped conversation: coverage, precision, halves, summaries."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from consolidation.evaluation import locomo_run, locomo_score
from consolidation.extractors.rules import RuleBasedExtractor
from core.embedding import HashingEmbedder
from tenants.models import Tenant

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ada",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "Hey Ben! I went to a pottery class yesterday."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Cool! What did you make?"},
            {"speaker": "Ada", "dia_id": "D1:3", "text": "A bowl for my sister."},
        ],
    },
    "observation": {
        "session_1_observation": {
            "Ada": [
                # Word for word what the extractor writes for D1:1, so any embedder scores it 1.0.
                ["Ada went to a pottery class on 7 May 2023.", "D1:1"],
                ["Ada made a bowl for her sister at the pottery class.", "D1:3"],
            ]
        }
    },
    "session_summary": {"session_1_summary": "Ada told Ben about her pottery class."},
}


def test_coverage_and_precision_count_facts_against_observations_of_their_own_turn() -> None:
    run = locomo_run([SAMPLE], RuleBasedExtractor(), tenant=Tenant(name="e", slug="e"))
    assert [(f.dia_id, f.statement) for f in run.facts] == [("D1:1", "Ada went to a pottery class on 7 May 2023.")]
    [score], best = locomo_score(run, HashingEmbedder(), thresholds=(0.6, 0.99), halves=[[0]])
    assert (score.observations, score.facts, score.turns) == (2, 1, 3)
    assert score.coverage(0.99) == 0.5 and score.precision(0.99) == 1.0
    assert best[0][0] == pytest.approx(1.0, abs=1e-5) and best[0][1] == 0
    assert score.sessions == 1 and 0 < score.summary_similarity <= 1


def test_a_fact_from_a_turn_without_observations_counts_against_precision() -> None:
    sample = json.loads(json.dumps(SAMPLE))
    sample["observation"]["session_1_observation"]["Ada"][0][1] = "D1:3"
    run = locomo_run([sample], RuleBasedExtractor(), tenant=Tenant(name="e", slug="e"), summaries=False)
    [score], best = locomo_score(run, HashingEmbedder(), halves=[[0]])
    assert score.precision(0.6) == 0.0 and score.coverage(0.6) == 0.0 and best == [(0.0, -1)]


def test_the_command_reports_each_half_and_a_sample(tmp_path: Path) -> None:
    dataset = tmp_path / "locomo.json"
    samples = []
    for i in range(6):
        sample = json.loads(json.dumps(SAMPLE))
        sample["sample_id"] = f"conv-{i}"
        samples.append(sample)
    dataset.write_text(json.dumps(samples))
    out = StringIO()
    call_command(
        "evaluate_extractor",
        "--locomo",
        "--dataset",
        str(dataset),
        "--embedder",
        "core.embedding.HashingEmbedder",
        "--extractor",
        "consolidation.extractors.rules.RuleBasedExtractor",
        "--thresholds",
        "0.6,0.99",
        "--sample",
        "2",
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    rows = [line for line in lines if line.startswith(("| 0-4 ", "| 5-5 ", "| 0-5 "))]
    assert [row.split(" | ")[1:4] for row in rows] == [["15", "10", "5"], ["3", "2", "1"], ["18", "12", "6"]]
    assert all(" 0.500 | 1.000 |" in row for row in rows)
    assert sum("Ada went to a pottery class on 7 May 2023." in line for line in lines) == 2
