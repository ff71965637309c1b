"""The memory nodes name what the graph state lacks instead of failing with a bare KeyError, and leave
no stale value in it."""

from __future__ import annotations

from typing import Any

import pytest
from engram_client import EngramClient
from engram_client.langgraph import load_memory, record_memory
from pytest_django.live_server_helper import LiveServer

from router.models import ContextFeedback
from tenants.scope import tenant_scope
from tests.conftest import TenantContext


@pytest.mark.parametrize("make_node", [load_memory, record_memory])
def test_a_state_without_subject_is_named_before_any_request(make_node: object) -> None:
    # Port 9 (discard): a request would fail with a transport error, not the error this test expects.
    with EngramClient("http://127.0.0.1:9", "ek_unused") as client:
        node = make_node(client)  # type: ignore[operator]
        with pytest.raises(ValueError, match="`subject`"):
            node({"messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.live
def test_record_memory_clears_the_trace_id_to_none_once_its_feedback_is_sent(
    live_server: LiveServer, ctx_a: TenantContext
) -> None:
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        state: dict[str, Any] = {"subject": "tr", "session": "tr-1", "messages": [("user", "hello")]}
        state.update(load_memory(engram)(state))
        trace_id = state["memory_trace_id"]
        state["messages"].append(("assistant", "hi"))
        update = record_memory(engram)(state)
        assert "memory_trace_id" in update and update["memory_trace_id"] is None
    with tenant_scope(ctx_a.tenant):  # the feedback was sent on the trace the state held
        assert [str(f.trace_id) for f in ContextFeedback.objects.for_tenant(ctx_a.tenant)] == [trace_id]


def _loaded(engram: EngramClient, subject: str, session: str) -> dict[str, Any]:
    engram.episodes.append(
        [
            {
                "subject": subject,
                "session": f"{session}-0",
                "role": "user",
                "content": "Our database is PostgreSQL 16.",
            },
            {"subject": subject, "session": f"{session}-0", "role": "user", "content": "We deploy on Kubernetes."},
        ]
    )
    state: dict[str, Any] = {
        "subject": subject,
        "session": session,
        "messages": [("user", "Which database do we run, and where do we deploy?")],
    }
    state.update(load_memory(engram)(state))
    return state


def _sent(ctx: TenantContext, trace_id: str) -> list[str]:
    with tenant_scope(ctx_tenant := ctx.tenant):
        return list(ContextFeedback.objects.for_tenant(ctx_tenant).get(trace_id=trace_id).used_item_ids)


@pytest.mark.live
def test_record_memory_marks_used_the_items_the_answer_restates(live_server: LiveServer, ctx_a: TenantContext) -> None:
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        state = _loaded(engram, "lu", "lu-1")
        database = next(i["id"] for i in state["memory_items"] if "PostgreSQL 16" in i["text"])
        assert len(state["memory_items"]) >= 2 and state["memory_used_item_ids"] == []
        trace_id = state["memory_trace_id"]
        state["messages"].append(("assistant", "Your database is PostgreSQL 16."))
        update = record_memory(engram)(state)
    assert update["memory_used_item_ids"] == [database]
    assert _sent(ctx_a, trace_id) == [database]


@pytest.mark.live
def test_ids_the_model_node_set_win_and_an_answer_already_recorded_is_not_read_again(
    live_server: LiveServer, ctx_a: TenantContext
) -> None:
    with EngramClient(live_server.url, ctx_a.raw_key) as engram:
        state = _loaded(engram, "lw", "lw-1")
        chosen = state["memory_item_ids"][-1]
        first = state["memory_trace_id"]
        state["messages"].append(("assistant", "Your database is PostgreSQL 16."))
        state["memory_used_item_ids"] = [chosen]
        state.update(record_memory(engram)(state))
        assert state["memory_used_item_ids"] == [chosen]

        # The next turn's model node wrote no answer: the last one, stored already, is not this turn's.
        state["messages"].append(("user", "Which database, again?"))
        state.update(load_memory(engram)(state))
        second = state["memory_trace_id"]
        state.update(record_memory(engram)(state))
        assert state["memory_used_item_ids"] == []
    assert _sent(ctx_a, first) == [chosen]
    assert _sent(ctx_a, second) == []
