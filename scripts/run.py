"""The run command: services, migrations, first-start set-up, then web, worker and beat together.
Ctrl-C stops all of them (and the embedded PostgreSQL and private Redis this run started)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import devenv  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
BIN = ROOT / ".venv" / "bin"
HOST = os.environ.get("ENGRAM_HOST", "127.0.0.1")
PORT = os.environ.get("ENGRAM_PORT", "8000")


CREDENTIALS = ROOT / ".data" / "credentials.txt"
# Celery's warning when its worker runs as root, as it does in a development container (the image runs
# as uid 1000). A PYTHONWARNINGS message matches the start of the warning's text.
ROOT_WARNING_FILTER = "ignore:You're running the worker with superuser privileges"


def child_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of every process this command starts: records readable at a terminal and JSON
    when redirected to a file (LOG_FORMAT=auto, config.logs), and warnings and errors only, so that a
    task's line every few seconds does not push the addresses off the screen. LOG_FORMAT and LOG_LEVEL
    set by the caller win. The access log still shows each request."""
    env = dict(environ)
    env.setdefault("LOG_FORMAT", "auto")
    env.setdefault("LOG_LEVEL", "WARNING")
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS", ""), ROOT_WARNING_FILTER) if w)
    return env


def credentials_read(path: Path) -> dict[str, str]:
    """bootstrap_local's KEY=VALUE lines; the last value of a key wins."""
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def ready_block(*, base: str, credentials: Mapping[str, str], credentials_path: Path, ready: bool) -> str:
    """What the command prints once web and worker answer: the addresses and how to get in, alone."""
    key = credentials.get("DEMO_API_KEY", f"DEMO_API_KEY in {credentials_path}")
    login = credentials.get("ADMIN_USER", "admin")
    password = credentials.get("ADMIN_PASSWORD", f"ADMIN_PASSWORD in {credentials_path}")
    head = "Engram is running." if ready else "Engram started, but is not ready yet: see the lines above."
    return f"""
{head}
  API          {base}/v1/          Authorization: Bearer {key}
  API docs     {base}/api/docs/
  Admin        {base}/admin/       user {login}, password {password}
  Dashboard    {base}/dashboard/
Credentials are kept in {credentials_path}. Ctrl-C stops everything.
"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - our own local address
            return bool(response.status == 200)
    except OSError:
        return False


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def manage(*args: str) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, check=True, env=child_env(os.environ))


def process_envs(
    base_env: Mapping[str, str], metrics_dirs: Mapping[str, str], worker_port: int
) -> dict[str, dict[str, str]]:
    """The environment of web, worker and beat. None of them holds the owner's login (DATABASE_OWNER_URL:
    only migrate, which this command runs first, needs it) nor reads .data/engram.env, which names it
    (ENGRAM_ENV_FILE empty); they get their addresses from this environment. The worker logs in as its
    own role, the only one that may switch to the eraser role (tenants/dbroles.py); web and beat log
    in as the application role and never see the worker's login."""
    shared = {k: v for k, v in base_env.items() if k not in ("DATABASE_OWNER_URL", "ENGRAM_WORKER_DATABASE_URL")}
    shared["ENGRAM_ENV_FILE"] = ""
    app_env = shared
    worker_db = (
        {"DATABASE_URL": base_env["ENGRAM_WORKER_DATABASE_URL"]} if base_env.get("ENGRAM_WORKER_DATABASE_URL") else {}
    )
    return {
        # One thread per query embedding in the web process: its request threads already share the cores.
        "web": {
            **app_env,
            "ENGRAM_EMBED_THREADS": base_env.get("ENGRAM_WEB_EMBED_THREADS", "1"),
            "PROMETHEUS_MULTIPROC_DIR": metrics_dirs["web"],
        },
        "worker": {
            **shared,
            **worker_db,
            "PROMETHEUS_MULTIPROC_DIR": metrics_dirs["worker"],
            "ENGRAM_WORKER_METRICS_PORT": str(worker_port),
        },
        "beat": app_env,
    }


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    devenv.up()
    manage("migrate", "--no-input", "-v", "0")
    manage("bootstrap_local")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    commands = {
        "web": [
            str(BIN / "gunicorn"),
            # The front: gunicorn's asyncio worker reads each request whole before one of the worker's
            # ENGRAM_WEB_THREADS (4) threads runs Django for it (config/front.py).
            "config.asgi:application",
            "--config",
            "config/gunicorn_conf.py",
            "--bind",
            f"{HOST}:{PORT}",
            "--workers",
            "2",
            "--graceful-timeout",
            "10",
            "--log-level",
            "warning",
        ],
        # --quiet: no banner (the levels come from LOG_LEVEL through config.celery's logging set-up).
        "worker": [
            str(BIN / "celery"),
            "-A",
            "config",
            "--quiet",
            "worker",
            "-Q",
            "celery,consolidation,erasure",
            "--concurrency",
            "2",
        ],
        "beat": [str(BIN / "celery"), "-A", "config", "--quiet", "beat"],
    }
    # Each process family counts into a fresh metrics directory of its own (config/metrics.py); the
    # worker serves its counters on 127.0.0.1:ENGRAM_WORKER_METRICS_PORT.
    metrics_dirs = {name: tempfile.mkdtemp(prefix=f"engram-metrics-{name}-") for name in ("web", "worker")}
    base_env = child_env(os.environ)
    worker_port = int(base_env.get("ENGRAM_WORKER_METRICS_PORT", "9808"))
    env = process_envs(base_env, metrics_dirs, worker_port)
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    for name, cmd in commands.items():
        procs[name] = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env=env[name])
    base = f"http://{HOST}:{PORT}"
    probe_base = f"http://127.0.0.1:{PORT}" if HOST in {"0.0.0.0", "::"} else base  # noqa: S104 - a comparison
    # The addresses come last: once the web answers /readyz and the worker, ready, serves its metrics.
    deadline = time.monotonic() + 180
    ready = False
    while not stopping and time.monotonic() < deadline and all(p.poll() is None for p in procs.values()):
        if _answers(f"{probe_base}/readyz") and _listening(worker_port):
            ready = True
            break
        time.sleep(0.5)
    if not stopping:
        block = ready_block(
            base=base, credentials=credentials_read(CREDENTIALS), credentials_path=CREDENTIALS, ready=ready
        )
        print(block, flush=True)
    code = 0
    while not stopping:
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(f"{name} exited with {proc.returncode}; stopping the others.", flush=True)
                stopping, code = True, 1
        time.sleep(0.5)
    for proc in procs.values():
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.time() + 20
    for proc in procs.values():
        try:
            proc.wait(timeout=max(0.1, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    for directory in metrics_dirs.values():
        shutil.rmtree(directory, ignore_errors=True)
    # Only what this run started: a PostgreSQL or Redis that was already running stays up.
    devenv.down(only=devenv.STARTED)
    print("Engram stopped.", flush=True)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
