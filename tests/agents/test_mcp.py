"""The MCP server, driven by the official SDK's client: in memory, over stdio (manage.py mcp_server as a
subprocess) and over streamable HTTP, each against the live service."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from django.conf import settings
from django.utils import timezone
from engram_client import EngramClient
from engram_client.mcp import EngramTools, build_server
from engram_client.models import EpisodeIn
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pytest_django.live_server_helper import LiveServer

from semantic.models import Fact
from tenants.scope import tenant_scope
from tenants.services import api_key_create
from tests.conftest import TenantContext
from tests.embedders import using_embedder

pytestmark = pytest.mark.live

TOOLS = {
    "remember",
    "recall",
    "search_facts",
    "facts_to_confirm",
    "confirm_fact",
    "correct_fact",
    "forget_subject",
    "record_outcome",
}


def _data(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    return dict(json.loads(result.content[0].text))


async def _walk_every_tool(client: Client) -> None:
    listed = await client.list_tools()
    assert {t.name for t in listed.tools} == TOOLS

    stored = _data(
        await client.call_tool(
            "remember", {"subject": "m1", "session": "mcp-s1", "content": "Our main database is PostgreSQL 16."}
        )
    )
    assert stored["episode_id"] > 0 and stored["session"] == "mcp-s1"

    recalled = _data(await client.call_tool("recall", {"subject": "m1", "query": "which database?", "max_tokens": 800}))
    assert "PostgreSQL 16" in recalled["context"]
    assert recalled["tokens"]["total"] <= 800
    used = [recalled["items"][0]["id"]]
    outcome = _data(
        await client.call_tool(
            "record_outcome", {"trace_id": recalled["trace_id"], "used_item_ids": used, "outcome": "success"}
        )
    )
    assert outcome["feedback"]["used_count"] == 1

    bad = await client.call_tool("record_outcome", {"outcome": "success"})
    assert bad.is_error

    facts = _data(await client.call_tool("search_facts", {"query": "database", "subject": "m1"}))
    assert isinstance(facts["facts"], list)

    # Without a session, the subject's session of the day: the API's rule, not one of MCP's own.
    noted = _data(await client.call_tool("remember", {"subject": "m1", "content": "I like short answers."}))
    assert noted["session"] == f"auto:{timezone.now().date().isoformat()}:m1"

    missing = await client.call_tool("confirm_fact", {"fact_id": "00000000-0000-0000-0000-000000000000"})
    assert missing.is_error and "404" in missing.content[0].text

    erased = _data(await client.call_tool("forget_subject", {"subject": "m1", "reason": "test"}))
    assert erased["erasure_request_id"]


def test_every_tool_in_memory(live_server: LiveServer, ctx_a: TenantContext) -> None:
    async def scenario() -> None:
        tools = EngramTools(live_server.url, ctx_a.raw_key)
        # A fact to confirm, written the way an operator would.
        fact = await tools.client_for(None).facts.upsert(
            subject="m2", entity="m2", attribute="plan", value="Team", statement="m2 is on the Team plan."
        )
        async with Client(build_server(tools)) as client:
            await _walk_every_tool(client)
            confirmed = _data(await client.call_tool("confirm_fact", {"fact_id": fact["fact"]["id"]}))
            assert confirmed["confirmation_count"] >= 1
        await tools.aclose()

    anyio.run(scenario)


def test_record_outcome_marks_used_the_items_the_answer_restates(live_server: LiveServer, ctx_a: TenantContext) -> None:
    async def scenario() -> None:
        tools = EngramTools(live_server.url, ctx_a.raw_key)
        async with Client(build_server(tools)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert "answer" in (listed["record_outcome"].description or "")
            assert "answer" in listed["record_outcome"].input_schema["properties"]
            for content in ("Our main database is PostgreSQL 16.", "We deploy on Kubernetes in Frankfurt."):
                await client.call_tool("remember", {"subject": "m5", "session": "m5-1", "content": content})
            recalled = _data(
                await client.call_tool(
                    "recall", {"subject": "m5", "query": "Which database do we run, and where do we deploy?"}
                )
            )
            assert len(recalled["items"]) >= 2
            database = next(i["id"] for i in recalled["items"] if "PostgreSQL 16" in i["text"])
            outcome = _data(
                await client.call_tool(
                    "record_outcome",
                    {"trace_id": recalled["trace_id"], "answer": "You run PostgreSQL 16.", "outcome": "success"},
                )
            )
            assert outcome["feedback"]["used_item_ids"] == [database]
            assert outcome["feedback"]["used_count"] == 1
        await tools.aclose()

    anyio.run(scenario)


def test_the_verification_loop_lists_confirms_and_corrects(live_server: LiveServer, ctx_a: TenantContext) -> None:
    with EngramClient(live_server.url, ctx_a.raw_key) as api:

        def write(attribute: str, value: str, confidence: float = 0.9) -> str:
            return api.facts.upsert(
                subject="v1", entity="v1", attribute=attribute, value=value,
                statement=f"v1's {attribute} is {value}.", confidence=confidence,
            )["fact"]["id"]  # fmt: skip

        city, email = write("city", "Lyon"), write("email", "v1@example.org")
        plan, pet = write("plan", "Team", 0.2), write("pets", "a cat", 0.3)
    with tenant_scope(ctx_a.tenant):
        Fact.objects.for_tenant(ctx_a.tenant).filter(pk=city).update(
            last_confirmed_at=timezone.now() - timedelta(days=400)
        )
    writer_key = api_key_create(tenant=ctx_a.tenant, name="agent", scopes=("read", "write")).raw

    async def scenario() -> None:
        admin_tools, agent_tools = EngramTools(live_server.url, ctx_a.raw_key), EngramTools(live_server.url, writer_key)
        async with Client(build_server(admin_tools)) as admin, Client(build_server(agent_tools)) as agent:
            listed = {f["id"]: f for f in _data(await agent.call_tool("facts_to_confirm", {"subject": "v1"}))["facts"]}
            assert set(listed) == {city, plan, pet} and email not in listed
            assert listed[city]["why"].startswith("not confirmed since")
            assert listed[plan]["why"].startswith("pending review")

            # The subject moved: the new city supersedes the old one, which stays as history.
            moved = _data(await agent.call_tool("correct_fact", {"fact_id": city, "value": "Paris"}))
            assert (moved["fact"]["value"], moved["fact"]["status"], moved["previous_status"]) == (
                "Paris",
                "active",
                "superseded",
            )
            assert moved["fact"]["statement"] == "v1's city is Paris."
            # Never true: the extracted value is retracted and the right one takes its place.
            wrong = _data(
                await agent.call_tool(
                    "correct_fact",
                    {"fact_id": plan, "value": "Enterprise", "statement": "v1 is on Enterprise.", "was_wrong": True},
                )
            )
            assert (wrong["fact"]["value"], wrong["fact"]["status"], wrong["previous_status"]) == (
                "Enterprise",
                "active",
                "retracted",
            )
            # The subject vouches for a pending fact: confirming it accepts it, without the admin scope.
            accepted = _data(await agent.call_tool("confirm_fact", {"fact_id": pet}))
            assert (accepted["status"], accepted["confirmation_count"]) == ("active", 2)
            again = _data(await admin.call_tool("confirm_fact", {"fact_id": pet}))
            assert (again["status"], again["confirmation_count"]) == ("active", 3)

            left = _data(await agent.call_tool("facts_to_confirm", {"subject": "v1"}))
            assert left["facts"] == []
            missing = await agent.call_tool("correct_fact", {"fact_id": str(uuid.uuid4()), "value": "x"})
            assert missing.is_error and "404" in missing.content[0].text
        await admin_tools.aclose()
        await agent_tools.aclose()

    anyio.run(scenario)


def test_correct_fact_replaces_a_near_value(live_server: LiveServer, ctx_a: TenantContext, onnx_minilm: None) -> None:
    """Issue 30: correcting +44 20 7946 0001 to ...0002 reported success while MiniLM's near-duplicate
    kept the old number active at 0.99. The new value supersedes, and recall serves it, not the old."""
    with EngramClient(live_server.url, ctx_a.raw_key) as api:
        old = api.facts.upsert(
            subject="p1", entity="p1", attribute="phone", value="+44 20 7946 0001",
            statement="p1's phone number is +44 20 7946 0001.", confidence=0.99,
        )["fact"]["id"]  # fmt: skip

    async def scenario() -> None:
        tools = EngramTools(live_server.url, ctx_a.raw_key)
        async with Client(build_server(tools)) as client:
            fixed = _data(await client.call_tool("correct_fact", {"fact_id": old, "value": "+44 20 7946 0002"}))
            assert (fixed["action"], fixed["fact"]["value"], fixed["previous_status"]) == (
                "superseded",
                "+44 20 7946 0002",
                "superseded",
            )
            recalled = _data(await client.call_tool("recall", {"subject": "p1", "query": "What is my phone number?"}))
            assert "+44 20 7946 0002" in recalled["context"] and "7946 0001" not in recalled["context"]
        await tools.aclose()

    anyio.run(scenario)
    with EngramClient(live_server.url, ctx_a.raw_key) as api:
        assert [f["value"] for f in api.facts.list(subject="p1").results] == ["+44 20 7946 0002"]


def _env(live_url: str, key: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENGRAM_API_KEY",)}
    env.update({"ENGRAM_URL": live_url, "DJANGO_SETTINGS_MODULE": "config.settings.test"})
    if key:
        env["ENGRAM_API_KEY"] = key
    return env


def test_every_tool_over_stdio(live_server: LiveServer, ctx_a: TenantContext) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_server", "--url", live_server.url],
        env=_env(live_server.url, ctx_a.raw_key),
        cwd=str(settings.BASE_DIR),
    )

    async def scenario() -> None:
        async with Client(params) as client:
            await _walk_every_tool(client)

    anyio.run(scenario)


def test_stdio_refuses_to_start_with_a_bad_key(live_server: LiveServer) -> None:
    done = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, "manage.py", "mcp_server", "--url", live_server.url, "--api-key", "eng_bad_bad"],
        cwd=settings.BASE_DIR,
        env=_env(live_server.url, None),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "does not work" in done.stderr
    assert done.stdout == ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(live_server: LiveServer) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(  # noqa: S603 (our own manage.py)
        [
            sys.executable,
            "manage.py",
            "mcp_server",
            "--transport",
            "http",
            "--port",
            str(port),
            "--url",
            live_server.url,
        ],
        cwd=Path(settings.BASE_DIR),
        env=_env(live_server.url, None),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_every_tool_over_streamable_http_with_the_key_per_request(http_server: str, ctx_a: TenantContext) -> None:
    async def scenario() -> None:
        anonymous = await httpx2.AsyncClient().post(http_server, json={})
        assert anonymous.status_code == 401
        wrong = await httpx2.AsyncClient(headers={"Authorization": "Bearer eng_nope_nope"}).post(http_server, json={})
        assert wrong.status_code == 401
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ctx_a.raw_key}"}, timeout=30)
        async with Client(streamable_http_client(http_server, http_client=http)) as client:
            await _walk_every_tool(client)

    anyio.run(scenario)


def test_the_http_tools_act_as_the_callers_tenant(http_server: str, ctx_a: TenantContext, ctx_b: TenantContext) -> None:
    async def scenario() -> None:
        a = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ctx_a.raw_key}"}, timeout=30)
        b = httpx2.AsyncClient(headers={"Authorization": f"Bearer {ctx_b.raw_key}"}, timeout=30)
        async with Client(streamable_http_client(http_server, http_client=a)) as client_a:
            await client_a.call_tool("remember", {"subject": "iso", "content": "Tenant A's secret is 4711."})
        async with Client(streamable_http_client(http_server, http_client=b)) as client_b:
            seen = _data(await client_b.call_tool("recall", {"subject": "iso", "query": "secret"}))
            assert "4711" not in seen["context"] and seen["items"] == []

    anyio.run(scenario)


@pytest.fixture
def onnx_minilm() -> Iterator[None]:
    """The production embedder (ONNX MiniLM) in the live server's process, which is this one."""
    with using_embedder(settings, "core.embedding.OnnxMiniLMEmbedder"):
        yield


