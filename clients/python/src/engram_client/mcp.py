"""Engram as an MCP server: memory tools for any MCP client (desktop assistants, IDEs, agents).

The server is a client of Engram's own API: every tool call is one or two API calls made with an
Engram API key, so tenant isolation, scopes, validation, rate limits and idempotency are the API's.
Over stdio the key is given once when the server starts (`--api-key` or ENGRAM_API_KEY); over
streamable HTTP every request carries its own `Authorization: Bearer <api key>`, checked against
Engram before the MCP layer sees the request.

Tools: remember (store an episode), recall (the budgeted context), search_facts, the verification loop
(facts_to_confirm, confirm_fact, correct_fact), forget_subject (erasure request), record_outcome
(feedback on a recall and/or a procedure's outcome).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from engram_client import (
    APIError,
    AsyncEngramClient,
    AuthenticationError,
    EngramError,
)
from engram_client.grounding import used_item_ids as used_item_ids_of
from engram_client.models import Fact

# httpx logs each request's URL at INFO, and URLs name subjects (/v1/subjects/<subject>/erasure); MCP
# hosts show a server's INFO lines, where a subject id would outlive its erasure.
for _transport_logger in ("httpx", "httpcore"):
    logging.getLogger(_transport_logger).setLevel(logging.WARNING)

Outcome = Literal["success", "failure", "unknown"]
AUTH_CACHE_SECONDS = 60.0

INSTRUCTIONS = """Engram is this agent's long-term memory, shared across conversations.
- Before answering a user, call `recall` with their subject id and the question: it returns what is
  known (rules to follow, facts, recent activity) within a token budget, with a trace_id.
- After a turn, call `remember` for what the user said (and what you did), so it can be recalled later.
- After using a recall, call `record_outcome` with its trace_id and your answer (or the item ids you
  used): the items your answer cites or restates are marked used.
- `search_facts` finds facts; `forget_subject` erases a subject.
- `facts_to_confirm` lists what Engram is no longer sure of about a subject: ask the user when it fits
  the conversation, then `confirm_fact` (still true) or `correct_fact` (the right value)."""

# A value the subject stated themselves when correcting a fact.
CORRECTION_CONFIDENCE = 0.9


def _tool_error(exc: EngramError) -> ToolError:
    if isinstance(exc, APIError):
        where = "; ".join(f"{e.get('pointer')}: {e.get('detail')}" for e in exc.errors[:5])
        return ToolError(f"Engram answered {exc.status} {exc.title}: {where or exc.detail}")
    return ToolError(f"Engram is unreachable: {exc}")


# What an argument should be, by pydantic's error type; other types keep pydantic's own phrase.
_SHOULD_BE = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "string_type": "a string",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
}


def _arguments_error(tool: str, exc: ValidationError) -> ToolError:
    """pydantic's report on a tool's arguments as one sentence naming each argument (never its value,
    which the caller has): `recall: max_tokens must be a whole number.`"""
    said = []
    for error in exc.errors():
        name = ".".join(str(part) for part in error["loc"]) or "the arguments"
        if error["type"] == "missing":
            said.append(f"{name} is required")
        elif error["type"] == "literal_error":
            said.append(f"{name} must be {error.get('ctx', {}).get('expected', 'one of the values listed')}")
        elif error["type"] in _SHOULD_BE:
            said.append(f"{name} must be {_SHOULD_BE[error['type']]}")
        else:
            said.append(f"{name}: {error['msg'][0].lower()}{error['msg'][1:]}")
    return ToolError(f"{tool}: {'; '.join(said)}.")


class EngramMCPServer(MCPServer):
    """MCPServer whose refusal of a tool's arguments reads as a sentence."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                # The cause is kept: the SDK logs the names of the rejected arguments from it.
                raise _arguments_error(name, exc.__cause__) from exc.__cause__
            raise


def _why_unsure(fact: Fact) -> str:
    if fact["status"] == "pending_review":
        return "pending review: the evidence for it was weak or conflicting"
    return f"not confirmed since {fact['last_confirmed_at'][:10]}"


def _restated(fact: Fact, value: str) -> str:
    """The old statement with the new value in place of the old one, or a plain one."""
    if fact["value"] and fact["value"] in fact["statement"]:
        return fact["statement"].replace(fact["value"], value)
    return f"{fact['entity']}'s {fact['attribute'].replace('_', ' ')} is {value}."


