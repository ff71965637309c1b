"""The run command: services, migrations, first-start set-up, then web, worker and beat together.
Ctrl-C stops all of them (and the embedded PostgreSQL and private Redis this run started)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import devenv  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
BIN = ROOT / ".venv" / "bin"
HOST = os.environ.get("ENGRAM_HOST", "127.0.0.1")
PORT = os.environ.get("ENGRAM_PORT", "8000")


def manage(*args: str) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, check=True)


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    devenv.up()
    manage("migrate", "--no-input", "-v", "0")
    manage("bootstrap_local")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    commands = {
        "web": [
            str(BIN / "gunicorn"),
            "config.wsgi:application",
            "--config",
            "config/gunicorn_conf.py",
            "--bind",
            f"{HOST}:{PORT}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--graceful-timeout",
            "10",
        ],
        "worker": [
            str(BIN / "celery"),
            "-A",
            "config",
            "worker",
            "-Q",
            "celery,consolidation,erasure",
            "--loglevel",
            "INFO",
            "--concurrency",
            "2",
        ],
        "beat": [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO"],
    }
    # Each process family counts into a fresh metrics directory of its own (config/metrics.py); the
    # worker serves its counters on 127.0.0.1:ENGRAM_WORKER_METRICS_PORT.
    metrics_dirs = {name: tempfile.mkdtemp(prefix=f"engram-metrics-{name}-") for name in ("web", "worker")}
    env = {
        # One thread per query embedding in the web process: its request threads already share the cores.
        "web": {
            **os.environ,
            "ENGRAM_EMBED_THREADS": os.environ.get("ENGRAM_WEB_EMBED_THREADS", "1"),
            "PROMETHEUS_MULTIPROC_DIR": metrics_dirs["web"],
        },
        "worker": {
            **os.environ,
            "PROMETHEUS_MULTIPROC_DIR": metrics_dirs["worker"],
            "ENGRAM_WORKER_METRICS_PORT": os.environ.get("ENGRAM_WORKER_METRICS_PORT", "9808"),
        },
    }
    for name, cmd in commands.items():
        procs[name] = subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env=env.get(name))
    base = f"http://{HOST}:{PORT}"
    print(
        f"""
Engram is running.
  API          {base}/v1/          (Authorization: Bearer $DEMO_API_KEY)
  API docs     {base}/api/docs/
  Admin        {base}/admin/        (user admin)
  Health       {base}/readyz
  Credentials  {ROOT / ".data" / "credentials.txt"}
Try:  curl -H "Authorization: Bearer $(grep DEMO_API_KEY .data/credentials.txt | cut -d= -f2)" {base}/v1/tenant
Ctrl-C stops everything.
""",
        flush=True,
    )
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
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
