"""LangGraph integration: `load_memory` / `record_memory` graph nodes, and `EngramStore`, a LangGraph
`BaseStore` backed by Engram's semantic memory.

    graph.add_node("load_memory", load_memory(engram))
    graph.add_node("record_memory", record_memory(engram))

The nodes read and write the state keys of `MemoryState` (all optional except `subject` and
`messages`; see there). What the model used is decided from its answer unless the model node names it:
record_memory marks used the context items that the turn's answer cites or restates
(`engram_client.used_item_ids`).

`EngramStore` maps an item (namespace, key, value) to one fact: entity `<prefix>/<namespace joined
by "/">`, attribute = key, value = the JSON of the item, statement = the item's text (what Engram
embeds and the router shows). A put supersedes the previous value (kept as history); a delete
retracts it. The subject of the fact is `subject_of(namespace)` (by default the last element), so
that the router serves the memories of that subject and erasure of the subject removes them.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict, TypeVar

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from engram_client import _operations as ops
from engram_client._transport import Call
from engram_client.client import AsyncEngramClient, EngramClient
from engram_client.errors import NotFoundError
from engram_client.grounding import used_item_ids
from engram_client.models import Context, Fact, context_item_ids, context_items

T = TypeVar("T")
# A sans-IO step: yields calls, receives their answers, returns the result. One body, two drivers.
Steps = Generator[Call[Any], Any, T]

NAMESPACE_REGISTRY_ATTRIBUTE_PREFIX = "ns_"
MAX_SEARCH_K = 100
_NON_KEY = re.compile(r"[^a-z0-9]+")
_SPACE = re.compile(r"\s+")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def attribute_for(key: str) -> str:
    """Engram compares attributes as snake_case keys; a store key is any string, so a key that is not
    already in that form gets a digest of itself appended (two keys never share an attribute)."""
    normal = _NON_KEY.sub("_", key.casefold()).strip("_")
    if normal == key and len(key) <= 100:
        return key
    return f"{normal[:80] or 'key'}_{_digest(key)}"


def entity_for(path: str) -> str:
    """Entities compare case-insensitively; a path that would change under that gets a digest."""
    normal = _SPACE.sub(" ", unicodedata.normalize("NFKC", path)).strip().casefold()
    if normal == path and len(path) <= 255:
        return path
    return f"{normal[:230]}#{_digest(path)}"


# Graph nodes ----------------------------------------------------------------------------------


class MemoryState(TypedDict, total=False):
    """The state keys the memory nodes use; mix them into your graph's state (with `messages`).

    - `subject` (required), `session`, `agent`: whose memory, which conversation, which agent.
    - `memory_context`: the rendered prompt (load_memory), for the model's system prompt.
    - `memory_trace_id`: the context's trace (load_memory); None once record_memory sent its feedback.
    - `memory_item_ids`, `memory_items`: what the context offered: the ids, and `{id, type, text}`.
    - `memory_used_item_ids`: what the answer used. load_memory empties it; a model node may set it;
      left empty, record_memory fills it with the items that the turn's answer (the last assistant
      message not yet stored) cites or restates, and sends it. Ids the model node set win.
    - `memory_outcome` ("success", "failure", default "unknown") and `memory_asked_to_repeat`: the
      rest of the feedback, set by the model node.
    - `memory_recorded`: how many of `messages` are stored as episodes (record_memory).
    """

    subject: str
    session: str
    agent: str
    memory_context: str
    memory_trace_id: str | None
    memory_item_ids: list[str]
    memory_items: list[dict[str, Any]]
    memory_used_item_ids: list[str]
    memory_asked_to_repeat: bool
    memory_outcome: str
    memory_recorded: int


_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "tool": "tool",
    "system": "system",
}


def message_parts(message: Any) -> tuple[str, str]:
    """(role, text) of a LangChain message, a ("role", "text") tuple or a {"role", "content"} dict."""
    if isinstance(message, tuple) and len(message) == 2:
        role, content = message
    elif isinstance(message, Mapping):
        role, content = message.get("role", message.get("type", "user")), message.get("content", "")
    else:
        role, content = getattr(message, "type", "user"), getattr(message, "content", "")
    if isinstance(content, list):  # content blocks
        content = " ".join(str(b.get("text", "")) if isinstance(b, Mapping) else str(b) for b in content)
    return _ROLES.get(str(role), str(role)), str(content)


def last_user_text(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        role, text = message_parts(message)
        if role == "user":
            return text
    return ""


def _subject(state: Mapping[str, Any]) -> str:
    subject = state.get("subject")
    if not subject:
        raise ValueError(
            "The memory nodes need `subject` in the graph state (whose memory this is): "
            "put it in the input, e.g. graph.invoke({'subject': 'u1', 'messages': [...]})."
        )
    return str(subject)


def _context_call(state: Mapping[str, Any], max_tokens: int, layers: Sequence[str] | None) -> Call[Context]:
    return ops.context_get(
        _subject(state),
        query=last_user_text(state.get("messages", [])),
        session=state.get("session"),
        agent=state.get("agent"),
        max_tokens=max_tokens,
        layers=list(layers) if layers else None,  # type: ignore[arg-type]
    )


def _context_update(ctx: Context) -> dict[str, Any]:
    return {
        "memory_context": ctx["prompt"],
        "memory_trace_id": str(ctx["trace_id"]),
        "memory_item_ids": context_item_ids(ctx),
        "memory_items": context_items(ctx),
        "memory_used_item_ids": [],
        "memory_asked_to_repeat": False,
    }


def _answer_used(fresh: Sequence[Any], state: Mapping[str, Any]) -> list[str]:
    """The context items that the turn's answer (the last assistant message not yet stored) used."""
    for message in reversed(fresh):
        role, text = message_parts(message)
        if role == "assistant":
            return used_item_ids(text, state.get("memory_items") or [])
    return []


