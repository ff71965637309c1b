"""An erasure races the writes of its subject (issue 40, item 2): threads append episodes, end sessions,
write scratchpads, facts and contexts of a subject while it is erased. The erasure never fails on them
(they take the subject's slot, shared, and the erasure takes it exclusively: tenants.locks), and its
request never shows a database's text."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from episodic.models import Episode, Session
from privacy import erasure
from privacy.erasure import ERASURE_FAILED
from privacy.models import ErasureRequest
from privacy.services import erasure_request_create
from tenants.scope import tenant_scope
from tests.concurrency.conftest import Hammer, ok

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

SUBJECT = "u-race"
ROUNDS = 5


def _writer(i: int) -> Any:
    def call(client: httpx.Client) -> httpx.Response:
        last = None
        for n in range(ROUNDS):
            items = [{"subject": SUBJECT, "session": "s-race", "role": "user", "content": f"turn {i}.{n}"}]
            last = client.post("/v1/episodes", json={"episodes": items})
            assert last.status_code == 201, last.text
            pad = client.put("/v1/sessions/s-race/scratchpad", json={"step": f"{i}.{n}"})
            assert pad.status_code in (200, 201, 404), pad.text  # 404: the session was just erased
            fact = {"subject": SUBJECT, "entity": SUBJECT, "attribute": f"k{i}", "value": f"v{n}", "statement": "x"}
            assert client.post("/v1/facts", json=fact).status_code in (200, 201)
            assert client.post("/v1/context", json={"subject": SUBJECT, "query": "turn"}).status_code == 200
        assert last is not None
        return last

    return call


def _eraser(client: httpx.Client) -> httpx.Response:
    return client.post(f"/v1/subjects/{SUBJECT}/erasure", json={"reason": "asked"})


def test_an_erasure_beside_writes_of_its_subject_ends_done_and_every_write_is_whole(
    hammer: Hammer, api: httpx.Client
) -> None:
    ok(api.post("/v1/episodes", json={"episodes": [{"subject": SUBJECT, "session": "s-race", "content": "hi"}]}), 201)

    answers = hammer.run([_writer(i) for i in range(4)] + [_eraser])

    request = ok(api.get(f"/v1/erasure-requests/{answers[-1].json()['id']}"))
    assert (request["status"], request["error"]) == ("done", ""), request
    with tenant_scope(hammer.tenant):
        # What remains was written after the erasure, whole: every episode in a session of its own subject.
        remaining = list(Episode.objects.filter(subject=SUBJECT).select_related("session"))
        assert all(e.session.subject == SUBJECT for e in remaining)
        assert Session.objects.filter(subject=SUBJECT).exists() == bool(remaining)


def test_a_failed_erasure_records_a_generic_error_and_logs_the_detail(
    tenant_a: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(plan: Any) -> int:
        raise RuntimeError('insert or update on table "episodic_episode" violates foreign key constraint')

    failing = erasure.Location("sessions", "episodic.Session", "", erase_fn=broken)
    monkeypatch.setattr(erasure, "LOCATIONS", [failing if loc.name == "sessions" else loc for loc in erasure.LOCATIONS])
    monkeypatch.setattr("privacy.tasks.execute_erasure.delay", lambda *args: None)
    request = erasure_request_create(tenant=tenant_a, subject=SUBJECT)

    with pytest.raises(RuntimeError):
        erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk))

    with tenant_scope(tenant_a):
        stored = ErasureRequest.objects.get(pk=request.pk)
    assert (stored.status, stored.error) == ("failed", ERASURE_FAILED)
    assert "foreign key" in caplog.text
