"""The offline extractor on the hand-labelled conversations, and its safety rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from consolidation.evaluation import FIXTURES, evaluate, load_conversations
from consolidation.extractors.rules import extract_from_text
from consolidation.extractors.summary import lines_outside_code

HELDOUT = Path(FIXTURES).with_name("heldout.json")


def test_precision_and_recall_on_the_development_set_do_not_regress() -> None:
    score = evaluate(load_conversations())
    assert (score.tp, score.fp, score.fn) == (44, 0, 4), (score.false_positives, score.missed)


def test_precision_and_recall_on_the_held_out_set_as_documented() -> None:
    score = evaluate(load_conversations(HELDOUT))
    assert score.precision >= 0.9 and score.recall >= 0.58, (score.false_positives, score.missed)


@pytest.mark.parametrize(
    "text",
    [
        "Do you use Redis?",
        "If we used Stripe, would invoices sync?",
        "We don't use Kubernetes.",
        "We no longer use Jenkins.",
        "Would it help if I used the API?",
    ],
)
def test_questions_conditionals_and_negations_state_no_fact(text: str) -> None:
    assert extract_from_text(text, "u") == []


def test_a_statement_inside_a_code_fence_left_open_is_code() -> None:
    assert extract_from_text("```\n\nWe use Kafka.\n\n", "u") == []


def test_hedged_statements_get_less_confidence() -> None:
    [plain] = extract_from_text("We use Kafka.", "u")
    [hedged] = extract_from_text("I think we use Kafka.", "u")
    assert hedged.confidence == pytest.approx(plain.confidence - 0.15)


@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=150),
    st.sampled_from(["Kafka", "PostgreSQL 16", "Go", "Terraform Cloud"]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=150),
)
def test_any_text_around_a_statement_yields_well_formed_facts(before: str, tool: str, after: str) -> None:
    """Whatever surrounds it, a plain statement still yields its fact, and every fact is well formed;
    unless the text before opens a code fence it never closes, which makes the statement code."""
    text = f"{before}\n\nWe use {tool}.\n\n{after}"
    assume(any(line.strip() == f"We use {tool}." for line in lines_outside_code(text)))
    facts = extract_from_text(text, "u")
    assert any(tool.lower() in fact.value.lower() for fact in facts)
    for fact in facts:
        assert fact.value.strip() and fact.attribute and 0 < fact.confidence <= 1
        assert len(fact.value.split()) <= 12
