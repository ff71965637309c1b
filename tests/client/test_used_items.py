"""Which context items an answer used, as the client decides it (an item is used when the answer
cites its id or restates one of its lines), and feedback sent with the answer instead of ids."""

from __future__ import annotations

import pytest
from engram_client import EngramClient, context_items, used_item_ids

ITEMS = [
    {"id": "fact:7f1c", "type": "fact", "text": "u1's database is PostgreSQL 16. (6 Dec 2026, confidence 0.90)"},
    {"id": "episode:1", "type": "episode", "text": "user: We deploy on Kubernetes in Frankfurt."},
    {"id": "episode:12", "type": "episode", "text": "user: The nightly import fails with 429 errors."},
    {"id": "summary:s 1", "type": "session_summary", "text": "summary: Billing questions, resolved."},
]


def test_an_item_whose_line_the_answer_restates_is_used() -> None:
    assert used_item_ids("You run PostgreSQL 16 as your database.", ITEMS) == ["fact:7f1c"]
    assert used_item_ids("Kubernetes, in Frankfurt: that is where you deploy.", ITEMS) == ["episode:1"]


def test_sharing_too_few_of_a_lines_terms_is_not_use() -> None:
    assert used_item_ids("Which database do you run?", ITEMS) == []
    # The fact's trailing day and confidence are the rendering's words, not the fact's.
    assert used_item_ids("Noted on 6 Dec 2026 with confidence 0.90.", ITEMS) == []


def test_an_item_whose_id_the_answer_cites_is_used_and_only_that_id() -> None:
    assert used_item_ids("See [episode:12].", ITEMS) == ["episode:12"]
    assert used_item_ids("As episode:1 says, yes.", ITEMS) == ["episode:1"]
    assert used_item_ids("(summary:s 1)", ITEMS) == ["summary:s 1"]
    assert used_item_ids("See episode:123 and episode:12x.", ITEMS) == []


def test_items_come_back_in_the_order_offered_each_once() -> None:
    answer = "Per episode:12 and episode:12 again: the nightly import fails with 429s; PostgreSQL 16 database."
    assert used_item_ids(answer, ITEMS) == ["fact:7f1c", "episode:12"]
    assert used_item_ids("", ITEMS) == []


@pytest.mark.live
def test_feedback_with_the_answer_marks_used_what_the_answer_restates(engram: EngramClient) -> None:
    engram.episodes.append(
        [
            {"subject": "u1", "session": "s-used", "role": "user", "content": "Our billing plan is the Team plan."},
            {"subject": "u1", "session": "s-used", "role": "user", "content": "We deploy on Kubernetes in Frankfurt."},
        ]
    )
    ctx = engram.context("u1", query="which plan are they on and where do they deploy?", max_tokens=1000)
    offered = {i["text"]: i["id"] for i in context_items(ctx)}
    plan = next(item_id for text, item_id in offered.items() if "Team plan" in text)
    assert len(offered) >= 2

    feedback = engram.feedback(ctx["trace_id"], answer="You are on the Team plan for billing.", offered=ctx)
    assert feedback["used_item_ids"] == [plan]
    assert feedback["used_count"] == 1 and feedback["offered_count"] == len(offered)


@pytest.mark.live
def test_ids_given_win_over_the_answer_and_an_answer_needs_what_was_offered(engram: EngramClient) -> None:
    engram.episodes.append([{"subject": "u2", "session": "s-ids", "role": "user", "content": "I live in Lyon."}])
    ctx = engram.context("u2", query="where do they live?", max_tokens=500)
    with pytest.raises(ValueError, match="offered="):
        engram.feedback(ctx["trace_id"], answer="In Lyon.")
    feedback = engram.feedback(ctx["trace_id"], used_item_ids=[], answer="You live in Lyon.", offered=ctx)
    assert feedback["used_item_ids"] == []
