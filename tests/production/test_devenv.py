"""The test and run commands stop what they started, and only that. The live case runs a PostgreSQL of
its own on a free port in a temporary directory, never the shared one."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
DEVENV = ROOT / "scripts" / "devenv.py"


def test_the_test_command_stops_what_it_started_whatever_the_outcome() -> None:
    script = (ROOT / "scripts" / "test.sh").read_text()
    trap = next(line for line in script.splitlines() if line.startswith("trap "))
    assert "devenv.py down --started-file" in trap and trap.rstrip().endswith("EXIT")
    up = next(line for line in script.splitlines() if "devenv.py up" in line)
    assert "--started-file" in up
    assert script.index("trap ") < script.index(up), "a failing start-up still stops what it started"


def test_the_run_command_stops_only_what_it_started() -> None:
    script = (ROOT / "scripts" / "run.py").read_text()
    assert "devenv.down(only=devenv.STARTED)" in script
    assert "devenv.redis_down()" not in script


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def private_data() -> Iterator[Path]:
    # The embedded server runs as its own system user when we are root: it must traverse the directory.
    directory = Path(tempfile.mkdtemp(prefix="engram-devenv-", dir="/tmp"))
    directory.chmod(0o755)  # noqa: S103
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.slow
def test_down_stops_a_postgres_this_run_started_and_leaves_a_running_one(private_data: Path) -> None:
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "DATABASE_OWNER_URL", "ENGRAM_WORKER_DATABASE_URL"}
    }
    env.update(
        ENGRAM_DATA_DIR=str(private_data),
        ENGRAM_PG_PORT=str(port),
        ENGRAM_PG_SHARED_BUFFERS="16MB",
        ENGRAM_PG_EFFECTIVE_CACHE="64MB",
        ENGRAM_PG_MAINTENANCE_MEM="16MB",
        ENGRAM_PG_FSYNC="off",
        # An answering Redis is named, so no private one is started here.
        REDIS_URL=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/9"),
    )

    def devenv(*args: str) -> None:
        subprocess.run([sys.executable, str(DEVENV), *args], env=env, check=True, timeout=180, capture_output=True)  # noqa: S603

    first, second = private_data / "first.started", private_data / "second.started"
    try:
        devenv("up", "--started-file", str(first))
        assert _listening(port)
        assert first.read_text().split() == ["postgres"]
        written = dict(line.split("=", 1) for line in (private_data / "engram.env").read_text().split())
        # The worker logs in as a role of its own (the only one that may erase), the web as the application's.
        assert written["DATABASE_URL"].startswith("postgres://engram_app:")
        assert written["ENGRAM_WORKER_DATABASE_URL"].startswith("postgres://engram_worker:")
        import psycopg

        with psycopg.connect(written["ENGRAM_WORKER_DATABASE_URL"]) as conn:
            assert conn.execute("SELECT session_user").fetchone() == ("engram_worker",)

        # A second run finds it running: it started nothing, and stops nothing.
        devenv("up", "--started-file", str(second))
        assert second.read_text().split() == []
        devenv("down", "--started-file", str(second))
        assert _listening(port)

        devenv("down", "--started-file", str(first))
        assert not _listening(port)
        assert not first.exists()
    finally:
        if _listening(port):
            devenv("down")
