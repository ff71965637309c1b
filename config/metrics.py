"""Prometheus across forked processes: gunicorn's workers and Celery's pool each count on their own.

With PROMETHEUS_MULTIPROC_DIR set (before prometheus_client is imported), every process writes its
values to its own files in that directory and a collector adds them up when scraped (core.scrape):
the API's /metrics view (core.metrics_access) does so for the web processes (config/gunicorn_conf.py
cleans the directory when the master starts and marks each worker that exits). The Celery worker serves its own
pool's directory on a small HTTP endpoint (ENGRAM_WORKER_METRICS_PORT) from its main process: workers
run on any number of hosts, so their counters cannot meet the web's in one directory; each worker is
a scrape target of its own, reachable on the internal network only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from prometheus_client import Counter, Histogram, multiprocess, start_http_server

from core.scrape import scrape_registry

logger = logging.getLogger(__name__)

TASKS = Counter("engram_celery_tasks_total", "Celery tasks finished, by task and final state", ["task", "state"])
TASK_SECONDS = Histogram(
    "engram_celery_task_seconds",
    "Duration of Celery tasks",
    ["task"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 1800),
)


def multiprocess_dir() -> Path | None:
    value = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    return Path(value) if value else None


def multiprocess_dir_clean(*, keep_pid: int | None = None) -> int:
    """Empty the directory of a previous run's files (all but keep_pid's); returns how many went.

    Counters of a previous run must not be added to this one's, nor gauges of processes long gone."""
    directory = multiprocess_dir()
    if directory is None:
        return 0
    directory.mkdir(parents=True, exist_ok=True)
    removed = 0
    for path in directory.glob("*.db"):
        if keep_pid is not None and path.stem.rsplit("_", 1)[-1] == str(keep_pid):
            continue
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def process_mark_dead(pid: int) -> None:
    """Drop a dead process's live gauges (its counters stay: what it counted happened)."""
    if multiprocess_dir() is not None:
        multiprocess.mark_process_dead(pid)


def worker_metrics_serve() -> int | None:
    """Serve the worker's metrics when ENGRAM_WORKER_METRICS_PORT is set; returns the port."""
    port = int(os.environ.get("ENGRAM_WORKER_METRICS_PORT") or 0)
    if not port:
        return None
    addr = os.environ.get("ENGRAM_WORKER_METRICS_ADDR", "127.0.0.1")
    try:
        start_http_server(port, addr=addr, registry=scrape_registry())
    except OSError as exc:
        # A busy port must not stop the worker from working; the scrape will show the gap.
        logger.warning("worker metrics not served on %s:%s: %s", addr, port, exc)
        return None
    logger.info("worker metrics served on %s:%s", addr, port)
    return port
