"""Serve Engram's memory tools over MCP (see clients/python/src/engram_client/mcp.py).

manage.py mcp_server --api-key eng_...                       # stdio, for a desktop or IDE client
manage.py mcp_server --transport http --port 8765            # streamable HTTP at /mcp; each
                                                             # request sends Authorization: Bearer
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser
from engram_client import EngramError
from engram_client.mcp import EngramTools, build_server, http_app

if TYPE_CHECKING:
    from engram_client.mcp import EngramTools


class Command(BaseCommand):
    help = "Serve Engram's memory tools (remember, recall, search_facts, ...) to MCP clients over stdio or HTTP."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
        parser.add_argument(
            "--url",
            default=os.environ.get("ENGRAM_URL", "http://127.0.0.1:8000"),
            help="The Engram API the tools call (default: $ENGRAM_URL or http://127.0.0.1:8000)",
        )
        parser.add_argument(
            "--api-key",
            default=os.environ.get("ENGRAM_API_KEY"),
            help="stdio only: the Engram API key the tools act with (default: $ENGRAM_API_KEY)",
        )
        parser.add_argument("--host", default="127.0.0.1", help="http only")
        parser.add_argument("--port", type=int, default=8765, help="http only")

    def handle(self, *args: Any, **options: Any) -> None:

        url = options["url"].rstrip("/")
        if options["transport"] == "http":
            import uvicorn

            self.stderr.write(f"Engram MCP server on http://{options['host']}:{options['port']}/mcp -> {url}")
            uvicorn.run(http_app(url), host=options["host"], port=options["port"], log_level="warning")
            return
        key = options["api_key"]
        if not key:
            raise CommandError("stdio needs an API key: --api-key or ENGRAM_API_KEY.")
        tools = EngramTools(url, key)
        anyio.run(self._check_key, tools)
        # stdout is the protocol channel from here on: nothing else may be written to it.
        build_server(tools).run("stdio")

    async def _check_key(self, tools: EngramTools) -> None:

        try:
            tenant = await tools.client_for(None).tenant()
        except EngramError as exc:
            raise CommandError(f"The API key does not work against {tools.base_url}: {exc}") from exc
        finally:
            # The serving loop is another event loop: do not carry this one's connections into it.
            await tools.aclose()
        self.stderr.write(f"Engram MCP server (stdio) for tenant {tenant['slug']} -> {tools.base_url}")
