"""`EngramClient` (sync) and `AsyncEngramClient` over httpx.

    from engram_client import EngramClient
    with EngramClient("http://127.0.0.1:8000", api_key="eng_...") as engram:
        engram.episodes.append([{"subject": "u1", "session": "s1", "role": "user", "content": "Hi"}])
        ctx = engram.context("u1", query="What database do they use?", max_tokens=2000)

Operations are grouped by resource (`episodes`, `sessions`, `scratchpads`, `facts`, `procedures`,
`traces`, `subjects`); `context`, `feedback`, `stats` and `tenant` sit on the client itself. Each
method's parameters are the API's field names. Lists return a `Page`; `iter_*` methods walk every page.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, Generic, ParamSpec, Self, TypeVar, overload

import anyio
import httpx

from engram_client import _operations as ops
from engram_client._operations import Page
from engram_client._transport import Attempts, Call, RetryPolicy, finish

P = ParamSpec("P")
T = TypeVar("T")
C = TypeVar("C", bound="_Client")

DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
USER_AGENT = "engram-client-python/0.1.0"


def _settings(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    url = base_url or os.environ.get("ENGRAM_URL") or "http://127.0.0.1:8000"
    key = api_key or os.environ.get("ENGRAM_API_KEY")
    if not key:
        raise ValueError("An API key is required: pass api_key= or set ENGRAM_API_KEY.")
    return url.rstrip("/"), key


def _headers(api_key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": USER_AGENT}


# Resources --------------------------------------------------------------------------------------
# One table of operations serves both clients: an attribute is an operation, a call of it one request,
# sent by the sync client as it is and by the async client awaited.


class _Resource(Generic[C]):
    def __init__(self, client: C) -> None:
        self._client = client


def _client_of(obj: Any) -> _Client:
    return obj if isinstance(obj, _Client) else obj._client


class _Op(Generic[P, T]):
    """One operation: a method that sends `builder(...)` through the owning client."""

    def __init__(self, builder: Callable[P, Call[T]]) -> None:
        self.builder = builder
        self.__doc__ = builder.__doc__

    @overload
    def __get__(self, obj: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, obj: _Resource[EngramClient] | EngramClient, owner: Any) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, obj: _Resource[AsyncEngramClient] | AsyncEngramClient, owner: Any
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, obj: Any, owner: Any) -> Any:
        return self if obj is None else _client_of(obj)._bind(self.builder)


class _Pages(Generic[P, T]):
    """An `iter_*` operation: every item of every page, following the cursor."""

    def __init__(self, builder: Callable[P, Call[Page[T]]]) -> None:
        self.builder = builder

    @overload
    def __get__(self, obj: None, owner: Any) -> Self: ...
    @overload
    def __get__(self, obj: _Resource[EngramClient], owner: Any) -> Callable[P, Iterator[T]]: ...
    @overload
    def __get__(self, obj: _Resource[AsyncEngramClient], owner: Any) -> Callable[P, AsyncIterator[T]]: ...
    def __get__(self, obj: Any, owner: Any) -> Any:
        return self if obj is None else _client_of(obj)._walk(self.builder)


class Episodes(_Resource[C]):
    append = _Op(ops.episodes_append)
    list = _Op(ops.episodes_list)
    iter = _Pages(ops.episodes_list)
    search = _Op(ops.episodes_search)


class Sessions(_Resource[C]):
    get = _Op(ops.session_get)
    end = _Op(ops.session_end)


class Scratchpads(_Resource[C]):
    get = _Op(ops.scratchpad_get)
    put = _Op(ops.scratchpad_put)
    patch = _Op(ops.scratchpad_patch)
    delete = _Op(ops.scratchpad_delete)


class Facts(_Resource[C]):
    upsert = _Op(ops.fact_upsert)
    list = _Op(ops.facts_list)
    iter = _Pages(ops.facts_list)
    get = _Op(ops.fact_get)
    edit = _Op(ops.fact_edit)
    retract = _Op(ops.fact_retract)
    confirm = _Op(ops.fact_confirm)
    history = _Op(ops.fact_history)
    review = _Op(ops.fact_review)
    revert_change = _Op(ops.fact_change_revert)
    search = _Op(ops.facts_search)
    graph = _Op(ops.entity_graph)


class Aliases(_Resource[C]):
    """Entity aliases: `list`, `iter`, `set(alias, entity)` (admin scope), `delete(alias_id)`."""

    list = _Op(ops.entity_aliases_list)
    iter = _Pages(ops.entity_aliases_list)
    set = _Op(ops.entity_alias_set)
    delete = _Op(ops.entity_alias_delete)


class Procedures(_Resource[C]):
    list = _Op(ops.procedures_list)
    iter = _Pages(ops.procedures_list)
    create = _Op(ops.procedure_create)
    get = _Op(ops.procedure_get)
    history = _Op(ops.procedure_history)
    update = _Op(ops.procedure_update)
    deprecate = _Op(ops.procedure_deprecate)
    match = _Op(ops.procedures_match)
    record_outcome = _Op(ops.procedure_outcome_record)


class Traces(_Resource[C]):
    list = _Op(ops.traces_list)
    iter = _Pages(ops.traces_list)
    get = _Op(ops.trace_get)


class Subjects(_Resource[C]):
    erase = _Op(ops.subject_erase)
    erasure_status = _Op(ops.erasure_request_get)
    export = _Op(ops.subject_export)


class _Client:
    """What both clients have: the operations on the client itself, and one of each resource."""

    context = _Op(ops.context_get)
    feedback = _Op(ops.context_feedback)
    stats = _Op(ops.stats_get)
    tenant = _Op(ops.tenant_get)

    episodes: Episodes[Self]
    sessions: Sessions[Self]
    scratchpads: Scratchpads[Self]
    facts: Facts[Self]
    aliases: Aliases[Self]
    procedures: Procedures[Self]
    traces: Traces[Self]
    subjects: Subjects[Self]

    def _bind(self, builder: Callable[P, Call[T]]) -> Callable[P, Any]:
        raise NotImplementedError

    def _walk(self, builder: Callable[P, Call[Page[T]]]) -> Callable[P, Any]:
        raise NotImplementedError

    def _setup(self, base_url: str | None, api_key: str | None, retry: RetryPolicy | None) -> dict[str, Any]:
        """Settle the URL, key and retry policy, make the resources, and return the HTTP client's settings."""
        self.base_url, key = _settings(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._resources()
        return {"base_url": self.base_url, "headers": _headers(key)}

    def _resources(self: Self) -> None:
        self.episodes = Episodes(self)
        self.sessions = Sessions(self)
        self.scratchpads = Scratchpads(self)
        self.facts = Facts(self)
        self.aliases = Aliases(self)
        self.procedures = Procedures(self)
        self.traces = Traces(self)
        self.subjects = Subjects(self)


# Sync -----------------------------------------------------------------------------------------


class EngramClient(_Client):
    """A synchronous Engram client. Thread-safe (one httpx connection pool); close it, or use `with`."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._sleep = sleep
        self._http = httpx.Client(**self._setup(base_url, api_key, retry), timeout=timeout, transport=transport)

    def _bind(self, builder: Callable[P, Call[T]]) -> Callable[P, T]:
        def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return self.request(builder(*args, **kwargs))

        method.__doc__ = builder.__doc__
        return method

    def _walk(self, builder: Callable[P, Call[Page[T]]]) -> Callable[P, Iterator[T]]:
        def method(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
            params: dict[str, Any] = dict(kwargs)
            while True:
                page = self.request(builder(*args, **params))
                yield from page.results
                if not page.next_cursor:
                    return
                params["cursor"] = page.next_cursor

        return method

    def request(self, call: Call[T]) -> T:
        """Run one described call with retries; every attempt of a POST carries the same Idempotency-Key."""
        attempts = Attempts(call, self.retry)
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.send(attempts.request(self._http))
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                attempts.failed(exc)
            if attempts.done(response):
                return finish(call, response)
            self._sleep(attempts.wait(response))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# Async ----------------------------------------------------------------------------------------


async def _anyio_sleep(seconds: float) -> None:
    await anyio.sleep(seconds)


class AsyncEngramClient(_Client):
    """The asyncio/trio twin of `EngramClient`: the same resources and methods, awaited."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Callable[[float], Coroutine[Any, Any, None]] = _anyio_sleep,
    ) -> None:
        self._sleep = sleep
        self._http = httpx.AsyncClient(**self._setup(base_url, api_key, retry), timeout=timeout, transport=transport)

    def _bind(self, builder: Callable[P, Call[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> T:
            return await self.request(builder(*args, **kwargs))

        method.__doc__ = builder.__doc__
        return method

    def _walk(self, builder: Callable[P, Call[Page[T]]]) -> Callable[P, AsyncIterator[T]]:
        async def method(*args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
            params: dict[str, Any] = dict(kwargs)
            while True:
                page = await self.request(builder(*args, **params))
                for item in page.results:
                    yield item
                if not page.next_cursor:
                    return
                params["cursor"] = page.next_cursor

        return method

    async def request(self, call: Call[T]) -> T:
        attempts = Attempts(call, self.retry)
        while True:
            response: httpx.Response | None = None
            try:
                response = await self._http.send(attempts.request(self._http))
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                attempts.failed(exc)
            if attempts.done(response):
                return finish(call, response)
            await self._sleep(attempts.wait(response))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
