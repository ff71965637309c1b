"""The offline extractor on the hand-labelled conversations, and its safety rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from hypothesis import given
from hypothesis import strategies as st

from consolidation.evaluation import FIXTURES, evaluate, load_conversations
from consolidation.extractors.rules import extract_from_text

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


def test_hedged_statements_get_less_confidence() -> None:
    [plain] = extract_from_text("We use Kafka.", "u")
    [hedged] = extract_from_text("I think we use Kafka.", "u")
    assert hedged.confidence == pytest.approx(plain.confidence - 0.15)


@given(st.text(max_size=300))
def test_any_text_yields_well_formed_facts(text: str) -> None:
    for fact in extract_from_text(text, "u"):
        assert fact.value.strip() and fact.attribute and 0 < fact.confidence <= 1
        assert len(fact.value.split()) <= 12


def test_celery_settings_lose_no_task_when_a_worker_dies() -> None:
    assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_TASK_SERIALIZER == "json" and settings.CELERY_ACCEPT_CONTENT == ["json"]
    visibility = settings.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"]
    assert settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT < visibility
