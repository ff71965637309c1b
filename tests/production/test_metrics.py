"""Metrics of forked processes add up: gunicorn's workers write to the multiprocess directory that
/metrics reads, and the Celery worker serves its pool's counters on its own endpoint. Both start a real
server on a free loopback port, bounded in time, and stop it at the end."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parent.parent.parent
BIN = ROOT / ".venv" / "bin"
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stale_file(directory: Path) -> Path:
    stale = directory / "counter_424242.db"
    stale.write_bytes(b"\0" * 8)
    return stale


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings.test", **extra)
    return env


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[str]]]:
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - a loopback URL of ours
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _wait_for(url: str, proc: subprocess.Popen[str], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited while starting"
        try:
            _get(url)
            return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} did not answer within {seconds} s")


def _sum(families: Any, name: str, **labels: str) -> float:
    return sum(
        s.value
        for family in families
        for s in family.samples
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())
    )


def test_gunicorn_workers_count_into_one_cleaned_directory_and_log_json(
    tmp_path: Path, started: list[subprocess.Popen[str]]
) -> None:
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    stale = _stale_file(metrics_dir)
    port = _free_port()
    log = (tmp_path / "web.log").open("w+")
    proc = subprocess.Popen(  # noqa: S603 - our own binaries, fixed arguments
        [str(BIN / "gunicorn"), "config.asgi:application", "-c", "config/gunicorn_conf.py"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "2"],
        cwd=ROOT,
        env=_env(PROMETHEUS_MULTIPROC_DIR=str(metrics_dir)),
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started.append(proc)
    base = f"http://127.0.0.1:{port}"
    _wait_for(base + "/healthz", proc, 120)
    assert not stale.exists(), "the previous run's counters are cleaned when the master starts"

    def total() -> float:
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(metrics_dir))
        return _sum(registry.collect(), "django_http_requests_before_middlewares_total")

    # Polls sent while the workers were still loading are answered later: count from here.
    time.sleep(2)
    before = total()
    for _ in range(30):
        assert _get(base + "/healthz")[0] == 200
    assert total() - before == 30, "every worker's requests are counted, once"
    answered = total()

    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    log.seek(0)
    lines = [json.loads(line) for line in log if line.startswith("{")]
    access = [line for line in lines if line.get("logger") == "gunicorn.access"]
    assert len(access) == answered
    assert {line["route"] for line in access} == {"/healthz"}
    assert all(len(line["request_id"]) == 32 and line["status"] == 200 for line in access)


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_worker_serves_its_pools_counters(tmp_path: Path, started: list[subprocess.Popen[str]]) -> None:
    from config.celery import app

    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    stale = _stale_file(metrics_dir)
    port = _free_port()
    queue = f"engram-test-metrics-{uuid.uuid4().hex[:8]}"
    log = (tmp_path / "worker.log").open("w+")
    proc = subprocess.Popen(  # noqa: S603 - our own binaries, fixed arguments
        [str(BIN / "celery"), "-A", "config", "worker", "--pool", "prefork", "--concurrency", "2", "-Q", queue]
        + ["--loglevel", "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT,
        env=_env(
            PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
            ENGRAM_WORKER_METRICS_PORT=str(port),
            CELERY_BROKER_URL=settings.CELERY_BROKER_URL,
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    started.append(proc)
    url = f"http://127.0.0.1:{port}/metrics"
    _wait_for(url, proc, 120)
    assert not stale.exists(), "the previous run's counters are cleaned when the worker starts"

    sent = [app.send_task("celery.accumulate", args=(i,), queue=queue).id for i in range(6)]
    deadline = time.monotonic() + 60
    done = 0.0
    while time.monotonic() < deadline and done < len(sent):
        # Every scrape answers, a pool process's file being created included (core.scrape).
        status, body = _get(url)
        assert status == 200, body
        families = list(text_string_to_metric_families(body))
        done = _sum(families, "engram_celery_tasks_total", task="celery.accumulate", state="SUCCESS")
        time.sleep(0.5)
    assert done == len(sent), "the pool's processes count into what the worker serves"
    pids = {p.stem.rsplit("_", 1)[-1] for p in metrics_dir.glob("*.db")}
    assert str(proc.pid) in pids and len(pids) >= 2, "the pool's processes write files of their own"

    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    log.seek(0)
    lines = [json.loads(line) for line in log if line.startswith("{")]
    tasks = [line for line in lines if line.get("logger") == "engram.task"]
    assert sorted(line["task_id"] for line in tasks) == sorted(sent)
    assert all(line["state"] == "SUCCESS" for line in tasks)
    assert not [line for line in lines if line.get("logger") == "celery.app.trace"]


def test_the_backlog_gauge_reports_the_latest_value_not_one_per_process() -> None:
    from consolidation.metrics import BACKLOG

    assert BACKLOG._multiprocess_mode == "mostrecent"


def test_gunicorn_removes_the_metrics_directory_it_made_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    # Set, then unset: the undo then removes what the config file puts in this process's environment.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", "placeholder")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    path = ROOT / "config" / "gunicorn_conf.py"
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "__config__"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102
    made = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    assert made.is_dir() and made.name.startswith("engram-metrics-")
    namespace["on_exit"](None)
    assert not made.exists()


def _recorded_file(directory: Path, pid: int) -> None:
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    recorded = MmapedDict(str(directory / f"counter_{pid}.db"))
    key = mmap_key("engram_probe_total", "engram_probe_total", ["where"], ["here"], "")
    recorded.write_value(key, 3.0, 0.0)
    recorded.close()


def test_a_file_not_sized_yet_does_not_fail_the_scrape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: Any, db: Any
) -> None:
    # A process creates its file before it sizes it (prometheus_client issue 1199): a scrape in between met
    # 0 bytes and failed whole, and a process killed then leaves the file so for good.
    from prometheus_client import generate_latest

    from core.scrape import scrape_registry

    _recorded_file(tmp_path, 424243)
    (tmp_path / "counter_424244.db").touch()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    worker = list(text_string_to_metric_families(generate_latest(scrape_registry()).decode()))
    assert _sum(worker, "engram_probe_total", where="here") == 3.0

    response = client.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    web = list(text_string_to_metric_families(response.content.decode()))
    assert _sum(web, "engram_probe_total", where="here") == 3.0
