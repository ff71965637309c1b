"""Grounded citations: a context item's source counts as evidence only where a line of the item restates
the cited turn; and answer containment: the prompt holds every content term of the gold answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluation.grounding import answer_terms, contains_answer, item_lines, restates, terms_needed
from evaluation.recall import (
    Conversation,
    Evidence,
    Question,
    Served,
    ServedItem,
    Tally,
    Turn,
    evaluate,
    evidence_turn_terms,
    grounded_found,
    report_markdown,
    resolve_sources,
)

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = {
    "t1": "I finally moved to Lisbon last week, the flat is tiny but bright.",
    "t2": "We adopted a puppy yesterday! His name is Rex and he chews everything.",
    "t3": "It is what it is.",
    "t4": "The weather has been lovely, we walk along the river every evening.",
}


def _grounded(item: ServedItem, evidence: str) -> bool:
    served = resolve_sources([item], TURNS)
    return grounded_found(Evidence(evidence), served, evidence_turn_terms(Evidence(evidence), TURNS)).found


def _plain(item: ServedItem, evidence: str) -> bool:
    from evaluation.recall import evidence_found

    return evidence_found(Evidence(evidence), resolve_sources([item], TURNS)).found


@pytest.mark.parametrize(("count", "needed"), [(1, 1), (2, 2), (3, 2), (4, 2), (5, 2), (6, 3), (7, 3), (20, 3)])
def test_a_line_needs_40_percent_of_its_terms_rounded_up_at_least_2_and_at_most_3(count: int, needed: int) -> None:
    assert terms_needed(count) == needed


def test_a_verbatim_excerpt_passes_at_once_even_without_content_terms() -> None:
    # "It is what it is." has no content term: only being a verbatim excerpt grounds it.
    assert item_lines("Ann: It is what it is.") == ()
    quoted = ServedItem("Ann: It is what it is.", 0, (("t3", None),))
    assert _grounded(quoted, "t3")
    # A source with its span, whose text is an excerpt of the turn (clipped, with an ellipsis).
    clipped = ServedItem("Ann: I finally moved to Lisbon last week, the …", 1, (("t1", (0, 40)),))
    assert _grounded(clipped, "t1")


def test_a_summary_line_grounds_only_the_turns_it_restates() -> None:
    summary = ServedItem(
        "summary: Ann moved to a small flat in Lisbon. Her family adopted a puppy called Rex. They talked a lot.",
        0,
        (("t1", None), ("t2", None), ("t4", None)),
    )
    assert [_plain(summary, t) for t in ("t1", "t2", "t4")] == [True, True, True]
    assert [_grounded(summary, t) for t in ("t1", "t2", "t4")] == [True, True, False]


def test_a_fact_restating_one_turn_grounds_that_turn_and_not_its_other_sources() -> None:
    fact = ServedItem("Ann owns a puppy named Rex (8 May 2023, confidence 0.90)", 2, (("t2", None), ("t1", None)))
    # The fact's date and confidence are the rendering's, not what it restates.
    assert item_lines(fact.text) == (frozenset({"ann", "owns", "puppy", "named", "rex"}),)
    assert _grounded(fact, "t2")
    assert not _grounded(fact, "t1")
    assert _plain(fact, "t1")


def test_a_line_of_two_content_terms_needs_both() -> None:
    assert not restates("Lisbon flat.", "I moved to Lisbon.")
    assert restates("Lisbon flat.", "My flat in Lisbon is tiny.")
    # Lines are cut at sentence ends and ellipses, so a long item is judged line by line.
    assert not restates("Rex barks. Lisbon flat … something else", "We walk to Lisbon often.")
    assert restates("Rex barks. Lisbon flat … something else", "Rex barks all night.")


def test_evidence_inside_a_longer_episode_is_grounded_against_that_turn_only() -> None:
    contents = {"e": "Ann: I moved to Lisbon.\nBob: We adopted a puppy named Rex."}
    start = contents["e"].index("Bob:")
    evidence = Evidence("e", (start, len(contents["e"])))
    fact = ServedItem("Ann moved to Lisbon (8 May 2023, confidence 0.90)", 0, (("e", None),))
    served = resolve_sources([fact], contents)
    assert not grounded_found(evidence, served, evidence_turn_terms(evidence, contents)).found
    other = ServedItem("Bob adopted a puppy named Rex (8 May 2023, confidence 0.90)", 0, (("e", None),))
    served = resolve_sources([other], contents)
    assert grounded_found(evidence, served, evidence_turn_terms(evidence, contents)).found


# --- answer containment ------------------------------------------------------------------------
def test_an_answer_is_contained_when_all_its_content_terms_are_in_the_prompt() -> None:
    prompt = "## Relevant history\n### 7 May 2023\n- Ann: I went camping and painted a bowl at the pottery class."
    assert contains_answer(answer_terms("pottery, camping, painting"), prompt)
    assert not contains_answer(answer_terms("pottery, camping, painting, swimming"), prompt)
    # Dates by their terms: the day, the month's name and the year, wherever they are in the prompt.
    assert contains_answer(answer_terms("7 May 2023"), prompt)
    assert not contains_answer(answer_terms("8 May 2023"), prompt)
    # Numbers as written: 2022 is the term "2022"; "two" is not 2.
    assert answer_terms(2022) == frozenset({"2022"})
    assert not contains_answer(answer_terms(2), "we have two kids")
    # An answer without a content term cannot be looked for.
    assert answer_terms("No") == frozenset()
    assert contains_answer(frozenset(), prompt) is None


# --- the reports carry both figures ------------------------------------------------------------
def _conversation() -> Conversation:
    turns = [
        Turn(t, "Ann", text, T0 + timedelta(seconds=i), "c:session_1") for i, (t, text) in enumerate(TURNS.items())
    ]
    questions = [
        Question("c", 0, "Where did Ann move?", "single-hop", (Evidence("t1"),), answer="Lisbon"),
        Question("c", 1, "What is the puppy called?", "single-hop", (Evidence("t2"),), answer="Rex"),
    ]
    return Conversation("c", turns, questions)


def _engram(q: Question, budget: int) -> Served:
    # A fact restating t2 that cites both turns: plain recall finds both, grounded only t2.
    fact = ServedItem("Ann owns a puppy named Rex (8 May 2023, confidence 0.90)", 0, (("t2", None), ("t1", None)))
    return Served([fact], 20, 1.0, "## Known facts\n- Ann owns a puppy named Rex (8 May 2023, confidence 0.90)")


def test_the_evaluation_reports_grounded_and_plain_recall_and_answer_containment() -> None:
    result = evaluate([_conversation()], [100], _engram, methods=("engram", "bm25"))
    rows = {(r["method"], r["half"], r["group"]): r for r in result["results"]}
    engram = rows[("engram", "all", "overall")]
    assert engram["recall_all"] == 1.0
    assert engram["grounded_recall_all"] == 0.5
    assert engram["answer_containment"] == 0.5 and engram["answers"] == 2
    # A baseline serves whole turns: what it cites it quotes.
    bm25 = rows[("bm25", "all", "overall")]
    assert bm25["grounded_recall_all"] == bm25["recall_all"] == 1.0
    assert bm25["answer_containment"] == 1.0
    text = report_markdown(result, title="t", command="c", budgets=[100], intro="", notes=[])
    assert "grounded recall_all" in text and "plain recall_all" in text and "answer containment" in text
    header = next(line for line in text.splitlines() if line.startswith("| method | budget | grounded recall_all"))
    assert header.index("grounded recall_all") < header.index("plain recall_all")


def test_a_tally_without_turn_texts_grounds_only_what_is_quoted() -> None:
    q = Question("c", 0, "q", "single-hop", (Evidence("t2"),))
    fact = ServedItem("Ann owns a puppy named Rex", 0, (("t2", None),))
    tally = Tally()
    tally.add(q, resolve_sources([fact], TURNS), 10, None)
    summary = tally.summary()
    assert summary["recall_all"] == 1.0 and summary["grounded_recall_all"] == 0.0
    assert summary["answer_containment"] is None and summary["answers"] == 0
