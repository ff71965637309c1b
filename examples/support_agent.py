"""A support agent built with LangGraph that remembers through Engram.

    load_memory -> model -> record_memory

`load_memory` asks Engram for a budgeted context for the latest user message; the model answers with
it; `record_memory` stores the turn as episodes and tells Engram which context items were used: those
the answer cites or restates (the model names none itself).

The model is scripted (no LLM, deterministic: it answers with the fact or line of what the user told
that shares most words with the question) unless ANTHROPIC_API_KEY is set, in which case Claude answers
with the Engram context as its system prompt. `--no-memory` runs the same agent without Engram.

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
    "a again an and are as at be by can do does for from have how i in is it me my of on or our the their "
    "them they this to use using we what which who why with you your".split()
)
# How the context renders a line: "(earlier) user: ..." for an episode, "... (17 Nov 2026, confidence
# 0.75)" for a fact.
_EARLIER = "(earlier) "
_ROLE = re.compile(r"^(user|assistant|tool|system): ")
_FACT_NOTE = re.compile(r"\s*\([^()]*confidence [0-9.]+\)\s*$")


class AgentState(MemoryState, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _words(text: str) -> set[str]:
    return {w.rstrip(".").removesuffix("s") for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _statement(item: Mapping[str, Any]) -> tuple[str, str]:
    """The role a context line was said in ("" for a fact) and what it says."""
    text = str(item["text"]).strip().lstrip("- ").removeprefix(_EARLIER)
    if item.get("type") == "fact":
        return "", _FACT_NOTE.sub("", text)
    role = _ROLE.match(text)
    return (role[1], text[role.end() :]) if role else ("", text)


class ScriptedModel:
    """A deterministic offline responder, so that the example runs anywhere without an LLM: it answers
    with what the user has told, the context line sharing most content words with the question, a fact
    before a conversation line on a tie. The agent's own lines and questions are not answers, so they
    are never picked (nor the question itself); with nothing to go on it asks."""

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
        items: Sequence[Mapping[str, Any]] = state.get("memory_items", [])
        messages = list(state.get("messages", []))
        question = last_user_text(messages)
        wanted = _words(question)
        # What it can see: the context and, as a model sees them, the user's earlier messages here.
        seen: list[tuple[str, str | None, str]] = []  # (kind, item id, statement)
        for item in items:
            role, said = _statement(item)
            if item.get("type") == "fact":
                seen.append(("fact", str(item["id"]), said))
            elif item.get("type") in ("episode", "session_summary") and role in ("user", ""):
                seen.append(("line", str(item["id"]), said))
        for message in messages[:-1]:
            role, said = message_parts(message)
            if role == "user":
                seen.append(("line", None, said))
        candidates = [
            (len(wanted & _words(said)), kind == "fact", item_id is not None, -n, item_id, said)
            for n, (kind, item_id, said) in enumerate(seen)
            if not said.rstrip().endswith("?") and said.strip() != question.strip()
        ]
        best = max(candidates, default=None)
        if best is not None and best[0] > 0:
            return {"messages": [AIMessage(f"From what you told me before: {best[5]}")], "memory_outcome": "success"}
        return {
            "messages": [AIMessage("Could you tell me a bit more about your setup, so I can help?")],
            "memory_outcome": "unknown",
        }


class ClaudeModel:
    """Claude through the Anthropic SDK, with the Engram context as the system prompt."""

    def __init__(self, model: str | None = None) -> None:
        import anthropic

        self.client = anthropic.Anthropic()
        self.model = model or os.environ.get("ENGRAM_EXAMPLE_MODEL", "claude-sonnet-4-5")

    def __call__(self, state: Mapping[str, Any]) -> dict[str, Any]:
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
        return {"messages": [AIMessage(answer)], "memory_outcome": "unknown"}


Model = Callable[[Any], dict[str, Any]]


def choose_model() -> Model:
    return ClaudeModel() if os.environ.get("ANTHROPIC_API_KEY") else ScriptedModel()


def build_graph(engram: EngramClient, model: Model, *, max_tokens: int = 1500, memory: bool = True) -> Any:
    """The three nodes; without memory, the model alone (nothing read from Engram, nothing stored)."""
    fetch, store = load_memory(engram, max_tokens=max_tokens), record_memory(engram)

    def load(state: AgentState) -> dict[str, Any]:
        return fetch(state)

    def answer(state: AgentState) -> dict[str, Any]:
        return model(state)

    def record(state: AgentState) -> dict[str, Any]:
        return store(state)

    graph = StateGraph(AgentState)
    graph.add_node("model", answer)
    if not memory:
        graph.add_edge(START, "model")
        graph.add_edge("model", END)
        return graph.compile()
    graph.add_node("load_memory", load)
    graph.add_node("record_memory", record)
    graph.add_edge(START, "load_memory")
    graph.add_edge("load_memory", "model")
    graph.add_edge("model", "record_memory")
    graph.add_edge("record_memory", END)
    return graph.compile()


def run_conversation(
    engram: EngramClient,
    subject: str,
    turns: Sequence[str],
    *,
    model: Model | None = None,
    session: str | None = None,
    memory: bool = True,
) -> list[dict[str, Any]]:
    """Run each user turn through the graph; returns, per turn, the answer, what memory offered and
    what of it the answer used (as record_memory sent it)."""
    app = build_graph(engram, model or choose_model(), memory=memory)
    state: dict[str, Any] = {"subject": subject, "session": session or f"{subject}-{uuid.uuid4().hex[:8]}"}
    out = []
    for text in turns:
        state = app.invoke({**state, "messages": [*state.get("messages", []), HumanMessage(text)]})
        out.append(
            {
                "user": text,
                "answer": message_parts(state["messages"][-1])[1],
                "offered": list(state.get("memory_items", [])),
                "used_item_ids": list(state.get("memory_used_item_ids", [])),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("ENGRAM_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--api-key", default=os.environ.get("ENGRAM_API_KEY"))
    parser.add_argument("--subject", default="example-user")
    parser.add_argument(
        "--no-memory", action="store_true", help="the same agent without Engram: nothing read or stored"
    )
    parser.add_argument("turns", nargs="*", help="user messages (default: a short scripted conversation)")
    args = parser.parse_args(argv)
    turns = args.turns or [
        "Hi, our production database is PostgreSQL 16 and we deploy on Kubernetes.",
        "We keep getting 429 errors from your API during the nightly import.",
        "Which database are we on again?",
    ]
    session = f"{args.subject}-{uuid.uuid4().hex[:8]}"
    with EngramClient(args.url, args.api_key) as engram:
        for turn in run_conversation(engram, args.subject, turns, session=session, memory=not args.no_memory):
            print(f"user:  {turn['user']}\nagent: {turn['answer']}\n")
        if not args.no_memory:
            # The conversation is over: Engram consolidates it into facts (in the background).
            engram.sessions.end(session, outcome="success")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
