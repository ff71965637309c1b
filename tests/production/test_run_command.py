"""The run command's output: readable lines at a terminal and JSON elsewhere, no banner or root warning,
and the addresses with the credentials printed last, alone. The command itself starts the shared
services, so its pieces are tested here, not a live `make run`."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from config.logs import log_format_choose

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def run() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engram_run_script", ROOT / "scripts" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_log_format_is_plain_at_a_terminal_and_json_elsewhere() -> None:
    assert log_format_choose(configured="auto", stream=_Terminal()) == "plain"
    assert log_format_choose(configured="auto", stream=io.StringIO()) == "json"
    assert log_format_choose(configured="json", stream=_Terminal()) == "json"
    assert log_format_choose(configured="plain", stream=io.StringIO()) == "plain"


def test_a_process_started_with_auto_writes_plain_lines_to_a_terminal() -> None:
    main, follower = pty.openpty()
    env = {**os.environ, "LOG_FORMAT": "auto", "DJANGO_SETTINGS_MODULE": "config.settings.local"}
    code = "import logging; logging.getLogger('engram.try').warning('hello %s', 'there')"
    try:
        subprocess.run(  # noqa: S603 (our own manage.py)
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=follower,
            check=True,
            timeout=300,
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # the terminal is closed once everything was read
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(main)
    text = b"".join(chunks).decode()
    line = next(line for line in text.splitlines() if "hello there" in line)
    assert " WARNING engram.try hello there" in line and "{" not in line

    piped = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert '"message": "hello there"' in piped.stderr


def test_children_log_warnings_readably_unless_the_caller_says_otherwise(run: ModuleType) -> None:
    env = run.child_env({"PATH": "/usr/bin"})
    assert (env["LOG_FORMAT"], env["LOG_LEVEL"]) == ("auto", "WARNING")
    assert env["PATH"] == "/usr/bin"
    mine = run.child_env({"LOG_FORMAT": "json", "LOG_LEVEL": "INFO", "PYTHONWARNINGS": "error"})
    assert (mine["LOG_FORMAT"], mine["LOG_LEVEL"]) == ("json", "INFO")
    assert mine["PYTHONWARNINGS"].startswith("error,")


def test_the_workers_superuser_warning_is_silenced_and_others_are_not(run: ModuleType) -> None:
    code = (
        "import warnings\n"
        "from celery.exceptions import SecurityWarning\n"
        "from celery.platforms import ROOT_DISCOURAGED\n"
        "warnings.warn(SecurityWarning(ROOT_DISCOURAGED.format(uid=0, euid=0, gid=0, egid=0)))\n"
        "warnings.warn(SecurityWarning('another warning'))\n"
    )
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)  # noqa: S603
    assert "superuser privileges" in plain.stderr
    env = run.child_env({k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"})
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)  # noqa: S603
    assert "superuser privileges" not in quiet.stderr
    assert "another warning" in quiet.stderr


def test_the_last_block_gives_the_addresses_and_the_credentials(run: ModuleType, tmp_path: Path) -> None:
    creds = tmp_path / "credentials.txt"
    creds.write_text(
        "ADMIN_USER=admin\nADMIN_PASSWORD=old-pw\nDEMO_TENANT=demo\nDEMO_API_KEY=ek_live_1\nADMIN_PASSWORD=pw-2\n"
    )
    block = run.ready_block(
        base="http://127.0.0.1:8000", credentials=run.credentials_read(creds), credentials_path=creds, ready=True
    )
    lines = [line for line in block.splitlines() if line.strip()]
    assert lines[0] == "Engram is running."
    assert "http://127.0.0.1:8000/v1/" in lines[1] and "Bearer ek_live_1" in lines[1]
    assert "http://127.0.0.1:8000/api/docs/" in lines[2]
    assert "http://127.0.0.1:8000/admin/" in lines[3] and "user admin, password pw-2" in lines[3]
    assert "http://127.0.0.1:8000/dashboard/" in lines[4]
    assert str(creds) in lines[5] and "Ctrl-C" in lines[5]
    assert len(lines) == 6 and "{" not in block

    missing = run.ready_block(
        base="http://h:1", credentials=run.credentials_read(tmp_path / "none"), credentials_path=creds, ready=False
    )
    assert "not ready yet" in missing and f"DEMO_API_KEY in {creds}" in missing


def test_only_the_worker_gets_the_workers_database_login(run: ModuleType) -> None:
    """The worker's role may switch to the eraser role (tenants/dbroles.py): the worker logs in as it,
    web and beat as the application role, and neither of them is handed the worker's URL."""
    app = "postgres://engram_app:a@127.0.0.1:54329/engram"
    worker = "postgres://engram_worker:w@127.0.0.1:54329/engram"
    base = {"DATABASE_URL": app, "ENGRAM_WORKER_DATABASE_URL": worker, "PATH": "/usr/bin"}
    envs = run.process_envs(base, {"web": "/tmp/w", "worker": "/tmp/k"}, 9808)
    assert envs["worker"]["DATABASE_URL"] == worker
    for name in ("web", "beat"):
        assert envs[name]["DATABASE_URL"] == app
        assert worker not in envs[name].values(), name


