"""The web front (config/front.py) as an ASGI application, without a server: what it hands Django and
how it sends what Django answers. The live behaviour (slow clients, limits) is in
tests/api/test_pre_application_errors.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from config.front import BufferedFront

SCOPE = {
    "type": "http",
    "http_version": "1.1",
    "method": "POST",
    "scheme": "http",
    "path": "/v1/x",
    "raw_path": b"/v1/x",
}


def _serve(
    app: Callable[..., Any], *, headers: list[tuple[bytes, bytes]], chunks: list[bytes]
) -> list[MutableMapping[str, Any]]:
    front = BufferedFront(app, threads=2, max_body_bytes=100, body_idle_seconds=5, body_seconds=10)
    incoming = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    asyncio.run(front({**SCOPE, "headers": headers, "client": ("127.0.0.1", 5), "server": ("h", 80)}, receive, send))
    front.executor.shutdown(wait=True)
    return sent


def test_a_chunked_body_reaches_django_whole_with_its_length_and_a_streamed_answer_in_order() -> None:
    seen: dict[str, Any] = {}

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        seen["length"] = environ["CONTENT_LENGTH"]
        seen["body"] = environ["wsgi.input"].read()
        seen["terminated"] = environ["wsgi.input_terminated"]
        start_response("200 OK", [("Content-Type", "text/plain")])
        yield b"one,"
        yield b"two"

    sent = _serve(app, headers=[(b"transfer-encoding", b"chunked")], chunks=[b'{"a":', b" 1}"])
    assert seen == {"length": "8", "body": b'{"a": 1}', "terminated": True}
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    assert b"".join(m.get("body", b"") for m in sent[1:]) == b"one,two"
    assert sent[-1]["more_body"] is False


def test_a_body_over_the_limit_is_a_413_problem_and_django_never_runs() -> None:
    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        raise AssertionError("the application ran")

    for headers, chunks in (
        ([(b"content-length", b"101")], [b""]),
        ([(b"transfer-encoding", b"chunked")], [b"x" * 60] * 2),
    ):
        sent = _serve(app, headers=headers, chunks=chunks)
        assert sent[0]["status"] == 413
        assert (b"content-type", b"application/problem+json") in sent[0]["headers"]
        assert json.loads(sent[1]["body"])["status"] == 413
