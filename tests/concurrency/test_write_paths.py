"""Episodes, working memory, sessions, procedures, feedback and erasure from eight threads at once: no
5xx, no lost or doubled write, a final state some serial order of the successful requests gives."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from django.db import connection, transaction

from episodic.models import Episode
from privacy.models import ErasureRequest
from procedural.models import Procedure
from semantic.models import Fact
from tenants.locks import tenant_xact_lock
from tenants.scope import tenant_scope
from tests.concurrency.conftest import THREADS, Hammer, ok, statuses

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _session(api: httpx.Client, session: str) -> None:
    ok(api.post("/v1/episodes", json={"episodes": [{"subject": "u1", "session": session, "content": "hi"}]}), 201)


def test_one_batch_sent_from_eight_threads_with_one_key_is_stored_once(hammer: Hammer) -> None:
    body = {
        "episodes": [{"subject": "u1", "session": "s-idem", "role": "user", "content": f"turn {i}"} for i in range(3)]
    }
    answers = hammer.same(lambda c: c.post("/v1/episodes", json=body, headers={"Idempotency-Key": "batch-1"}))
    assert set(statuses(answers)) <= {201, 409} and 201 in statuses(answers)
    assert len({str([e["id"] for e in a.json()["episodes"]]) for a in answers if a.status_code == 201}) == 1
    with tenant_scope(hammer.tenant):
        assert Episode.objects.filter(session__external_id="s-idem").count() == 3


def test_eight_writers_with_one_if_match_version_one_wins(hammer: Hammer, api: httpx.Client) -> None:
    _session(api, "s-pad")
    version = ok(api.put("/v1/sessions/s-pad/scratchpad", json={"goal": "start"}))["version"]

    def call(i: int) -> Any:
        return lambda c: c.put(
            "/v1/sessions/s-pad/scratchpad", json={"goal": f"g{i}"}, headers={"If-Match": f'"{version}"'}
        )

    answers = hammer.run([call(i) for i in range(THREADS)])
    assert statuses(answers) == [200] + [412] * (THREADS - 1)
    winner = next(a for a in answers if a.status_code == 200).json()
    pad = ok(api.get("/v1/sessions/s-pad/scratchpad"))
    assert (pad["version"], pad["document"]) == (version + 1, winner["document"])


def test_eight_merge_patches_at_once_all_land(hammer: Hammer, api: httpx.Client) -> None:
    _session(api, "s-patch")
    version = ok(api.put("/v1/sessions/s-patch/scratchpad", json={}))["version"]

    def call(i: int) -> Any:
        return lambda c: c.patch("/v1/sessions/s-patch/scratchpad", json={f"k{i}": i})

    assert statuses(hammer.run([call(i) for i in range(THREADS)])) == [200] * THREADS
    pad = ok(api.get("/v1/sessions/s-patch/scratchpad"))
    assert pad["document"] == {f"k{i}": i for i in range(THREADS)} and pad["version"] == version + THREADS


def test_a_merge_patch_waits_its_turn_instead_of_racing(hammer: Hammer, api: httpx.Client) -> None:
    # Racing patches each retried on the version another had just written and, under load, ran out of
    # tries: a 412 that no If-Match asked for (CI under load, 7 December). A patch now takes its
    # scratchpad's turn: while another transaction holds it, the patch waits, then lands.
    _session(api, "s-turn")
    ok(api.put("/v1/sessions/s-turn/scratchpad", json={"a": 1}))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with tenant_scope(hammer.tenant), transaction.atomic():
                tenant_xact_lock(hammer.tenant.id, "scratchpad", "s-turn")
                held.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(timeout=30)
        with ThreadPoolExecutor(1) as pool:
            patch = pool.submit(lambda: api.patch("/v1/sessions/s-turn/scratchpad", json={"b": 2}))
            waited = _waits_on_a_lock(within=10.0) and not patch.done()
            release.set()
            answer = patch.result(timeout=30)
    finally:
        release.set()
        holder.join(timeout=30)
    assert waited
    assert ok(answer)["document"] == {"a": 1, "b": 2}


def _waits_on_a_lock(*, within: float) -> bool:
    """Some backend waits for a lock another transaction holds (pg_locks), within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                return True
        time.sleep(0.05)
    return False


def test_eight_outcomes_at_once_are_each_counted(hammer: Hammer, api: httpx.Client) -> None:
    body = {"name": "greet", "trigger": {"keywords": ["hello"]}, "behaviour": "Greet.", "status": "active"}
    procedure = ok(api.post("/v1/procedures", json=body), 201)
    answers = hammer.same(
        lambda c: c.post(f"/v1/procedures/{procedure['id']}/outcomes", json={"applied": True, "success": True})
    )
    assert statuses(answers) == [201] * THREADS
    with tenant_scope(hammer.tenant):
        stored = Procedure.objects.get(pk=procedure["id"])
    assert (stored.applications, stored.successes) == (THREADS, THREADS)


def test_eight_feedbacks_on_one_context_are_recorded_once(hammer: Hammer, api: httpx.Client) -> None:
    context = ok(api.post("/v1/context", json={"subject": "u1", "session": "s-ctx", "query": "what do I like?"}))
    answers = hammer.same(
        lambda c: c.post(f"/v1/context/{context['trace_id']}/feedback", json={"asked_to_repeat": True})
    )
    assert len([a for a in answers if a.status_code in (200, 201)]) == 1
    assert all(a.status_code in (200, 201, 409) for a in answers)


def test_eight_erasure_requests_for_one_subject_run_one_erasure_and_spare_the_rest(
    hammer: Hammer, api: httpx.Client
) -> None:
    keep = ok(
        api.post(
            "/v1/facts", json={"entity": "the office", "attribute": "wifi", "value": "on", "statement": "Wifi is on."}
        )
    )
    ok(
        api.post(
            "/v1/facts",
            json={"subject": "dup-x", "entity": "dup-x", "attribute": "city", "value": "Porto", "statement": "Porto."},
        )
    )
    answers = hammer.same(lambda c: c.post("/v1/subjects/dup-x/erasure", json={}))
    assert statuses(answers) == [202] * THREADS
    with tenant_scope(hammer.tenant):
        requests = list(ErasureRequest.objects.values_list("status", flat=True))
        assert Fact.objects.filter(subject="dup-x").count() == 0
    assert requests == ["done"], requests
    assert api.get(f"/v1/facts/{keep['fact']['id']}").status_code == 200


def test_eight_ends_of_one_session_consolidate_it_without_doubling_a_fact(hammer: Hammer, api: httpx.Client) -> None:
    turns = [
        {"subject": "u2", "session": "s-end", "role": "user", "content": "I live in Porto."},
        {"subject": "u2", "session": "s-end", "role": "user", "content": "My favourite colour is green."},
    ]
    ok(api.post("/v1/episodes", json={"episodes": turns}), 201)
    answers = hammer.same(lambda c: c.post("/v1/sessions/s-end/end", json={"outcome": "success"}))
    assert all(a.status_code in (200, 409) for a in answers) and 200 in statuses(answers)
    with tenant_scope(hammer.tenant):
        live = list(Fact.objects.filter(subject="u2", status="active").values_list("entity", "attribute", "value_key"))
    assert len(live) == len(set(live))