def _bearer(headers: Any) -> str | None:
    if headers is None:
        return None
    value = headers.get("authorization") or headers.get("Authorization") or ""
    scheme, _, token = str(value).partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def shown_value(value: str) -> str:
    """A fact's value as a reader wants it: the item itself for a LangGraph EngramStore fact, which
    keeps `{"created_at", "key", "value"}` (the key and creation time the store needs back)."""
    try:
        stored = json.loads(value)
    except ValueError:
        return value
    if isinstance(stored, dict) and set(stored) == {"created_at", "key", "value"}:
        return json.dumps(stored["value"], ensure_ascii=False, sort_keys=True)
    return value


class EngramTools:
    """The tool bodies, with one API client per key."""

    def __init__(self, base_url: str, api_key: str | None = None, *, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.timeout = timeout
        self._clients: dict[str, AsyncEngramClient] = {}

    def client_for(self, ctx: Context | None) -> AsyncEngramClient:
        key = self.api_key
        if key is None:
            key = _bearer(ctx.headers if ctx is not None else None)
        if not key:
            raise ToolError("No Engram API key: start the server with --api-key, or send Authorization: Bearer <key>.")
        if key not in self._clients:
            self._clients[key] = AsyncEngramClient(self.base_url, key, timeout=self.timeout)
        return self._clients[key]

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()

    async def remember(
        self,
        ctx: Context | None,
        *,
        subject: str,
        content: str,
        session: str | None = None,
        role: str = "user",
        kind: str = "message",
        agent: str | None = None,
        entities: list[str] | None = None,
        topics: list[str] | None = None,
    ) -> dict[str, Any]:
        # Without a session, Engram files the note in the subject's session of the day, as for any caller.
        item: dict[str, Any] = {"subject": subject, "role": role, "kind": kind, "content": content}
        for name, value in (("session", session), ("agent", agent), ("entities", entities), ("topics", topics)):
            if value:
                item[name] = value
        try:
            stored = await self.client_for(ctx).episodes.append([item])  # type: ignore[list-item]
        except EngramError as exc:
            raise _tool_error(exc) from exc
        episode = stored["episodes"][0]
        return {
            "episode_id": episode["id"],
            "session": episode["session"],
            "token_count": episode["token_count"],
            "entities": episode["entities"],
            "topics": episode["topics"],
        }

    async def recall(
        self,
        ctx: Context | None,
        *,
        subject: str,
        query: str = "",
        session: str | None = None,
        agent: str | None = None,
        max_tokens: int = 2000,
    ) -> dict[str, Any]:
        try:
            context = await self.client_for(ctx).context(
                subject, query=query, session=session, agent=agent, max_tokens=max_tokens
            )
        except EngramError as exc:
            raise _tool_error(exc) from exc
        layers = context["layers"]
        items = [
            {"id": i["id"], "layer": layer, "text": i["text"]}
            for layer in ("procedural", "semantic", "episodic")
            for i in layers[layer]  # type: ignore[literal-required]
        ]
        return {
            "trace_id": str(context["trace_id"]),
            "context": context["prompt"],
            "tokens": context["tokens"],
            "items": items,
        }

    async def search_facts(
        self,
        ctx: Context | None,
        *,
        query: str,
        subject: str | None = None,
        entity: str | None = None,
        category: str | None = None,
        k: int = 10,
    ) -> dict[str, Any]:
        try:
            results = await self.client_for(ctx).facts.search(
                query, subject=subject, entity=entity, category=category, k=k
            )
        except EngramError as exc:
            raise _tool_error(exc) from exc
        return {
            "facts": [
                {
                    "id": r["fact"]["id"],
                    "statement": r["fact"]["statement"],
                    "entity": r["fact"]["entity"],
                    "attribute": r["fact"]["attribute"],
                    "value": shown_value(r["fact"]["value"]),
                    "confidence": r["fact"]["confidence"],
                    "score": r["score"],
                    "source_episode_ids": r["fact"]["source_episode_ids"],
                }
                for r in results
            ]
        }

    async def facts_to_confirm(self, ctx: Context | None, *, subject: str, limit: int = 20) -> dict[str, Any]:
        try:
            page = await self.client_for(ctx).facts.list(subject=subject, needs_confirmation=True, limit=limit)
        except EngramError as exc:
            raise _tool_error(exc) from exc
        return {
            "facts": [
                {
                    "id": f["id"],
                    "statement": f["statement"],
                    "entity": f["entity"],
                    "attribute": f["attribute"],
                    "value": f["value"],
                    "confidence": f["confidence"],
                    "status": f["status"],
                    "last_confirmed_at": f["last_confirmed_at"],
                    "why": _why_unsure(f),
                }
                for f in page.results
            ]
        }

    async def confirm_fact(self, ctx: Context | None, *, fact_id: str) -> dict[str, Any]:
        """The subject says the fact still holds: its confidence rises and its decay restarts; a fact
        waiting in review is thereby accepted (POST /v1/facts/{id}/confirm)."""
        try:
            fact = await self.client_for(ctx).facts.confirm(fact_id)
        except EngramError as exc:
            raise _tool_error(exc) from exc
        return {
            "id": fact["id"],
            "statement": fact["statement"],
            "confidence": fact["confidence"],
            "confirmation_count": fact["confirmation_count"],
            "status": fact["status"],
        }

    async def correct_fact(
        self,
        ctx: Context | None,
        *,
        fact_id: str,
        value: str,
        statement: str | None = None,
        was_wrong: bool = False,
    ) -> dict[str, Any]:
        """The right value, written as a new fact of the same entity and attribute (POST /v1/facts).
        The value changed (default): it holds from now on, and the old one is history (superseded; a
        value of a multi-valued attribute, or one waiting in review, is retracted). It was never true
        (`was_wrong`): the right value holds since the old one was observed, and the old one is
        retracted, out of history."""
        client = self.client_for(ctx)
        try:
            old = await client.facts.get(fact_id)
            written = await client.facts.upsert(
                subject=old["subject"],
                entity=old["entity"],
                attribute=old["attribute"],
                value=value,
                statement=statement or _restated(old, value),
                category=old["category"],
                confidence=max(old["confidence"], CORRECTION_CONFIDENCE),
                valid_from=old["valid_from"] if was_wrong else None,
                cardinality=old["cardinality"],
            )
            previous = await client.facts.get(fact_id)
            if written["fact"]["id"] != fact_id and (was_wrong or previous["status"] in ("active", "pending_review")):
                reason = f"corrected to {value!r}" + ("" if was_wrong else " (changed)")
                previous = await client.facts.retract(fact_id, reason=reason)
        except EngramError as exc:
            raise _tool_error(exc) from exc
        fact = written["fact"]
        return {
            "action": written["action"],
            "fact": {
                "id": fact["id"],
                "statement": fact["statement"],
                "value": fact["value"],
                "status": fact["status"],
            },
            "previous_id": fact_id,
            "previous_status": previous["status"],
        }

    async def forget_subject(self, ctx: Context | None, *, subject: str, reason: str = "") -> dict[str, Any]:
        try:
            request = await self.client_for(ctx).subjects.erase(subject, reason=reason or "requested through MCP")
        except EngramError as exc:
            raise _tool_error(exc) from exc
        return {"erasure_request_id": request["id"], "status": request["status"], "deadline": request["deadline"]}

    async def record_outcome(
        self,
        ctx: Context | None,
        *,
        outcome: Outcome = "unknown",
        trace_id: str | None = None,
        used_item_ids: list[str] | None = None,
        answer: str | None = None,
        signal: float | None = None,
        asked_to_repeat: bool = False,
        procedure_id: int | None = None,
        procedure_applied: bool = True,
        session: str | None = None,
    ) -> dict[str, Any]:
        if trace_id is None and procedure_id is None:
            raise ToolError("Give trace_id (the recall the outcome is about), procedure_id, or both.")
        client = self.client_for(ctx)
        out: dict[str, Any] = {}
        try:
            if trace_id is not None:
                if not used_item_ids and answer:
                    used_item_ids = await self._answer_used(client, trace_id, answer)
                feedback = await client.feedback(
                    trace_id,
                    used_item_ids=used_item_ids or [],
                    outcome=outcome,
                    signal=signal,
                    asked_to_repeat=asked_to_repeat,
                )
                out["feedback"] = {
                    "trace_id": str(feedback["trace_id"]),
                    "used_item_ids": feedback["used_item_ids"],
                    "used_count": feedback["used_count"],
                    "offered_count": feedback["offered_count"],
                    "hit_rate": feedback["hit_rate"],
                }
            if procedure_id is not None:
                success = {"success": True, "failure": False}.get(outcome)
                recorded = await client.procedures.record_outcome(
                    procedure_id, applied=procedure_applied, success=success, signal=signal, session=session
                )
                out["procedure_outcome"] = {
                    "id": recorded["id"],
                    "procedure_id": recorded["procedure_id"],
                    "confidence": recorded["procedure"]["confidence"],
                }
        except EngramError as exc:
            raise _tool_error(exc) from exc
        return out

    @staticmethod
    async def _answer_used(client: AsyncEngramClient, trace_id: str, answer: str) -> list[str]:
        """The items of the recall that the answer cites or restates. MCP keeps no state between
        calls: the items are read back from the recall's trace."""
        trace = await client.traces.get(trace_id)
        if not trace["offered"] and trace["total_tokens"]:
            # The trace's items are written just after the recall answered (docs/router.md, Traces).
            raise ToolError("The recall's items are not stored yet: call record_outcome again in a moment.")
        return used_item_ids_of(answer, trace["offered"])


def build_server(tools: EngramTools) -> MCPServer:
    """The MCP server whose tools are the methods of `tools` (MCP passes each call's Context as `ctx`)."""
    server: MCPServer = EngramMCPServer(name="engram", instructions=INSTRUCTIONS, version="0.1.0")
    for method, description in (
        (tools.remember, "Store an event (by default what the user said) in the subject's episodic memory."),
        (
            tools.recall,
            "What Engram knows that is relevant now: rules, facts and recent activity about the subject, "
            "rendered within max_tokens, with a trace_id for record_outcome.",
        ),
        (tools.search_facts, "Search the facts Engram holds (current ones only), ranked, with their sources."),
        (
            tools.facts_to_confirm,
            "The facts about a subject that Engram is no longer sure of (not confirmed for a while, or "
            "with weak or conflicting evidence), each with why: ask the user, then confirm_fact or correct_fact.",
        ),
        (
            tools.confirm_fact,
            "Confirm that a fact is still true (raises its confidence, resets its decay; a fact waiting "
            "for review is approved when this key may review, else needs_review stays true).",
        ),
        (
            tools.correct_fact,
            "Correct a fact with the right value (and optionally the sentence saying it). By default the "
            "value changed and the old one becomes history; was_wrong=true when the old value was never true.",
        ),
        (
            tools.forget_subject,
            "Erase everything held about a subject (an erasure request, carried out by Engram).",
        ),
        (
            tools.record_outcome,
            "Report how a recall went (trace_id, success or failure, and what of it was used: the item ids "
            "used, or your answer, whose cited ids and restated lines mark the items used) and/or the "
            "outcome of applying a procedure (procedure_id).",
        ),
    ):
        server.tool(description=description)(method)
    return server


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]
]


