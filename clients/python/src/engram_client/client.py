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
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

import anyio
import httpx

from engram_client import _operations as ops
from engram_client._operations import Page
from engram_client._transport import Call, RetryPolicy, build_request, finish, idempotency_key_for
from engram_client.errors import TransportError

P = ParamSpec("P")
T = TypeVar("T")

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


# Sync -----------------------------------------------------------------------------------------


class _SyncResource:
    def __init__(self, client: EngramClient) -> None:
        self._client = client


def _sync(builder: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], T]:
    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        client: EngramClient = self if isinstance(self, EngramClient) else self._client
        return client.request(builder(*args, **kwargs))

    method.__doc__ = builder.__doc__
    return method


def _sync_iter(builder: Callable[P, Call[Page[T]]]) -> Callable[Concatenate[Any, P], Iterator[T]]:
    def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        client: EngramClient = self._client
        params: dict[str, Any] = dict(kwargs)
        while True:
            page = client.request(builder(*args, **params))
            yield from page.results
            if not page.next_cursor:
                return
            params["cursor"] = page.next_cursor

    return method


class Episodes(_SyncResource):
    append = _sync(ops.episodes_append)
    list = _sync(ops.episodes_list)
    iter = _sync_iter(ops.episodes_list)
    search = _sync(ops.episodes_search)


class Sessions(_SyncResource):
    get = _sync(ops.session_get)
    end = _sync(ops.session_end)


class Scratchpads(_SyncResource):
    get = _sync(ops.scratchpad_get)
    put = _sync(ops.scratchpad_put)
    patch = _sync(ops.scratchpad_patch)
    delete = _sync(ops.scratchpad_delete)


class Facts(_SyncResource):
    upsert = _sync(ops.fact_upsert)
    list = _sync(ops.facts_list)
    iter = _sync_iter(ops.facts_list)
    get = _sync(ops.fact_get)
    edit = _sync(ops.fact_edit)
    retract = _sync(ops.fact_retract)
    confirm = _sync(ops.fact_confirm)
    history = _sync(ops.fact_history)
    review = _sync(ops.fact_review)
    revert_change = _sync(ops.fact_change_revert)
    search = _sync(ops.facts_search)
    graph = _sync(ops.entity_graph)


class Aliases(_SyncResource):
    """Entity aliases: `list`, `iter`, `set(alias, entity)` (admin scope), `delete(alias_id)`."""

    list = _sync(ops.entity_aliases_list)
    iter = _sync_iter(ops.entity_aliases_list)
    set = _sync(ops.entity_alias_set)
    delete = _sync(ops.entity_alias_delete)


class Procedures(_SyncResource):
    list = _sync(ops.procedures_list)
    iter = _sync_iter(ops.procedures_list)
    create = _sync(ops.procedure_create)
    get = _sync(ops.procedure_get)
    history = _sync(ops.procedure_history)
    update = _sync(ops.procedure_update)
    deprecate = _sync(ops.procedure_deprecate)
    match = _sync(ops.procedures_match)
    record_outcome = _sync(ops.procedure_outcome_record)


class Traces(_SyncResource):
    list = _sync(ops.traces_list)
    iter = _sync_iter(ops.traces_list)
    get = _sync(ops.trace_get)


class Subjects(_SyncResource):
    erase = _sync(ops.subject_erase)
    erasure_status = _sync(ops.erasure_request_get)
    export = _sync(ops.subject_export)


class EngramClient:
    """A synchronous Engram client. Thread-safe (one httpx connection pool); close it, or use `with`."""

    context = _sync(ops.context_get)
    feedback = _sync(ops.context_feedback)
    stats = _sync(ops.stats_get)
    tenant = _sync(ops.tenant_get)

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
        self.base_url, api_key = _settings(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=self.base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self.episodes = Episodes(self)
        self.sessions = Sessions(self)
        self.scratchpads = Scratchpads(self)
        self.facts = Facts(self)
        self.aliases = Aliases(self)
        self.procedures = Procedures(self)
        self.traces = Traces(self)
        self.subjects = Subjects(self)

    def request(self, call: Call[T]) -> T:
        """Run one described call with retries; every attempt of a POST carries the same Idempotency-Key."""
        key = idempotency_key_for(call)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = self._http.send(build_request(self._http, call, key))
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                if not self.retry.should_retry(attempt, None):
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            if response is not None and not self.retry.should_retry(attempt, response):
                return finish(call, response)
            self._sleep(self.retry.wait(attempt, response))
            attempt += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# Async ----------------------------------------------------------------------------------------


class _AsyncResource:
    def __init__(self, client: AsyncEngramClient) -> None:
        self._client = client


def _async(builder: Callable[P, Call[T]]) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, T]]:
    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> T:
        client: AsyncEngramClient = self if isinstance(self, AsyncEngramClient) else self._client
        return await client.request(builder(*args, **kwargs))

    method.__doc__ = builder.__doc__
    return method


