"""A support agent built with LangGraph that remembers through Engram.

    load_memory -> model -> record_memory

`load_memory` asks Engram for a budgeted context for the latest user message; the model answers with
it; `record_memory` stores the turn as episodes and tells Engram which context items were used.

The model is scripted (no LLM, deterministic) unless ANTHROPIC_API_KEY is set, in which case Claude
answers with the Engram context as its system prompt.

    export ENGRAM_URL=http://127.0.0.1:8000
    export ENGRAM_API_KEY=$(grep DEMO_API_KEY .data/credentials.txt | cut -d= -f2)
    .venv/bin/python examples/support_agent.py --subject example-user
"""

from __future__ import annotations

import argparse
import os
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from engram_client import EngramClient
from engram_client.langgraph import MemoryState, last_user_text, load_memory, message_parts, record_memory
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import END, START, StateGraph, add_messages

_WORD = re.compile(r"[a-z0-9][a-z0-9.+-]*")
_STOP = frozenset(
    "a an and are as at be by can do does for from have how i in is it me my of on or our the their "
    "them they this to use using we what which who why with you your".split()
)


class AgentState(MemoryState, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


class ScriptedModel:
    """Answers from the memory context when a context line shares words with the question; otherwise
    asks the user for what it is missing. Deterministic, so the example runs anywhere."""

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        items: Sequence[Mapping[str, Any]] = state.get("memory_items", [])
        question = last_user_text(state.get("messages", []))
        wanted = _words(question)
        best = sorted(
            ((len(wanted & _words(str(item["text"]))), str(item["id"]), str(item["text"])) for item in items),
            key=lambda row: (-row[0], row[1]),
        )
        if best and best[0][0] > 0 and wanted:
            _, item_id, text = best[0]
            answer = f"From what you told me before: {text.strip().lstrip('- ')}"
            return {"messages": [AIMessage(answer)], "memory_used_item_ids": [item_id], "memory_outcome": "success"}
        return {
            "messages": [AIMessage("Could you tell me a bit more about your setup, so I can help?")],
            "memory_used_item_ids": [],
            "memory_outcome": "unknown",
        }


class ClaudeModel:
    """Claude through the Anthropic SDK, with the Engram context as the system prompt."""

    def __init__(self, model: str | None = None) -> None:
        import anthropic

        self.client = anthropic.Anthropic()
        self.model = model or os.environ.get("ENGRAM_EXAMPLE_MODEL", "claude-sonnet-4-5")

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        items: Sequence[Mapping[str, Any]] = state.get("memory_items", [])
        system = "You are a helpful support agent. What you remember about this user:\n\n" + state.get(
            "memory_context", ""
        )
        turns: list[Any] = []
        for message in state.get("messages", []):
            role, text = message_parts(message)
            if role in ("user", "assistant") and text:
                turns.append({"role": role, "content": text})
        reply = self.client.messages.create(model=self.model, max_tokens=512, system=system, messages=turns)
        answer = "".join(str(getattr(block, "text", "")) for block in reply.content if block.type == "text")
        used = [str(i["id"]) for i in items if _words(str(i["text"])) & _words(answer)]
        return {"messages": [AIMessage(answer)], "memory_used_item_ids": used, "memory_outcome": "unknown"}


Model = Callable[[Any], dict[str, Any]]


def choose_model() -> Model:
    return ClaudeModel() if os.environ.get("ANTHROPIC_API_KEY") else ScriptedModel()


def build_graph(engram: EngramClient, model: Model, *, max_tokens: int = 1500) -> Any:
    fetch, store = load_memory(engram, max_tokens=max_tokens), record_memory(engram)

    def load(state: AgentState) -> dict[str, Any]:
        return fetch(state)

    def answer(state: AgentState) -> dict[str, Any]:
        return model(state)

    def record(state: AgentState) -> dict[str, Any]:
        return store(state)

    graph = StateGraph(AgentState)
    graph.add_node("load_memory", load)
    graph.add_node("model", answer)
    graph.add_node("record_memory", record)
    graph.add_edge(START, "load_memory")
    graph.add_edge("load_memory", "model")
    graph.add_edge("model", "record_memory")
    graph.add_edge("record_memory", END)
    return graph.compile()


def run_conversation(
    engram: EngramClient, subject: str, turns: Sequence[str], *, model: Model | None = None, session: str | None = None
) -> list[dict[str, Any]]:
    """Run each user turn through the graph; returns, per turn, the answer and what memory offered."""
    app = build_graph(engram, model or choose_model())
    state: dict[str, Any] = {"subject": subject, "session": session or f"{subject}-{uuid.uuid4().hex[:8]}"}
    out = []
    for text in turns:
        state = app.invoke({**state, "messages": [*state.get("messages", []), HumanMessage(text)]})
        out.append(
            {
                "user": text,
                "answer": message_parts(state["messages"][-1])[1],
                "used_item_ids": list(state.get("memory_used_item_ids", [])),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("ENGRAM_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("ENGRAM_API_KEY"))
    parser.add_argument("--subject", default="example-user")
    parser.add_argument("turns", nargs="*", help="user messages (default: a short scripted conversation)")
    args = parser.parse_args(argv)
    turns = args.turns or [
        "Hi, our production database is PostgreSQL 16 and we deploy on Kubernetes.",
        "We keep getting 429 errors from your API during the nightly import.",
        "Which database are we on again?",
    ]
    with EngramClient(args.url, args.api_key) as engram:
        for turn in run_conversation(engram, args.subject, turns):
            print(f"user:  {turn['user']}\nagent: {turn['answer']}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