class ApiKeyGate:
    """ASGI middleware for the HTTP transport: a request without a valid Engram API key is answered
    401 here. Valid keys are remembered (by digest) for a minute so each MCP message costs no extra call."""

    def __init__(self, app: ASGIApp, base_url: str) -> None:
        self.app = app
        self.base_url = base_url
        self._valid: dict[str, float] = {}

    async def _check(self, key: str) -> bool:
        digest = hashlib.sha256(key.encode()).hexdigest()
        if self._valid.get(digest, 0.0) > time.monotonic():
            return True
        try:
            async with AsyncEngramClient(self.base_url, key) as client:
                await client.tenant()
        except AuthenticationError:
            return False
        self._valid[digest] = time.monotonic() + AUTH_CACHE_SECONDS
        return True

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        key = _bearer(headers)
        if key and await self._check(key):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {
                "type": "/problems/authentication-failed",
                "title": "Authentication failed",
                "status": 401,
                "detail": "Send an Engram API key: Authorization: Bearer <key>.",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/problem+json"),
                    (b"www-authenticate", b'Bearer realm="engram"'),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def http_app(base_url: str, *, path: str = "/mcp") -> Any:
    """The streamable HTTP app (Starlette), each request authenticated by its own Engram API key."""
    server = build_server(EngramTools(base_url))
    app = server.streamable_http_app(streamable_http_path=path, stateless_http=True, json_response=True)
    return ApiKeyGate(app, base_url)