def _async_iter(builder: Callable[P, Call[Page[T]]]) -> Callable[Concatenate[Any, P], AsyncIterator[T]]:
    async def method(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        client: AsyncEngramClient = self._client
        params: dict[str, Any] = dict(kwargs)
        while True:
            page = await client.request(builder(*args, **params))
            for item in page.results:
                yield item
            if not page.next_cursor:
                return
            params["cursor"] = page.next_cursor

    return method


class AsyncEpisodes(_AsyncResource):
    append = _async(ops.episodes_append)
    list = _async(ops.episodes_list)
    iter = _async_iter(ops.episodes_list)
    search = _async(ops.episodes_search)


class AsyncSessions(_AsyncResource):
    get = _async(ops.session_get)
    end = _async(ops.session_end)


class AsyncScratchpads(_AsyncResource):
    get = _async(ops.scratchpad_get)
    put = _async(ops.scratchpad_put)
    patch = _async(ops.scratchpad_patch)
    delete = _async(ops.scratchpad_delete)


class AsyncFacts(_AsyncResource):
    upsert = _async(ops.fact_upsert)
    list = _async(ops.facts_list)
    iter = _async_iter(ops.facts_list)
    get = _async(ops.fact_get)
    edit = _async(ops.fact_edit)
    retract = _async(ops.fact_retract)
    confirm = _async(ops.fact_confirm)
    history = _async(ops.fact_history)
    review = _async(ops.fact_review)
    revert_change = _async(ops.fact_change_revert)
    search = _async(ops.facts_search)
    graph = _async(ops.entity_graph)


class AsyncAliases(_AsyncResource):
    list = _async(ops.entity_aliases_list)
    iter = _async_iter(ops.entity_aliases_list)
    set = _async(ops.entity_alias_set)
    delete = _async(ops.entity_alias_delete)


class AsyncProcedures(_AsyncResource):
    list = _async(ops.procedures_list)
    iter = _async_iter(ops.procedures_list)
    create = _async(ops.procedure_create)
    get = _async(ops.procedure_get)
    history = _async(ops.procedure_history)
    update = _async(ops.procedure_update)
    deprecate = _async(ops.procedure_deprecate)
    match = _async(ops.procedures_match)
    record_outcome = _async(ops.procedure_outcome_record)


class AsyncTraces(_AsyncResource):
    list = _async(ops.traces_list)
    iter = _async_iter(ops.traces_list)
    get = _async(ops.trace_get)


class AsyncSubjects(_AsyncResource):
    erase = _async(ops.subject_erase)
    erasure_status = _async(ops.erasure_request_get)
    export = _async(ops.subject_export)


async def _anyio_sleep(seconds: float) -> None:
    await anyio.sleep(seconds)


class AsyncEngramClient:
    """The asyncio/trio twin of `EngramClient`: the same resources and methods, awaited."""

    context = _async(ops.context_get)
    feedback = _async(ops.context_feedback)
    stats = _async(ops.stats_get)
    tenant = _async(ops.tenant_get)

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
        self.base_url, api_key = _settings(base_url, api_key)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            base_url=self.base_url, headers=_headers(api_key), timeout=timeout, transport=transport
        )
        self.episodes = AsyncEpisodes(self)
        self.sessions = AsyncSessions(self)
        self.scratchpads = AsyncScratchpads(self)
        self.facts = AsyncFacts(self)
        self.aliases = AsyncAliases(self)
        self.procedures = AsyncProcedures(self)
        self.traces = AsyncTraces(self)
        self.subjects = AsyncSubjects(self)

    async def request(self, call: Call[T]) -> T:
        key = idempotency_key_for(call)
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = await self._http.send(build_request(self._http, call, key))
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                if not self.retry.should_retry(attempt, None):
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            if response is not None and not self.retry.should_retry(attempt, response):
                return finish(call, response)
            await self._sleep(self.retry.wait(attempt, response))
            attempt += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
