"""AsyncEngramClient against the live service: the same operations, awaited."""

from __future__ import annotations

import anyio
import pytest
from engram_client import AsyncEngramClient, BadRequestError, NotFoundError, context_item_ids
from pytest_django.live_server_helper import LiveServer

from tests.conftest import TenantContext

pytestmark = pytest.mark.live


def test_async_client_round_trip(live_server: LiveServer, ctx_a: TenantContext) -> None:
    async def scenario() -> None:
        async with AsyncEngramClient(live_server.url, ctx_a.raw_key) as engram:
            appended = await engram.episodes.append(
                [{"subject": "u9", "session": "as-1", "role": "user", "content": f"async turn {i}"} for i in range(5)]
            )
            assert appended["count"] == 5
            seen = [e["content"] async for e in engram.episodes.iter(session="as-1", order="asc", limit=2)]
            assert seen == [f"async turn {i}" for i in range(5)]
            fact = await engram.facts.upsert(
                subject="u9", entity="u9", attribute="editor", value="neovim", statement="u9 uses neovim."
            )
            assert fact["action"] == "created"
            alias = await engram.aliases.set("nvim", "neovim")
            assert alias["alias"]["entity"] == "neovim"
            assert [a["alias"] async for a in engram.aliases.iter()] == ["nvim"]
            assert (await engram.facts.list(needs_confirmation=True)).results == []
            ctx = await engram.context("u9", query="which editor?", max_tokens=800)
            assert "neovim" in ctx["prompt"] and ctx["tokens"]["total"] <= 800
            feedback = await engram.feedback(ctx["trace_id"], used_item_ids=context_item_ids(ctx)[:1])
            assert feedback["used_count"] == 1
            with pytest.raises(NotFoundError):
                await engram.sessions.get("missing")
            with pytest.raises(BadRequestError) as caught:
                await engram.context("", max_tokens=5)
            assert "/subject" in caught.value.pointers

    anyio.run(scenario)
