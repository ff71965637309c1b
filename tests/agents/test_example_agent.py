"""The example LangGraph agent (examples/support_agent.py) with its scripted model, against the live
service: load_memory puts the context into the state, record_memory stores the turns and feedback."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import settings
from engram_client import EngramClient, used_item_ids
from engram_client.langgraph import load_memory, message_parts, record_memory
from pytest_django.live_server_helper import LiveServer

from episodic.models import Episode
from router.models import ContextFeedback
from tenants.scope import tenant_scope
from tests.conftest import TenantContext

pytestmark = pytest.mark.live


def _example() -> ModuleType:
    path = Path(settings.BASE_DIR) / "examples" / "support_agent.py"
    spec = importlib.util.spec_from_file_location("support_agent_example", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_example_agent_answers_from_memory_and_reports_what_it_used(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    example = _example()
    assert isinstance(example.choose_model(), example.ScriptedModel)
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        turns = example.run_conversation(
            engram,
            "ex-user",
            ["Hi, our production database is PostgreSQL 16.", "Which database are we on again?"],
            session="ex-session",
        )
    assert turns[0]["answer"].startswith("Could you tell me")
    assert "PostgreSQL 16" in turns[1]["answer"]
    # What the answer restates was sent as used, the line it quotes among it.
    assert turns[1]["used_item_ids"] == used_item_ids(turns[1]["answer"], turns[1]["offered"])
    quoted = [i["id"] for i in turns[1]["offered"] if "PostgreSQL 16" in i["text"]]
    assert quoted and set(quoted) <= set(turns[1]["used_item_ids"])
    with tenant_scope(ctx_a.tenant):
        stored = list(Episode.objects.for_tenant(ctx_a.tenant).filter(session__external_id="ex-session").order_by("id"))
        assert [(e.role, e.content[:10]) for e in stored] == [
            ("user", "Hi, our pr"),
            ("assistant", "Could you "),
            ("user", "Which data"),
            ("assistant", "From what "),
        ]
        feedback = list(ContextFeedback.objects.for_tenant(ctx_a.tenant).order_by("created_at"))
        assert len(feedback) == 2
        assert feedback[1].used_item_ids == turns[1]["used_item_ids"]
        assert feedback[1].outcome == "success"


def test_record_memory_is_idempotent_when_a_turn_is_replayed(live_server: LiveServer, ctx_a: TenantContext) -> None:
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        state = {"subject": "rp", "session": "rp-1", "messages": [("user", "hello"), ("assistant", "hi there")]}
        loaded = load_memory(engram)(state)
        assert loaded["memory_trace_id"] and loaded["memory_context"] is not None
        state.update(loaded)
        node = record_memory(engram)
        first = node(state)
        node(state)  # a replay from a checkpoint: same turn, same keys
        assert first["memory_recorded"] == 2
        assert [message_parts(m) for m in state["messages"]] == [("user", "hello"), ("assistant", "hi there")]
        assert len(engram.episodes.list(session="rp-1").results) == 2


def test_the_example_agent_answers_a_later_conversation_with_the_stored_fact_not_the_question(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    example = _example()
    question = "Which database are we on?"
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        # The first conversation tells the database and already asks once, so that the question itself
        # is in memory too; ending it consolidates the turns into facts.
        example.run_conversation(
            engram, "db-user", ["Our production database is PostgreSQL 16.", question], session="db-1"
        )
        engram.sessions.end("db-1", outcome="success")
        [fact] = engram.facts.list(subject="db-user", attribute="database").results
        assert fact["value"] == "PostgreSQL 16"
        [turn] = example.run_conversation(engram, "db-user", [question], session="db-2")
    assert "PostgreSQL 16" in turn["answer"]
    assert question not in turn["answer"] and "user:" not in turn["answer"]
    # The fact, or the line it came from (a context serves one of the two, docs/router.md), is used.
    said = turn["answer"].removeprefix("From what you told me before: ")
    quoted = [i["id"] for i in turn["offered"] if said in i["text"]]
    assert quoted and set(quoted) <= set(turn["used_item_ids"])
    assert turn["used_item_ids"] == used_item_ids(turn["answer"], turn["offered"])


def test_without_memory_the_example_agent_asks_in_a_later_conversation(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    example = _example()
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        example.run_conversation(engram, "nm-user", ["Our production database is PostgreSQL 16."], session="nm-1")
        engram.sessions.end("nm-1", outcome="success")
        [off] = example.run_conversation(engram, "nm-user", ["Which database are we on?"], session="nm-2", memory=False)
        [on] = example.run_conversation(engram, "nm-user", ["Which database are we on?"], session="nm-3")
    assert off["answer"].startswith("Could you tell me") and off["used_item_ids"] == []
    assert "PostgreSQL 16" in on["answer"]


def test_the_scripted_model_answers_with_a_fact_before_a_line_and_never_with_a_question_or_itself() -> None:
    model = _example().ScriptedModel()
    items = [
        {"id": "episode:1", "type": "episode", "text": "(earlier) user: Which database are we on?"},
        {"id": "episode:2", "type": "episode", "text": "assistant: Your database question: the database docs."},
        {"id": "episode:3", "type": "episode", "text": "(earlier) user: Our database is PostgreSQL 15."},
        {"id": "fact:9", "type": "fact", "text": "u's database is PostgreSQL 16. (17 Nov 2026, confidence 0.75)"},
    ]
    reply = model({"memory_items": items, "messages": [("user", "Which database are we on?")]})
    assert message_parts(reply["messages"][0])[1] == "From what you told me before: u's database is PostgreSQL 16."
    assert "memory_used_item_ids" not in reply  # record_memory decides it from the answer
    without_the_fact = model({"memory_items": items[:3], "messages": [("user", "Which database are we on?")]})
    assert message_parts(without_the_fact["messages"][0])[1].endswith("Our database is PostgreSQL 15.")