@pytest.mark.parametrize("before", [0, 200], ids=["alone", "after-200-memories"])
def test_a_remembered_memory_is_recalled_by_meaning_at_once(
    live_server: LiveServer, ctx_a: TenantContext, onnx_minilm: None, before: int
) -> None:
    """The round trip an agent makes first: remember, then recall at once (no beat, no worker), by a
    question that shares no word with the memory; also behind 200 earlier memories of the subject."""
    pairs = [
        ("I prefer answers in Portuguese.", "Which language should replies use?", "Portuguese"),
        ("My daughter starts kindergarten in Porto next September.", "When does the child begin school?", "kindergarten"),
    ]  # fmt: skip

    async def scenario() -> None:
        tools = EngramTools(live_server.url, ctx_a.raw_key)
        async with Client(build_server(tools)) as client:
            # The earlier memories in one request, as the tool files each (it appends one episode, no session).
            notes = [f"Note {i}: the quarterly report needs another review of figure {i}." for i in range(before)]
            if notes:
                items: list[EpisodeIn] = [
                    {"subject": "mcp-user", "role": "user", "kind": "message", "content": n} for n in notes
                ]
                stored = await tools.client_for(None).episodes.append(items)
                assert stored["count"] == before
            for memory, question, needle in pairs:
                await client.call_tool("remember", {"subject": "mcp-user", "content": memory})
                recalled = _data(await client.call_tool("recall", {"subject": "mcp-user", "query": question}))
                assert needle in recalled["context"], recalled
                # Found by its meaning, not only as the subject's latest event: the same request through
                # the API shows the item's score parts, which the tool leaves out.
                context = await tools.client_for(None).context("mcp-user", query=question, max_tokens=2000)
                (item,) = [i for i in context["layers"]["episodic"] if needle in i["text"]]
                assert item["score_parts"].get("vector", 0) > 0.3, item
        await tools.aclose()

    anyio.run(scenario)


def test_the_server_logs_no_request_lines_that_name_a_subject() -> None:
    # httpx logs every request's URL at INFO ("HTTP Request: POST .../v1/subjects/<subject>/erasure"),
    # and an MCP host shows the server's INFO lines: a subject id would outlive its erasure there.
    import logging

    import engram_client.mcp  # noqa: F401 - importing the server is what quiets the transport

    for name in ("httpx", "httpcore"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name


def test_search_facts_shows_a_store_item_not_the_stores_wrapper(live_server: LiveServer, ctx_a: TenantContext) -> None:
    from engram_client.langgraph import EngramStore

    with EngramClient(live_server.url, ctx_a.raw_key) as api:
        EngramStore(api).put(("memories", "m4"), "food", {"text": "m4 likes sushi"})

    async def scenario() -> None:
        tools = EngramTools(live_server.url, ctx_a.raw_key)
        async with Client(build_server(tools)) as client:
            found = _data(await client.call_tool("search_facts", {"query": "sushi", "subject": "m4"}))["facts"]
            assert [f["value"] for f in found if "sushi" in f["statement"]] == ['{"text": "m4 likes sushi"}']
        await tools.aclose()

    anyio.run(scenario)