def _record_calls(
    state: Mapping[str, Any], *, kind_of_tool: str = "tool_result"
) -> tuple[list[Call[Any]], dict[str, Any]]:
    subject = _subject(state)
    messages = list(state.get("messages", []))
    start = int(state.get("memory_recorded", 0))
    # Without one, Engram files the turn in the subject's session of the day (its one rule for every caller).
    session = state.get("session")
    calls: list[Call[Any]] = []
    items: list[dict[str, Any]] = []
    for message in messages[start:]:
        role, text = message_parts(message)
        if role == "system" or not text:
            continue
        item: dict[str, Any] = {"subject": subject, "role": role, "content": text}
        if session:
            item["session"] = session
        if role == "tool":
            item["kind"] = kind_of_tool
        if state.get("agent"):
            item["agent"] = state["agent"]
        items.append(item)
    if items:
        # Deterministic key: replaying the same turn (a graph retried from a checkpoint) stores it once.
        digest = hashlib.sha256(json.dumps([session, start, items], sort_keys=True).encode()).hexdigest()
        calls.append(ops.episodes_append(items, idempotency_key=f"lg-record-{digest[:40]}"))  # type: ignore[arg-type]
    trace_id = state.get("memory_trace_id")
    update: dict[str, Any] = {"memory_recorded": len(messages), "memory_trace_id": None}
    if trace_id:
        used = list(state.get("memory_used_item_ids") or []) or _answer_used(messages[start:], state)
        update["memory_used_item_ids"] = used
        calls.append(
            ops.context_feedback(
                trace_id,
                used_item_ids=used,
                outcome=state.get("memory_outcome") or "unknown",
                asked_to_repeat=bool(state.get("memory_asked_to_repeat", False)),
                idempotency_key=f"lg-feedback-{trace_id}",
            )
        )
    # The feedback is sent: no trace awaits it (None, not "", which reads as an id that is empty).
    return calls, update


def load_memory(
    client: EngramClient, *, max_tokens: int = 2000, layers: Sequence[str] | None = None
) -> Callable[[Any], dict[str, Any]]:
    """A node that asks Engram for the context of the latest user message and puts the rendered
    prompt and the trace id into the state."""

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        return _context_update(client.request(_context_call(state, max_tokens, layers)))

    return node


def record_memory(client: EngramClient) -> Callable[[Any], dict[str, Any]]:
    """A node that appends the messages not yet stored as episodes and sends feedback on the trace
    (the items used: `memory_used_item_ids`, or those the turn's answer cites or restates)."""

    def node(state: Mapping[str, Any]) -> dict[str, Any]:
        calls, update = _record_calls(state)
        for call in calls:
            client.request(call)
        return update

    return node


def aload_memory(
    client: AsyncEngramClient, *, max_tokens: int = 2000, layers: Sequence[str] | None = None
) -> Callable[[Any], Any]:
    async def node(state: Mapping[str, Any]) -> dict[str, Any]:
        return _context_update(await client.request(_context_call(state, max_tokens, layers)))

    return node


def arecord_memory(client: AsyncEngramClient) -> Callable[[Any], Any]:
    async def node(state: Mapping[str, Any]) -> dict[str, Any]:
        calls, update = _record_calls(state)
        for call in calls:
            await client.request(call)
        return update

    return node


# The store ------------------------------------------------------------------------------------


def _default_subject(namespace: tuple[str, ...]) -> str:
    return namespace[-1] if namespace else ""