def _settings_of(env: dict[str, str], *names: str) -> dict[str, str]:
    """What a process started with `env` (as the run command starts it) sees: its settings and environ."""
    code = (
        "import json, os; from django.conf import settings; "
        f"print(json.dumps({{n: str(getattr(settings, n, os.environ.get(n, ''))) for n in {list(names)!r}}}))"
    )
    out = subprocess.run(  # noqa: S603 (our own manage.py)
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings.local"},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def test_no_long_running_process_holds_the_owners_login_nor_reads_it_from_the_env_file(
    run: ModuleType, tmp_path: Path
) -> None:
    """Only migrate (run by the command itself) needs the owner; web, worker and beat get the
    application's or the worker's login, and do not read .data/engram.env, which names the owner."""
    owner = "postgres://postgres@127.0.0.1:54329/engram"
    env_file = tmp_path / "engram.env"
    env_file.write_text(f"DATABASE_OWNER_URL={owner}\nENGRAM_WORKER_DATABASE_URL=postgres://engram_worker:w@h/e\n")
    base = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_OWNER_URL", "ENGRAM_WORKER_DATABASE_URL")},
        "DATABASE_URL": "postgres://engram_app:a@127.0.0.1:54329/engram",
        "DATABASE_OWNER_URL": owner,
        "ENGRAM_WORKER_DATABASE_URL": "postgres://engram_worker:w@127.0.0.1:54329/engram",
        "ENGRAM_ENV_FILE": str(env_file),
    }
    dirs = {name: str(tmp_path / name) for name in ("web", "worker")}
    for directory in dirs.values():
        Path(directory).mkdir()
    envs = run.process_envs(base, dirs, 9808)
    for name in ("web", "worker", "beat"):
        assert owner not in envs[name].values(), name
        seen = _settings_of(envs[name], "DATABASE_OWNER_URL", "DEBUG")
        assert seen == {"DATABASE_OWNER_URL": "", "DEBUG": "False"}, name
    web = _settings_of(envs["web"], "ENGRAM_WORKER_DATABASE_URL")
    assert web == {"ENGRAM_WORKER_DATABASE_URL": ""}


def test_debug_pages_are_off_in_the_run_command_unless_asked_for(run: ModuleType) -> None:
    base = {k: v for k, v in os.environ.items() if k != "DJANGO_DEBUG"}
    assert _settings_of(run.child_env(base), "DEBUG") == {"DEBUG": "False"}
    assert _settings_of(run.child_env({**base, "DJANGO_DEBUG": "true"}), "DEBUG") == {"DEBUG": "True"}
