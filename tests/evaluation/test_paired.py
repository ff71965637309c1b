"""Two runs compared question by question (evaluation.paired): the per-question scores that
evaluation.recall.evaluate writes, their paired differences per budget and half, and the gate."""

from __future__ import annotations

import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from evaluation.paired import compare, markdown
from evaluation.recall import Conversation, Evidence, Question, Served, ServedItem, evaluate
from tests.evaluation.test_evaluation import _turns

ROOT = Path(__file__).resolve().parents[2]


def _conversations(count: int = 4, questions: int = 10) -> list[Conversation]:
    out = []
    for n in range(count):
        turns = _turns(f"c{n}:session_1", [f"fact number {n} is blue", "filler words", f"other {n}"])
        qs = [
            Question(f"c{n}", i, f"fact number {n}?", "single-hop", (Evidence(turns[0].external_id),), answer="blue")
            for i in range(questions)
        ]
        out.append(Conversation(f"c{n}", turns, qs))
    return out


def _run(finds: Any) -> dict[str, Any]:
    """A run whose retriever serves the evidence turn of the questions `finds(question)` says."""

    def engram(q: Question, budget: int) -> Served:
        if not finds(q):
            return Served([], 5, 1.0, "nothing here")
        item = ServedItem(f"Ann: fact number {q.sample_id[1:]} is blue", 0, ((f"{q.sample_id}:session_1#0", None),))
        return Served([item], 5, 1.0, f"- {item.text}")

    # Through JSON, as the tool reads it.
    return json.loads(json.dumps(evaluate(_conversations(), [100, 200], engram, methods=("engram",))))


def test_each_scoreable_question_is_scored_once_per_method_and_budget_as_the_tallies_count_it() -> None:
    result = _run(lambda q: q.sample_id == "c0")
    scored = [r for r in result["scored"] if r["budget"] == 100]
    assert len(scored) == 40 and len({r["question"] for r in scored}) == 40
    row = next(r for r in result["results"] if (r["budget"], r["half"], r["group"]) == (100, "all", "overall"))
    assert sum(r["grounded"] for r in scored) / 40 == row["grounded_recall_all"] == 0.25
    assert sum(r["contained"] for r in scored) / 40 == row["answer_containment"]
    assert {r["half"] for r in scored if r["question"].startswith("c3#")} == {"second"}


def test_the_same_run_against_itself_differs_by_nothing_and_holds() -> None:
    run = _run(lambda q: q.index % 2 == 0)
    rows = compare(run, run)
    assert {(r.budget, r.half) for r in rows} == {(b, h) for b in (100, 200) for h in ("first", "second", "all")}
    for r in rows:
        assert (r.paired.difference, r.paired.low, r.paired.high) == (0.0, 0.0, 0.0) and r.holds


def test_a_loss_on_one_half_fails_the_gate_there_and_only_there() -> None:
    everything = _run(lambda q: True)
    # Side A misses 8 of the 20 questions of the first half (conversations c0, c1), none of the second.
    fewer = _run(lambda q: not (q.sample_id in ("c0", "c1") and q.index < 4))
    rows = {(r.budget, r.half, r.metric): r for r in compare(fewer, everything)}
    first = rows[(100, "first", "grounded recall_all")]
    assert first.paired.n == 20 and first.paired.difference == pytest.approx(-0.4)
    assert first.paired.low < first.paired.difference < first.paired.high < 0 and not first.holds
    assert rows[(100, "first", "answer containment")].paired.difference == pytest.approx(-0.4)
    assert rows[(100, "second", "grounded recall_all")].holds
    assert rows[(100, "all", "plain recall_all")].paired.difference == pytest.approx(-0.2)
    table = markdown(list(rows.values()), label_a="fewer", label_b="all", halves=everything["halves"])
    assert "| 100 | conversations 0-1 | grounded recall_all | 0.600 | 1.000 | -0.400 |" in table


def test_runs_of_different_questions_are_not_compared() -> None:
    run = _run(lambda q: True)
    other = {**run, "scored": [r for r in run["scored"] if not r["question"].startswith("c3#")]}
    with pytest.raises(ValueError, match="different questions"):
        compare(run, other)
    with pytest.raises(ValueError, match="per-question"):
        compare(run, {"results": run["results"]})


def test_the_command_line_tool_prints_the_table(tmp_path: Path, monkeypatch, capsys) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run(lambda q: q.index < 5)))
    b.write_text(json.dumps(_run(lambda q: True)))
    tool = str(ROOT / "bench" / "paired_diff.py")
    monkeypatch.setattr("sys.argv", [tool, str(a), str(b), "--label-a", "off", "--label-b", "on"])
    runpy.run_path(tool, run_name="__main__")
    out = capsys.readouterr().out
    assert "| off | on |" in out and "| 200 | all | answer containment | 0.500 | 1.000 | -0.500 |" in out
