"""A task whose worker process dies mid-run is not lost: a real Celery worker (prefork) against the real
Redis broker re-delivers it, because tasks are acknowledged late and rejected when their worker is lost."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

from config.celery import app

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
def test_a_task_whose_worker_process_dies_runs_again_to_completion(tmp_path: Path) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "CELERY_TASK_ALWAYS_EAGER": "false"}
    queue = f"worker-loss-{os.getpid()}"
    worker = subprocess.Popen(  # noqa: S603 - our own interpreter and arguments
        [
            sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "prefork", "--concurrency", "1",
            "--queues", queue, "--include", "tests.support.worker_tasks", "--without-heartbeat",
            "--without-gossip", "--without-mingle", "--loglevel", "WARNING",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        app.send_task("tests.die_once", args=[str(tmp_path)], queue=queue)
        deadline = time.monotonic() + 90
        while not (tmp_path / "done").exists() and time.monotonic() < deadline and worker.poll() is None:
            time.sleep(0.2)
        attempts = (tmp_path / "attempts").read_text() if (tmp_path / "attempts").exists() else ""
        assert (tmp_path / "done").exists(), f"the task was lost after {len(attempts)} attempt(s)"
        assert len(attempts) == 2
        assert settings.CELERY_TASK_ACKS_LATE and settings.CELERY_TASK_REJECT_ON_WORKER_LOST
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()
