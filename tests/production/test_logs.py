"""Operational logs: one JSON line per request (gunicorn's access log) and per task, with request id,
tenant id and task id on every line, and no content or subject values at INFO."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.conf import settings
from django.test import RequestFactory

from config.logs import ContextFilter, JsonFormatter, RequestContextMiddleware
from tenants.scope import tenant_scope
from tests.conftest import TenantContext

ROOT = Path(__file__).resolve().parent.parent.parent
SUBJECT = "subj-zq7-private"
CONTENT = "the secret content xk3 of an episode"


@pytest.fixture
def json_lines() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """What the production handler would print: the settings' filter and formatter on the root logger."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    finally:
        root.removeHandler(handler)


@pytest.fixture
def gunicorn_conf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    # The file sets the metrics directory when none is set: keep that out of this process.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    path = ROOT / "config" / "gunicorn_conf.py"
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "__config__"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    return namespace


def _access_line(conf: dict[str, Any], response: Any) -> dict[str, Any]:
    from gunicorn.config import Config

    cfg = Config()
    cfg.set("accesslog", "-")
    logger = conf["JsonAccessLogger"](cfg)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.access_log.addHandler(handler)
    resp = SimpleNamespace(status=f"{response.status_code} X", sent=len(response.content))
    try:
        logger.access(resp, None, response.wsgi_request.META, timedelta(milliseconds=12))
    finally:
        logger.access_log.removeHandler(handler)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


def test_settings_log_json_lines_with_the_ids() -> None:
    assert settings.LOGGING["handlers"]["console"]["formatter"] == "json"
    assert settings.LOGGING["handlers"]["console"]["filters"] == ["context"]
    assert "config.logs.RequestContextMiddleware" in settings.MIDDLEWARE


def test_request_id_is_echoed_and_a_bad_one_replaced(api_a: Any) -> None:
    response = api_a.get("/v1/tenant", HTTP_X_REQUEST_ID="trace-42.a")
    assert response.status_code == 200
    assert response["X-Request-ID"] == "trace-42.a"
    for bad in ("has space", "x" * 65, "semi;colon"):
        response = api_a.get("/v1/tenant", HTTP_X_REQUEST_ID=bad)
        assert response["X-Request-ID"] != bad
        assert len(response["X-Request-ID"]) == 32


def test_access_line_names_request_tenant_and_route_never_the_subject(
    ctx_a: TenantContext, gunicorn_conf: dict[str, Any]
) -> None:
    response = ctx_a.client.get(f"/v1/subjects/{SUBJECT}/export", HTTP_X_REQUEST_ID="req-1")
    assert response.status_code == 200
    line = _access_line(gunicorn_conf, response)
    assert line["request_id"] == "req-1"
    assert line["tenant_id"] == str(ctx_a.tenant.id)
    assert line["route"] == "/v1/subjects/<extid:subject>/export"
    assert line["method"] == "GET" and line["status"] == 200 and line["duration_ms"] == 12.0
    assert SUBJECT not in json.dumps(line)

    response = ctx_a.client.get(f"/v1/episodes?subject={SUBJECT}")
    line = _access_line(gunicorn_conf, response)
    assert line["route"] == "/v1/episodes"
    assert SUBJECT not in json.dumps(line)
    assert len(line["request_id"]) == 32


def test_access_line_of_an_unknown_path_and_an_anonymous_caller(
    db: None, anon_api: Any, gunicorn_conf: dict[str, Any]
) -> None:
    response = anon_api.get(f"/v1/nowhere/{SUBJECT}")
    assert response.status_code == 404
    line = _access_line(gunicorn_conf, response)
    assert line["route"] is None and line["tenant_id"] is None and line["status"] == 404
    assert SUBJECT not in json.dumps(line)


def test_every_line_during_a_request_carries_its_ids(ctx_a: TenantContext, json_lines: Any) -> None:
    def view(request: Any) -> Any:
        logging.getLogger("engram.test").info("before the tenant is known")
        with tenant_scope(ctx_a.tenant):
            logging.getLogger("engram.test").info("inside the tenant's scope")
        from django.http import HttpResponse

        return HttpResponse("ok")

    request = RequestFactory().get("/v1/x", HTTP_X_REQUEST_ID="rid-7")
    RequestContextMiddleware(view)(request)
    lines = [line for line in json_lines() if line["logger"] == "engram.test"]
    assert [line["request_id"] for line in lines] == ["rid-7", "rid-7"]
    assert [line["tenant_id"] for line in lines] == [None, str(ctx_a.tenant.id)]
    assert {"time", "level", "message", "task_id"} <= set(lines[0])
    logging.getLogger("engram.test").info("after the request")
    assert json_lines()[-1]["request_id"] is None


