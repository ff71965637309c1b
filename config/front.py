"""The web process's front: an ASGI application that reads each request whole, on the event loop, before
a thread runs Django for it (WSGI, in a fixed pool of threads).

gunicorn's gthread worker gives a connection a thread as soon as its first byte arrives and reads the
rest from a blocking socket, so a client that sends half its headers, or a body byte every few seconds,
held one of the 4 threads of a worker for as long as it liked: about 8 such clients froze every tenant
(issue 40, item 6). Here a slow client costs a coroutine and a socket, never a thread: gunicorn's
asyncio worker parses the request (config/gunicorn_conf.py, which also bounds the time the headers may
take), this application reads the body within ENGRAM_MAX_BODY_BYTES and ENGRAM_BODY_TIMEOUT_SECONDS,
and only then is a thread taken. Django keeps its WSGI handler: a fixed pool keeps each thread's
database connection (CONN_MAX_AGE) and bounds the queries in flight, as gthread's threads did, where
Django's ASGI handler starts a thread, and so a connection, per request.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from tempfile import SpooledTemporaryFile
from typing import IO, Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Coroutine[Any, Any, None]]
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

PROBLEM = b"application/problem+json"
# What the access line reads from the request's WSGI environ (config/gunicorn_conf.py, config/logs.py).
LOG_KEYS = ("engram.request_id", "engram.tenant_id", "engram.route")
# Bodies above this size wait on disk, not in memory, until a thread reads them.
SPOOL_BYTES = 1024 * 1024


def problem_body(*, status: int, title: str, slug: str, detail: str) -> bytes:
    """The RFC 9457 body api.problems.problem_response writes, for answers given before Django runs."""
    return json.dumps({"type": f"/problems/{slug}", "title": title, "status": status, "detail": detail}).encode()


class _Refused(Exception):
    def __init__(self, status: int, title: str, slug: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.slug, self.detail = status, title, slug, detail


class BufferedFront:
    """ASGI application: read the whole request, then run `wsgi_app` for it in one of `threads` threads."""

    def __init__(
        self, wsgi_app: WsgiApp, *, threads: int, max_body_bytes: int, body_idle_seconds: float, body_seconds: float
    ) -> None:
        self.wsgi_app = wsgi_app
        self.max_body_bytes = max_body_bytes
        self.body_idle_seconds = body_idle_seconds
        self.body_seconds = body_seconds
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="engram-request")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            raise ValueError(f"the front serves HTTP only, not {scope['type']}")
        try:
            body = await self._read_body(scope, receive)
        except _Refused as refused:
            await _send_problem(send, refused)
            return
        loop = asyncio.get_running_loop()
        with body:
            call = _WsgiCall(scope, body, loop, send)
            await loop.run_in_executor(self.executor, call.run, self.wsgi_app)
        if call.buffered is not None:
            await call.send_buffered()

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # Not waiting: a streamed response's thread waits on this very loop to send.
                self.executor.shutdown(wait=False)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _read_body(self, scope: Scope, receive: Receive) -> IO[bytes]:
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _too_large(f"The request body is {int(declared)} bytes; the limit is {self.max_body_bytes}.")
        body: IO[bytes] = SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - returned open
        if (declared is None or declared == "0") and _header(scope, b"transfer-encoding") is None:
            # No body (a GET): served even if the client has gone meanwhile, as a threaded server would.
            return body
        size = 0
        deadline = time.monotonic() + self.body_seconds
        try:
            while True:
                wait = min(self.body_idle_seconds, deadline - time.monotonic())
                try:
                    message = await asyncio.wait_for(receive(), timeout=max(wait, 0.001))
                except TimeoutError:
                    raise _Refused(
                        400,
                        "Malformed request",
                        "malformed-request",
                        "The request body did not arrive in time: each part within "
                        f"{self.body_idle_seconds:g} s, the whole within {self.body_seconds:g} s.",
                    ) from None
                if message["type"] == "http.disconnect":
                    # Nobody reads the answer; it is what the access line records.
                    raise _Refused(
                        400, "Malformed request", "malformed-request", "The connection closed before the body ended."
                    )
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body_bytes:
                    raise _too_large(f"The request body is over the limit of {self.max_body_bytes} bytes.")
                body.write(chunk)
                if not message.get("more_body", False):
                    break
        except BaseException:
            body.close()
            raise
        body.seek(0)
        scope["engram.body_bytes"] = size
        return body


def _too_large(detail: str) -> _Refused:
    return _Refused(413, "Payload too large", "payload-too-large", detail)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1")).strip()
    return None


async def _send_problem(send: Send, refused: _Refused) -> None:
    body = problem_body(status=refused.status, title=refused.title, slug=refused.slug, detail=refused.detail)
    headers = [(b"content-type", PROBLEM), (b"content-length", str(len(body)).encode()), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _WsgiCall:
    """One request through the WSGI application, in a pool thread. A response Django built in memory
    (every API answer) is handed back to the event loop whole; a streamed one (an admin file download)
    is sent chunk by chunk from the thread."""

    def __init__(self, scope: Scope, body: IO[bytes], loop: asyncio.AbstractEventLoop, send: Send) -> None:
        self.scope, self.body, self.loop, self._send = scope, body, loop, send
        self.start: Message | None = None
        self.buffered: list[bytes] | None = None

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        if exc_info is not None and self.start is not None and self.start.get("sent"):
            raise exc_info[1].with_traceback(exc_info[2])
        self.start = {
            "type": "http.response.start",
            "status": int(status.split(" ", 1)[0]),
            "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers],
        }

    def run(self, app: WsgiApp) -> None:
        environ = self.environ()
        result = app(environ, self.start_response)
        try:
            if isinstance(result, list | tuple) or getattr(result, "streaming", None) is False:
                self.buffered = [bytes(chunk) for chunk in result]
                return
            for chunk in result:
                if chunk:
                    self._send_now(chunk, more=True)
            self._send_now(b"", more=False)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()  # Django's request_finished: the thread's database connection is tidied here
            log = {key: environ.get(key) for key in LOG_KEYS}
            if self.start is not None:
                # What the application answered, also when the client had gone and got nothing (gunicorn
                # would record a 500 then).
                log["engram.status"] = self.start["status"]
            self.scope["engram.log"] = log

    def _send_now(self, chunk: bytes, *, more: bool) -> None:
        if self.start is not None and not self.start.get("sent"):
            asyncio.run_coroutine_threadsafe(self._send(_without_flag(self.start)), self.loop).result()
            self.start["sent"] = True
        message = {"type": "http.response.body", "body": chunk, "more_body": more}
        asyncio.run_coroutine_threadsafe(self._send(message), self.loop).result()

    async def send_buffered(self) -> None:
        assert self.start is not None and self.buffered is not None
        await self._send(_without_flag(self.start))
        await self._send({"type": "http.response.body", "body": b"".join(self.buffered)})

    def environ(self) -> dict[str, Any]:
        scope = self.scope
        root = scope.get("root_path", "")
        path = scope["path"]
        if root and path.startswith(root):
            path = path[len(root) :]
        server = scope.get("server") or ("localhost", 80)
        client = scope.get("client")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": scope["method"],
            "SCRIPT_NAME": root.encode("utf-8").decode("latin-1"),
            "PATH_INFO": path.encode("utf-8").decode("latin-1"),
            "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
            "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
            "SERVER_NAME": str(server[0]),
            "SERVER_PORT": str(server[1] if server[1] is not None else 0),
            "REMOTE_ADDR": client[0] if client else "",
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": scope.get("scheme", "http"),
            "wsgi.input": self.body,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": True,
            "wsgi.run_once": False,
            # The body is here whole, whatever its framing: the input ends where the body ends.
            "wsgi.input_terminated": True,
        }
        for raw_name, raw_value in scope.get("headers", ()):
            name = raw_name.decode("latin-1").upper().replace("-", "_")
            key = name if name in ("CONTENT_LENGTH", "CONTENT_TYPE") else f"HTTP_{name}"
            value = raw_value.decode("latin-1")
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        if "engram.body_bytes" in scope and "CONTENT_LENGTH" not in environ:
            # A chunked body, already decoded: Django reads a body by its length.
            environ["CONTENT_LENGTH"] = str(scope["engram.body_bytes"])
        return environ


def _without_flag(start: Message) -> Message:
    return {key: value for key, value in start.items() if key != "sent"}
