"""The memory-control evaluation's simulated agent and its scoring (evaluation.memory_control): the agent
marks used only the served items that hold a question's evidence by the grounded rule; a question is
scored as memory_eval scores it; the paired difference has its bootstrap interval."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from evaluation.memory_control import HalfRun, Outcome, answer_items, paired, score, summary_table, used_item_ids
from evaluation.recall import Conversation, Evidence, Question, Served, Turn, evaluate, evidence_turn_terms

TURNS = {
    "D1:1": "I finally moved to Lisbon last week, the flat is tiny but bright.",
    "D1:2": "We adopted a puppy yesterday! His name is Rex and he chews everything.",
    "D1:3": "The weather has been lovely, we walk along the river every evening.",
}
QUESTION = Question(
    "conv-x", 0, "Where did Ann move?", "single-hop", (Evidence("D1:1", None, "D1:1"),), answer="Lisbon"
)


def _item(item_id: str, text: str, *sources: str) -> dict[str, Any]:
    return {"id": item_id, "text": text, "sources": [{"external_id": s} for s in sources]}


def _answer(*items: dict[str, Any], semantic: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    lines = [f"- {i['text']}" for i in (*semantic, *items)]
    return {
        "prompt": "\n".join(lines),
        "tokens": {"total": 10 * len(lines)},
        "layers": {"procedural": [], "semantic": list(semantic), "episodic": list(items)},
    }


def _terms(e: Evidence) -> frozenset[str]:
    return evidence_turn_terms(e, TURNS)


def test_the_agent_marks_used_only_what_holds_the_evidence_by_the_grounded_rule() -> None:
    data = _answer(
        _item("episode:1", f"Ann: {TURNS['D1:1']}", "D1:1"),
        _item("episode:2", f"Ann: {TURNS['D1:2']}", "D1:2"),
        semantic=(
            # Cites the evidence turn and restates it: used.
            _item("fact:a", "Ann moved to Lisbon last week. (8 May 2023, confidence 0.9)", "D1:1"),
            # Cites the evidence turn without restating it: a plain citation, not used.
            _item("fact:b", "Ann adopted a puppy called Rex. (8 May 2023, confidence 0.9)", "D1:1", "D1:2"),
        ),
    )
    items = answer_items(data)
    assert [i for i, _ in items] == ["fact:a", "fact:b", "episode:1", "episode:2"]
    assert used_item_ids(QUESTION, items, TURNS, _terms) == ["fact:a", "episode:1"]


def test_a_question_is_scored_grounded_plain_and_by_its_answer() -> None:
    cited_only = _answer(_item("fact:b", "Ann adopted a puppy called Rex.", "D1:1", "D1:2"))
    outcome, used = score(QUESTION, cited_only, TURNS, _terms)
    assert (outcome.grounded, outcome.plain, outcome.contained, outcome.used) == (False, True, False, 0)
    assert used == []
    quoted = _answer(_item("episode:1", f"Ann: {TURNS['D1:1']}", "D1:1"))
    outcome, used = score(QUESTION, quoted, TURNS, _terms)
    assert (outcome.grounded, outcome.plain, outcome.contained, outcome.used) == (True, True, True, 1)


def _o(grounded: bool, contained: bool | None = None) -> Outcome:
    return Outcome(grounded=grounded, plain=grounded, contained=contained, used=int(grounded), tokens=0)


def test_the_paired_difference_and_its_interval() -> None:
    model = [_o(True)] * 30 + [_o(False)] * 10
    formula = [_o(True)] * 20 + [_o(False)] * 20
    c = paired(model, formula, "grounded")
    assert c is not None
    assert (c.n, c.model, c.formula) == (40, 0.75, 0.5)
    assert c.difference == 0.25 and 0 < c.low < 0.25 < c.high <= 0.5
    # Questions without a scored answer are left out of that metric, in both columns.
    c = paired([_o(True, None), _o(True, True)], [_o(True, False), _o(True, False)], "contained")
    assert c is not None and c.n == 1 and c.difference == 1.0
    same = paired(formula, formula, "grounded")
    assert same is not None and same.low == same.high == 0.0


def test_the_summary_gives_the_trial_estimate_and_checks_its_sign_where_there_was_a_trial() -> None:
    run = HalfRun(trained_on="conv-a", measured_on="conv-b", mode="served")
    run.model = {
        "version": 1,
        "state": "serving",
        "estimate": {"model": 1.0, "formula": 1.0, "difference": 0.0, "low": -0.02, "high": 0.02, "contexts": 90},
        "trial": {"model": 1.2, "formula": 1.0, "difference": 0.2, "low": 0.05, "high": 0.35, "contexts": 120},
    }
    run.outcomes = {("model", 1000): [_o(True)] * 3 + [_o(False)], ("formula", 1000): [_o(True)] * 2 + [_o(False)] * 2}
    head, _, row = summary_table([run], [1000])
    assert "trial estimate" in head
    assert "1.200 vs 1.000 (+0.200 [+0.050, +0.350], 120 contexts)" in row
    # The estimate on the formula's logs tied; the trial's, which decided, has the measured sign.
    assert row.endswith("| yes |")


def test_the_summary_checks_the_sign_of_the_estimate_the_switch_read() -> None:
    """Inverse propensity placed the model below the formula; the doubly robust figure, whose interval lies
    above 0, switched it on: its sign is the one checked, and both are shown."""
    run = HalfRun(trained_on="conv-a", measured_on="conv-b", mode="served")
    robust = {"model": 2.7, "formula": 2.4, "difference": 0.3, "low": 0.1, "high": 0.5, "contexts": 90}
    run.model = {
        "version": 1,
        "state": "serving",
        "estimate": {
            "model": 1.8, "formula": 2.1, "difference": -0.3, "low": -0.5, "high": -0.1, "contexts": 90,
            "doubly_robust": robust,
        },
        "trial": {},
    }  # fmt: skip
    run.outcomes = {("model", 1000): [_o(True)] * 3 + [_o(False)], ("formula", 1000): [_o(True)] * 2 + [_o(False)] * 2}
    _, _, row = summary_table([run], [1000])
    assert "2.700 vs 2.400 (+0.300 [+0.100, +0.500], 90 contexts, doubly robust; inverse propensity -0.300" in row
    assert row.endswith("| yes |")


def test_a_run_keeps_each_questions_outcome_in_order_so_that_two_runs_can_be_paired() -> None:
    run = HalfRun(trained_on="conv-a", measured_on="conv-b", mode="forced")
    run.outcomes = {("model", 1000): [_o(True), _o(False)], ("formula", 1000): [_o(False), _o(False)]}
    kept = json.loads(json.dumps(run.as_dict()))["outcomes"]
    assert [row[0] for row in kept["model@1000"]] == [True, False]
    assert [row[0] for row in kept["formula@1000"]] == [False, False]


def test_the_summary_gives_the_trials_confidence_sequence_and_its_inverse_propensity_figure() -> None:
    run = HalfRun(trained_on="conv-a", measured_on="conv-b", mode="forced")
    ips = {"model": 1.1, "formula": 1.0, "difference": 0.1, "low": -0.1, "high": 0.3, "contexts": 120}
    run.model = {
        "version": 1,
        "state": "trained",
        "estimate": {"model": 1.0, "formula": 1.0, "difference": 0.0, "low": -0.02, "high": 0.02, "contexts": 90},
        "trial": {
            "model": 1.2, "formula": 1.0, "difference": 0.2, "low": 0.05, "high": 0.35, "contexts": 120,
            "sequence_low": -0.01, "sequence_high": 0.41, "inverse_propensity": ips,
        },
    }  # fmt: skip
    run.outcomes = {("model", 1000): [_o(True)] * 3 + [_o(False)], ("formula", 1000): [_o(True)] * 2 + [_o(False)] * 2}
    _, _, row = summary_table([run], [1000])
    assert (
        "+0.200 [+0.050, +0.350], sequence [-0.010, +0.410], 120 contexts; inverse propensity +0.100 [-0.100, +0.300]"
        in row
    )


def _result(set_name: str, conversations: list[str]) -> dict[str, Any]:
    """A memory_control_eval result as the command writes it, with no run and no curve."""
    return {
        "set": set_name,
        "command": "bench/memory_control.py",
        "conversations": conversations,
        "halves": {"first": "conversations 0-0", "second": "conversations 1-1"},
        "questions": {"first": 3, "second": 4},
        "feedback_budgets": [1000],
        "exploration": 0.2,
        "trial_part": 0.5,
        "trial_share": 0.2,
        "thresholds": {"VALUE_MODEL_MIN_CONTEXTS": 30},
        "write_path": {
            "consolidation": True,
            "sessions": 2,
            "sessions_written": 2,
            "episodes_posted": 9,
            "sessions_ended": 2,
            "write_seconds": 1.0,
            "drain_seconds": 1.0,
            "episodes": 9,
            "facts": 1,
            "summaries": 2,
            "open_sessions": 0,
            "consolidation_backlog": 0,
            "embedding_backlog": 0,
            "runs_failed": 0,
        },  # fmt: skip
        "chart": "",
    }


def test_the_report_names_the_set_it_measured() -> None:
    from evaluation.management.commands.memory_control_eval import markdown

    techchat = markdown(_result("techchat", ["tech-00", "tech-01"]), [], [], [1000])
    assert techchat.startswith("# Memory control on Technical set:")
    # Two generated conversations are the technical set as asked, not a sample of LoCoMo's ten.
    assert "conversation sample" not in techchat and "(LoCoMo tech-00" not in techchat
    locomo = markdown(_result("locomo", ["conv-26", "conv-30"]), [], [], [1000])
    assert locomo.startswith("# Memory control on LoCoMo:")
    assert "**A 2-conversation sample** (LoCoMo conv-26, conv-30" in locomo


def test_both_harnesses_score_a_locomo_half_against_each_questions_own_conversation() -> None:
    """LoCoMo's turn ids (D1:1, ...) repeat in every conversation: memory_control_eval scores a half of
    several conversations as memory_eval's evaluate does, each question's evidence read in its own
    conversation's turns, so a fact line that restates the turn is grounded in both."""
    from evaluation.management.commands.memory_control_eval import _Half
    from evaluation.management.commands.memory_eval import served_items

    def conversation(sample_id: str, said: str, question: str) -> Conversation:
        turn = Turn("D1:1", "Ann", said, datetime(2023, 5, 8, 13, 56, tzinfo=UTC), f"{sample_id}:session_1")
        asked = Question(sample_id, 0, question, "single-hop", (Evidence("D1:1", None, "D1:1"),))
        return Conversation(sample_id, [turn], [asked])

    first = conversation("conv-a", TURNS["D1:1"], "Where did Ann move?")
    second = conversation("conv-b", TURNS["D1:2"], "What is the puppy called?")
    answers = {
        "conv-a": _answer(_item("fact:a", "Ann moved to Lisbon last week. (8 May 2023, confidence 0.9)", "D1:1")),
        "conv-b": _answer(_item("fact:b", "Ann adopted a puppy called Rex. (8 May 2023, confidence 0.9)", "D1:1")),
    }

    def engram(q: Question, budget: int) -> Served:
        data = answers[q.sample_id]
        return Served(served_items(data), int(data["tokens"]["total"]), None, str(data["prompt"]))

    result = evaluate([first, second], [1000], engram, methods=("engram",))
    by_memory_eval = {row["question"]: row["grounded"] for row in result["scored"]}
    half = _Half("both", [first, second])
    by_memory_control = {
        f"{q.sample_id}#{q.index}": half.score(q, answers[q.sample_id])[0].grounded for q in half.answerable
    }
    assert by_memory_control == by_memory_eval == {"conv-a#0": True, "conv-b#0": True}
