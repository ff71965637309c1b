"""Beat keeps scheduling through a restart of its broker: a private redis-server on a free port, a
schedule firing every second, the server stopped and started again while beat runs. Bounded: about a
minute at worst, every process ours and stopped at the end."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

ROOT = Path(__file__).resolve().parent.parent.parent
QUEUE = "engram-beat-restart-test"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("redis-server") is None, reason="no redis-server")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrivateRedis:
    def __init__(self, port: int, directory: Path) -> None:
        self.port, self.directory = port, directory
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(  # noqa: S603 - the system's redis-server, fixed arguments
            [shutil.which("redis-server") or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no", "--dir", str(self.directory)],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                self.client().ping()
                return
            except redis.ConnectionError:
                time.sleep(0.1)
        raise AssertionError("the private redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(_free_port(), tmp_path)
    server.start()
    yield server
    server.stop()


def _database_url() -> str:
    db = settings.DATABASES["default"]
    user, password = getattr(settings, "ENGRAM_TEST_APP_CREDENTIALS", (db["USER"], db["PASSWORD"]))
    return f"postgres://{user}:{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def _wait_for_queue(server: PrivateRedis, at_least: int, seconds: float, beat: subprocess.Popen[str]) -> int:
    deadline = time.monotonic() + seconds
    length = 0
    while time.monotonic() < deadline:
        assert beat.poll() is None, "beat exited"
        try:
            length = int(server.client().llen(QUEUE))
        except redis.ConnectionError:
            length = 0
        if length >= at_least:
            return length
        time.sleep(0.5)
    return length


def test_beat_resumes_sending_after_its_broker_restarts(
    transactional_db: None, private_redis: PrivateRedis, tmp_path: Path
) -> None:
    every = IntervalSchedule.objects.create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.create(name="beat restart probe", task="celery.accumulate", interval=every, queue=QUEUE)
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_OWNER_URL"} and not k.startswith("PYTEST")}
    # The production-like settings: the test settings run tasks eagerly, which beat would do in place.
    broker = f"redis://127.0.0.1:{private_redis.port}/0"
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.local",
        DATABASE_URL=_database_url(),
        REDIS_URL=broker,
        CELERY_BROKER_URL=broker,
        CELERY_TASK_ALWAYS_EAGER="false",
    )
    log = (tmp_path / "beat.log").open("w+")
    beat = subprocess.Popen(  # noqa: S603 - our own celery, fixed arguments
        [str(ROOT / ".venv" / "bin" / "celery"), "-A", "config", "beat", "--loglevel", "INFO"]
        + ["--max-interval", "1", "--pidfile", ""],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert _wait_for_queue(private_redis, 2, 90, beat) >= 2, _tail(log, "beat did not send before the restart")
        private_redis.stop()
        time.sleep(3)  # ticks come and go while the broker is away
        private_redis.start()  # empty: no persistence
        assert _wait_for_queue(private_redis, 2, 45, beat) >= 2, _tail(log, "beat did not resume after the restart")
        # No tick was given up while the broker was away: a daily run (decay, archiving) that fell in
        # such a gap would otherwise be skipped until the next day.
        log.seek(0)
        assert "Couldn't apply scheduled task" not in log.read(), _tail(log, "beat dropped a tick")
    finally:
        if beat.poll() is None:
            beat.send_signal(signal.SIGTERM)
            try:
                beat.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(beat.pid, signal.SIGKILL)
                beat.wait(timeout=10)


def _tail(log: object, what: str) -> str:
    log.seek(0)  # type: ignore[attr-defined]
    return what + ":\n" + log.read()[-3000:]  # type: ignore[attr-defined]
