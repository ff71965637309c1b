"""Reads beside the request (router.helper_threads): the procedures and facts of a context are read on a
helper thread with its own connection. The data here is committed (transactional tests), since a
helper's connection cannot see a test's open transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from episodic.models import Episode
from router.helper_threads import close_readers, read_beside, write_after_commit
from router.models import ContextTrace
from semantic.models import Fact
from tenants.scope import active_tenant_ids, tenant_scope
from tests.router.conftest import believe, remember
from tests.router.test_context_api import HISTORY

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def readers(settings: Any) -> Iterator[int]:
    close_readers()
    settings.ENGRAM = {**settings.ENGRAM, "PARALLEL_READERS": 2}
    yield 2
    close_readers()


def _where() -> tuple[str, frozenset[Any] | None, list[str], bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_id', true)")
        setting = cursor.fetchone()[0]
    # No tenant filter in the query: only row-level security can hide another tenant's facts.
    facts = sorted(Fact.objects.values_list("subject", flat=True))
    return threading.current_thread().name, active_tenant_ids(), [setting, *facts], connection.in_atomic_block


def _read_helpers() -> list[str]:
    from router import helper_threads as module

    return [name for name, _ in module._wrappers.values() if name.startswith("engram-read")]


def test_a_read_beside_runs_on_a_helper_in_the_callers_tenant_scope(tenant_a, tenant_b, readers) -> None:
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog.", subject="alice")
    believe(tenant_b, attribute="pet", value="Rex", statement="Bob has a dog.", subject="bob")
    for tenant, subject in ((tenant_a, "alice"), (tenant_b, "bob"), (tenant_a, "alice")):
        with tenant_scope(tenant):
            name, ids, (setting, *subjects), atomic = read_beside(_where).result(timeout=10)
        assert name.startswith("engram-read")
        assert ids == frozenset({tenant.id}) and setting == str(tenant.id)
        assert subjects == [subject]
        assert atomic


def test_a_read_beside_needs_a_scope_and_hands_back_its_errors(tenant_a, readers) -> None:
    with pytest.raises(RuntimeError, match="tenant scope"):
        read_beside(_where)

    def fails() -> None:
        raise LookupError("from the helper")

    with tenant_scope(tenant_a), pytest.raises(LookupError, match="from the helper"):
        read_beside(fails).result(timeout=10)


def test_close_readers_closes_the_helpers_connections(tenant_a, readers) -> None:
    with tenant_scope(tenant_a):
        futures = [read_beside(_where) for _ in range(6)]
        names = {f.result(timeout=10)[0] for f in futures}
    from router import helper_threads as module

    wrappers = [wrapper for _, wrapper in module._wrappers.values()]
    assert names and len(wrappers) == len(names)
    assert all(w.connection is not None for w in wrappers)
    close_readers()
    assert all(w.connection is None for w in wrappers)
    assert module._wrappers == {}


def test_in_line_when_no_helpers_are_configured(tenant_a, settings: Any) -> None:
    close_readers()
    settings.ENGRAM = {**settings.ENGRAM, "PARALLEL_READERS": 0}
    with tenant_scope(tenant_a):
        name, ids, _, _ = read_beside(_where).result()
    assert name == threading.current_thread().name and ids == frozenset({tenant_a.id})


def test_no_helper_is_used_when_neither_procedures_nor_facts_are_asked_for(tenant_a, api_a, readers) -> None:
    remember(tenant_a, HISTORY)
    response = api_a.post(
        "/v1/context",
        {"subject": "alice", "session": "s-1", "query": "my dog", "layers": ["episodic", "working"]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["layers"]["episodic"]
    assert _read_helpers() == []


def test_a_context_read_beside_equals_the_one_read_in_line(tenant_a, tenant_b, api_a, settings) -> None:
    remember(tenant_a, HISTORY)
    # Without sources: a fact's source line of this session, worth more than the fact, would be served
    # in its place (router.candidates.semantic.settle_facts), and this test is about reading the facts.
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.")
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice works in Lisbon.")
    believe(tenant_b, attribute="pet", value="Rex", statement="Alice has a dog called Rex.", subject="alice")
    remember(tenant_b, ["My dog Rex chews the printer cables"])
    body = {"subject": "alice", "session": "s-1", "query": "what is my dog called and where is the office?"}

    def ask() -> dict[str, Any]:
        response = api_a.post("/v1/context", {**body, "max_tokens": 1500}, format="json")
        assert response.status_code == 200, response.content
        out = response.json()
        # Scores hold the facts' recency, which moves with the clock between two requests.
        return {
            "prompt": out["prompt"],
            "tokens": out["tokens"],
            "layers": {
                layer: [(item["id"], item["text"], item["sources"]) for item in out["layers"][layer]]
                for layer in ("procedural", "semantic", "episodic")
            },
        }

    close_readers()
    settings.ENGRAM = {**settings.ENGRAM, "PARALLEL_READERS": 0}
    in_line = ask()
    settings.ENGRAM = {**settings.ENGRAM, "PARALLEL_READERS": 2}
    try:
        beside = ask()
        assert _read_helpers(), "the facts were not read on a helper"
    finally:
        close_readers()
    assert beside == in_line
    facts = [text for _, text, _ in beside["layers"]["semantic"]]
    assert any("Biscuit" in text for text in facts) and "Rex" not in beside["prompt"]
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).count() == len(HISTORY)


def _record(into: list[tuple[str, frozenset[Any] | None, bool]]) -> None:
    into.append((threading.current_thread().name, active_tenant_ids(), connection.in_atomic_block))


def test_a_write_after_commit_runs_on_the_writer_once_the_transaction_commits(tenant_a, readers) -> None:
    done: list[tuple[str, frozenset[Any] | None, bool]] = []
    with tenant_scope(tenant_a):
        write_after_commit(_record, done)
        assert done == []
    close_readers()  # waits for the writer
    assert done == [(done[0][0], frozenset({tenant_a.id}), True)]
    assert done[0][0].startswith("engram-write")


def test_a_write_after_commit_is_dropped_with_a_rolled_back_transaction(tenant_a, readers) -> None:
    from django.db import transaction

    done: list[Any] = []
    with tenant_scope(tenant_a):
        write_after_commit(_record, done)
        transaction.set_rollback(True)
    close_readers()
    assert done == []
    with pytest.raises(RuntimeError, match="tenant scope"):
        write_after_commit(_record, done)


def test_writes_run_in_line_after_the_commit_when_the_writer_is_behind(tenant_a, readers, monkeypatch) -> None:
    from router import helper_threads as module

    monkeypatch.setattr(module, "MAX_PENDING_WRITES", 0)
    done: list[tuple[str, frozenset[Any] | None, bool]] = []
    with tenant_scope(tenant_a):
        write_after_commit(_record, done)
        assert done == []
    assert done == [(threading.current_thread().name, frozenset({tenant_a.id}), True)]


def _record_commit_setting(into: list[tuple[str, str]]) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        into.append((threading.current_thread().name, cursor.fetchone()[0]))


def test_a_write_after_commit_commits_without_waiting_for_the_disk(tenant_a, readers, monkeypatch) -> None:
    """What is written after commit may be lost (the queue is in memory): on the writer, and in line when
    the writer is behind, its transaction's commit does not wait for the WAL to reach the disk, set with
    the tenant's setting (no statement of its own)."""
    from router import helper_threads as module

    done: list[tuple[str, str]] = []
    with tenant_scope(tenant_a):
        write_after_commit(_record_commit_setting, done)
    close_readers()
    monkeypatch.setattr(module, "MAX_PENDING_WRITES", 0)
    with tenant_scope(tenant_a):
        write_after_commit(_record_commit_setting, done)
    assert [(name.split("_")[0], setting) for name, setting in done] == [
        ("engram-write", "off"),
        (threading.current_thread().name.split("_")[0], "off"),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"


def test_a_contexts_trace_items_are_written_after_the_answer(tenant_a, tenant_b, api_a, readers) -> None:
    remember(tenant_a, HISTORY)
    # A small window, so that some candidates are left out.
    body = {"subject": "alice", "session": "s-1", "query": "my dog", "max_tokens": 100}
    response = api_a.post("/v1/context", body, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    close_readers()  # the writer has written what it held
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.for_tenant(tenant_a).get(id=body["trace_id"])
    shown = [item for layer in ("procedural", "semantic", "episodic") for item in body["layers"][layer]]
    assert trace.offered_ids == [item["id"] for item in shown] + [i["id"] for i in body["layers"]["working"]["items"]]
    assert [item["id"] for item in trace.offered] == trace.offered_ids
    assert {item["id"]: item["text"] for item in trace.offered}.items() >= {i["id"]: i["text"] for i in shown}.items()
    assert trace.considered and all("text" not in item for item in trace.considered)
    with tenant_scope(tenant_b):
        assert not ContextTrace.objects.for_tenant(tenant_b).filter(id=body["trace_id"]).exists()
