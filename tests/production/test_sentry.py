"""Error reporting starts only with a DSN, and then sends no personal data. Each case runs in its own
process, since Sentry, once started, instruments Django and Celery for the rest of the process; events
go to a recording transport, never to the network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

PROBE = r"""
import json, os, django
import sentry_sdk
from sentry_sdk.transport import Transport

events = []

class Recording(Transport):
    def capture_envelope(self, envelope):
        for item in envelope.items:
            if item.payload.json is not None:
                events.append(item.payload.json)

import config.sentry
real_init = config.sentry.sentry_init
config.sentry.sentry_init = lambda dsn, **kw: real_init(dsn, transport=Recording, **kw)

django.setup()
from django.conf import settings
from django.test import Client

client = sentry_sdk.get_client()
out = {"active": client.is_active(), "dsn": settings.SENTRY_DSN}
if client.is_active():
    out["send_default_pii"] = client.options["send_default_pii"]
    out["max_request_body_size"] = client.options["max_request_body_size"]
    out["integrations"] = sorted(client.integrations)
    try:
        raise RuntimeError("boom for subj-sentry-1")
    except RuntimeError:
        sentry_sdk.capture_exception()
    sentry_sdk.flush()
    out["events"] = events
print("RESULT " + json.dumps(out, default=str))
"""


def _probe(**env: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in {"SENTRY_DSN", "SENTRY_DSN_FILE"}}
    environ.update(DJANGO_SETTINGS_MODULE="config.settings.test", **env)
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", PROBE], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120, check=True
    )
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def test_sentry_is_not_started_without_a_dsn() -> None:
    out = _probe()
    assert out == {"active": False, "dsn": ""}


def test_sentry_starts_with_a_dsn_and_sends_no_personal_data() -> None:
    out = _probe(SENTRY_DSN="http://publickey@127.0.0.1:9/1")
    assert out["active"] is True
    assert out["send_default_pii"] is False
    assert out["max_request_body_size"] == "never"
    assert len(out["events"]) == 1
    event = out["events"][0]
    assert event["exception"]["values"][0]["type"] == "RuntimeError"
    assert "user" not in event or not event["user"].get("ip_address")


def test_sentry_instruments_only_django_and_celery_beside_its_defaults() -> None:
    """No integration of its own choosing: the AI clients' would record the agents' calls, and importing
    them all made every process start seconds later."""
    out = _probe(SENTRY_DSN="http://publickey@127.0.0.1:9/1")
    assert {"django", "celery"} <= set(out["integrations"])
    assert not {"anthropic", "langchain", "langgraph", "huggingface_hub", "redis", "mcp"} & set(out["integrations"])