def _text_of(value: Mapping[str, Any], index: Sequence[str] | None) -> str:
    if index:
        parts = [str(value[f]) for f in index if f in value and value[f] not in (None, "")]
        if parts:
            return " ".join(parts)
    for field in ("text", "content", "memory", "statement", "data"):
        if isinstance(value.get(field), str) and value[field].strip():
            return str(value[field])
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _parse_time(value: str | None) -> datetime:
    if not value:
        return datetime.now(UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _compare(actual: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping) and condition and all(str(k).startswith("$") for k in condition):
        checks: dict[str, Callable[[Any, Any], bool]] = {
            "$eq": lambda a, b: a == b,
            "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: a is not None and a > b,
            "$gte": lambda a, b: a is not None and a >= b,
            "$lt": lambda a, b: a is not None and a < b,
            "$lte": lambda a, b: a is not None and a <= b,
        }
        return all(checks[op](actual, operand) for op, operand in condition.items() if op in checks)
    return bool(actual == condition)


def matches_filter(value: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    return all(_compare(value.get(k), v) for k, v in (filter or {}).items())


def _namespace_matches(namespace: tuple[str, ...], op: ListNamespacesOp) -> bool:
    for condition in op.match_conditions or ():
        path = tuple(condition.path)
        if len(path) > len(namespace):
            return False
        window = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
        if any(p != "*" and p != n for p, n in zip(path, window, strict=True)):
            return False
    return True


class EngramStore(BaseStore):
    """A LangGraph store whose items are facts in Engram's semantic memory (see the module docstring).

    Give it an `EngramClient` for sync graphs, an `AsyncEngramClient` for async ones, or both."""

    def __init__(
        self,
        client: EngramClient | None = None,
        *,
        async_client: AsyncEngramClient | None = None,
        prefix: str = "langgraph",
        subject_of: Callable[[tuple[str, ...]], str] = _default_subject,
        category: str = "other",
    ) -> None:
        if client is None and async_client is None:
            raise ValueError("EngramStore needs an EngramClient or an AsyncEngramClient.")
        self.client = client
        self.async_client = async_client
        self.prefix = prefix
        self.subject_of = subject_of
        self.category = category

    # Drivers: the same steps, run over the sync or the async client.

    def batch(self, ops_: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise RuntimeError("This EngramStore has only an async client; use the a* methods.")
        results: list[Result] = []
        for op in ops_:
            steps = self._steps(op)
            try:
                call = next(steps)
                while True:
                    try:
                        answer = self.client.request(call)
                    except NotFoundError as exc:
                        call = steps.throw(exc)
                        continue
                    call = steps.send(answer)
            except StopIteration as done:
                results.append(done.value)
        return results

    async def abatch(self, ops_: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            raise RuntimeError("This EngramStore has only a sync client; use the sync methods.")
        results: list[Result] = []
        for op in ops_:
            steps = self._steps(op)
            try:
                call = next(steps)
                while True:
                    try:
                        answer = await self.async_client.request(call)
                    except NotFoundError as exc:
                        call = steps.throw(exc)
                        continue
                    call = steps.send(answer)
            except StopIteration as done:
                results.append(done.value)
        return results

    # Steps.

    def _entity(self, namespace: tuple[str, ...]) -> str:
        return entity_for("/".join((self.prefix, *namespace)))

    def _registry(self) -> str:
        return f"{self.prefix}:namespaces"

    def _steps(self, op: Op) -> Steps[Result]:
        if isinstance(op, GetOp):
            return (yield from self._get(op.namespace, op.key))
        if isinstance(op, PutOp):
            if op.value is None:
                yield from self._delete(op.namespace, op.key)
            else:
                yield from self._put(op)
            return None
        if isinstance(op, SearchOp):
            return (yield from self._search(op))
        if isinstance(op, ListNamespacesOp):
            return (yield from self._list_namespaces(op))
        raise TypeError(f"Unsupported store operation {type(op).__name__}.")

    def _current(self, namespace: tuple[str, ...], key: str) -> Steps[Fact | None]:
        page = yield ops.facts_list(entity=self._entity(namespace), attribute=attribute_for(key), limit=1)
        return page.results[0] if page.results else None

    def _item(
        self, fact: Fact, namespace: tuple[str, ...], *, search: bool = False, score: float | None = None
    ) -> Item:
        stored = json.loads(fact["value"])
        kwargs: dict[str, Any] = {
            "value": stored["value"],
            "key": stored["key"],
            "namespace": namespace,
            "created_at": _parse_time(stored.get("created_at")),
            "updated_at": _parse_time(fact.get("recorded_at")),
        }
        return SearchItem(**kwargs, score=score) if search else Item(**kwargs)

    def _get(self, namespace: tuple[str, ...], key: str) -> Steps[Item | None]:
        fact = yield from self._current(namespace, key)
        return self._item(fact, namespace) if fact is not None else None

    def _put(self, op: PutOp) -> Steps[None]:
        namespace, key, value = op.namespace, op.key, dict(op.value or {})
        current = yield from self._current(namespace, key)
        created_at = json.loads(current["value"]).get("created_at") if current else datetime.now(UTC).isoformat()
        encoded = json.dumps({"value": value, "key": key, "created_at": created_at}, sort_keys=True, ensure_ascii=False)
        statement = _text_of(value, op.index if isinstance(op.index, list) else None)
        result = yield ops.fact_upsert(
            subject=self.subject_of(namespace),
            entity=self._entity(namespace),
            attribute=attribute_for(key),
            value=encoded,
            statement=statement,
            category=self.category,
            confidence=1.0,
            cardinality="single",
        )
        fact = result["fact"]
        # The merge compares values case-folded and statements by similarity; a store keeps exactly
        # what it was given, so a near-identical value that was merged is then set exactly (logged).
        if fact["value"] != encoded or fact["statement"] != statement:
            yield ops.fact_edit(fact["id"], value=encoded, statement=statement, reason="store put")
        if current is None:
            yield from self._register(namespace)
        return None

    def _register(self, namespace: tuple[str, ...]) -> Steps[None]:
        path = "/".join(namespace)
        yield ops.fact_upsert(
            entity=self._registry(),
            attribute=attribute_for(f"{NAMESPACE_REGISTRY_ATTRIBUTE_PREFIX}{path}"),
            value=json.dumps(list(namespace)),
            statement=f"LangGraph store namespace {path}",
            category=self.category,
            confidence=1.0,
            cardinality="single",
        )
        return None

    def _delete(self, namespace: tuple[str, ...], key: str) -> Steps[None]:
        fact = yield from self._current(namespace, key)
        if fact is None:
            return None
        yield ops.fact_retract(fact["id"], reason="store delete")
        left = yield ops.facts_list(entity=self._entity(namespace), limit=1)
        if not left.results:
            marker = yield ops.facts_list(
                entity=self._registry(),
                attribute=attribute_for(f"{NAMESPACE_REGISTRY_ATTRIBUTE_PREFIX}{'/'.join(namespace)}"),
                limit=1,
            )
            for registered in marker.results:
                yield ops.fact_retract(registered["id"], reason="store namespace emptied")
        return None

    def _namespaces(self) -> Steps[list[tuple[str, ...]]]:
        found: list[tuple[str, ...]] = []
        cursor: str | None = None
        while True:
            page = yield ops.facts_list(entity=self._registry(), limit=500, cursor=cursor)
            found.extend(tuple(json.loads(f["value"])) for f in page.results)
            cursor = page.next_cursor
            if not cursor:
                return sorted(set(found))

    def _list_namespaces(self, op: ListNamespacesOp) -> Steps[list[tuple[str, ...]]]:
        every = yield from self._namespaces()
        chosen = [ns for ns in every if _namespace_matches(ns, op)]
        if op.max_depth is not None:
            chosen = sorted({ns[: op.max_depth] for ns in chosen})
        return chosen[op.offset : op.offset + op.limit]

    def _search(self, op: SearchOp) -> Steps[list[SearchItem]]:
        prefix = tuple(op.namespace_prefix)
        every = yield from self._namespaces()
        spaces = [ns for ns in every if ns[: len(prefix)] == prefix]
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        for namespace in spaces:
            if op.query:
                # One search per namespace with an exact entity filter: the filter runs inside Engram's
                # query, so no result is lost to a post-filter (the pitfall of filtered vector search).
                results = yield ops.facts_search(op.query, entity=self._entity(namespace), k=MAX_SEARCH_K)
                for r in results:
                    item = self._item(r["fact"], namespace, search=True, score=float(r["score"]))
                    if matches_filter(item.value, op.filter):
                        found.append(item)  # type: ignore[arg-type]
            else:
                cursor: str | None = None
                while True:
                    page = yield ops.facts_list(entity=self._entity(namespace), limit=500, cursor=cursor)
                    for fact in page.results:
                        item = self._item(fact, namespace, search=True)
                        if matches_filter(item.value, op.filter):
                            found.append(item)  # type: ignore[arg-type]
                    cursor = page.next_cursor
                    if not cursor or (len(found) >= wanted and op.filter is None):
                        break
        if op.query:
            found.sort(key=lambda i: (-(i.score or 0.0), i.namespace, i.key))
        else:
            found.sort(key=lambda i: (i.updated_at, i.namespace, i.key), reverse=True)
        return found[op.offset : wanted]