def test_one_line_per_task_with_its_task_and_tenant_ids(ctx_a: TenantContext, json_lines: Any) -> None:
    from consolidation.tasks import consolidate_session

    result = consolidate_session.delay(str(ctx_a.tenant.id), 987654321)
    lines = json_lines()
    done = [line for line in lines if line["logger"] == "engram.task"]
    assert len(done) == 1
    assert done[0]["task"] == "consolidation.tasks.consolidate_session"
    assert done[0]["task_id"] == result.id
    assert done[0]["tenant_id"] == str(ctx_a.tenant.id)
    assert done[0]["state"] == "SUCCESS" and done[0]["duration_ms"] >= 0
    # The task's own line (the session is gone) carries the same ids.
    inner = [line for line in lines if line["logger"] == "consolidation.tasks"]
    assert inner and all(line["task_id"] == result.id for line in inner)
    assert all(line["tenant_id"] == str(ctx_a.tenant.id) for line in inner)
    logging.getLogger("engram.test").info("after the task")
    assert json_lines()[-1]["task_id"] is None


def test_a_task_run_inside_another_keeps_the_callers_ids(ctx_a: TenantContext, json_lines: Any) -> None:
    from consolidation.tasks import decay_and_forget

    decay_and_forget.delay()
    done = [line for line in json_lines() if line["logger"] == "engram.task"]
    names = [line["task"] for line in done]
    assert names[-1] == "consolidation.tasks.decay_and_forget"
    assert "consolidation.tasks.decay_and_forget_tenant" in names
    outer = done[-1]
    assert outer["tenant_id"] is None
    assert all(line["task_id"] != outer["task_id"] for line in done[:-1])


def test_no_content_or_subject_at_info_and_no_warning_for_an_expected_404(
    ctx_a: TenantContext, json_lines: Any, caplog: pytest.LogCaptureFixture, django_capture_on_commit_callbacks: Any
) -> None:
    caplog.set_level(logging.INFO)
    with django_capture_on_commit_callbacks(execute=True):
        _flow(ctx_a.client)
    records = [r for r in caplog.records if logging.INFO <= r.levelno < logging.ERROR]
    assert any(r.name == "engram.task" for r in records)  # the flow did run tasks, and logged them
    for record in records:
        text = record.getMessage() + json.dumps(record.__dict__, default=str)
        assert SUBJECT not in text and "xk3" not in text, (record.name, record.getMessage())
    assert not [r for r in records if r.name == "django.request"]
    assert all(SUBJECT not in json.dumps(line) for line in json_lines())


def _flow(api: Any) -> None:
    session = f"s-{uuid.uuid4().hex[:8]}"
    episode = {"subject": SUBJECT, "session": session, "kind": "message", "role": "user", "content": CONTENT}
    assert api.post("/v1/episodes", {"episodes": [episode]}, format="json").status_code == 201
    assert api.get(f"/v1/episodes?subject={SUBJECT}").status_code == 200
    assert (
        api.post("/v1/context", {"subject": SUBJECT, "query": CONTENT, "max_tokens": 500}, format="json").status_code
        == 200
    )
    assert api.post(f"/v1/sessions/{session}/end", {}, format="json").status_code == 200
    assert api.get(f"/v1/subjects/{SUBJECT}/export").status_code == 200
    assert api.get(f"/v1/facts/{uuid.uuid4()}").status_code == 404
    assert api.get(f"/v1/sessions/{SUBJECT}-missing").status_code == 404
    assert api.post(f"/v1/subjects/{SUBJECT}/erasure", {"reason": "asked"}, format="json").status_code == 202


MODEL_PROBE = r"""
import django
django.setup()
from core.embedding import MiniLMEmbedder, OnnxMiniLMEmbedder, embed_one
for embedder in (MiniLMEmbedder(), OnnxMiniLMEmbedder()):
    embedder.embed(["one text", "and another"])
    embedder.embed(["a single query"])
print("PROBE DONE")
"""


@pytest.mark.slow
def test_loading_and_running_the_model_prints_no_library_noise() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", MODEL_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert "PROBE DONE" in done.stdout, done.stderr[-2000:]
    output = done.stdout + done.stderr
    for noise in ("deprecated", "Loading weights", "[transformers]", "Warning"):
        assert noise not in output, output[-3000:]


def test_access_line_at_a_terminal_is_one_readable_line(
    ctx_a: TenantContext, gunicorn_conf: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gunicorn_conf["access_plain"](configured="auto", isatty=True)
    assert not gunicorn_conf["access_plain"](configured="auto", isatty=False)
    assert not gunicorn_conf["access_plain"](configured="json", isatty=True)
    response = ctx_a.client.get(f"/v1/subjects/{SUBJECT}/export", HTTP_X_REQUEST_ID="req-2")
    line = _access_line(gunicorn_conf, response)
    text = gunicorn_conf["access_text"](line)
    assert " GET /v1/subjects/<extid:subject>/export 200 12.0 ms " in text
    assert "request_id=req-2" in text and f"tenant_id={ctx_a.tenant.id}" in text
    assert SUBJECT not in text and "{" not in text.replace("<extid:subject>", "")
