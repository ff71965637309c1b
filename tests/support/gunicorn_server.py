"""A real gunicorn on a free loopback port, serving the test database with config/gunicorn_conf.py: for
the tests whose behaviour depends on the production server (transfer codings, request limits,
timeouts). The data a test gives it must be committed (transactional_db or live_server)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _database_url() -> str:
    db = settings.DATABASES["default"]
    # The role the tests run as on the test database, never the owner: the worker's, because this
    # server runs Celery tasks eagerly, erasure among them (tests/tenants/test_worker_role.py logs in
    # as the web's application role, which may not erase).
    user, password = getattr(settings, "ENGRAM_TEST_WORKER_CREDENTIALS", (db["USER"], db["PASSWORD"]))
    return f"postgres://{quote(user, safe='')}:{quote(password, safe='')}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


def server_environ(env: dict[str, str] | None = None) -> dict[str, str]:
    """The server's environment: this test worker's database and Redis number. The worker's name
    (PYTEST_XDIST_WORKER) is not passed on, so the Redis number is passed whole: without it the server
    fell back to the first worker's number, which that worker flushes between its tests."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    environ.update(
        DJANGO_SETTINGS_MODULE="config.settings.test",
        DATABASE_URL=_database_url(),
        DATABASE_OWNER_URL="",
        TEST_REDIS_URL=settings.REDIS_URL,
        ENGRAM_WEB_THREADS="2",
    )
    environ.update(env or {})
    return environ


@contextmanager
def gunicorn_server(*args: str, log_path: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start gunicorn with the web front (one worker, two request threads unless `args` and `env` say
    otherwise); yield its base URL."""
    port = free_port()
    environ = server_environ(env)
    with log_path.open("w+") as log:
        proc = subprocess.Popen(  # noqa: S603 - our own binary, fixed arguments
            [str(ROOT / ".venv" / "bin" / "gunicorn"), "config.asgi:application", "-c", "config/gunicorn_conf.py"]
            + ["--bind", f"127.0.0.1:{port}", "--workers", "1", *args],
            cwd=ROOT,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_for(base + "/healthz", proc, 120)
            yield base
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _wait_for(url: str, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("gunicorn exited while starting")
        try:
            with urllib.request.urlopen(url, timeout=5):  # noqa: S310 - a loopback URL of ours
                return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {seconds} s")
