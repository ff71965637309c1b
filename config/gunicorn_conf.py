"""Gunicorn hooks for the web process: `gunicorn -c config/gunicorn_conf.py config.wsgi` (make run, the
image, the latency benchmark)."""

import gc
from typing import Any

# One access line per request on stdout, where the container's log driver collects it.
accesslog = "-"


def post_worker_init(worker: Any) -> None:
    # Otherwise the first request of each worker pays for what is loaded once and kept, while its
    # client waits: the embedding model (seconds), the URL configuration with every API module it
    # imports (0.5 s) and the tokeniser's tables (0.15 s). A worker takes requests once this returns.
    from django.urls import get_resolver

    from tenants.embedding import embed_one
    from tenants.tokens import encoding

    embed_one("warm up")
    get_resolver().url_patterns  # noqa: B018 - the import of every urls module is the point
    encoding()
    # What is loaded now lives as long as the worker: half a million objects (torch, transformers,
    # Django). A full collection walks them all, 250 ms on a 2-core machine, and lands on whichever
    # request is running (the p99 of the latency benchmark). Frozen, they are left out of collections.
    gc.collect()
    gc.freeze()
    # A context request leaves few cycles but allocates tens of thousands of containers that die young;
    # at the default threshold (700) it triggered about five young collections, 1.5-3 ms in all.
    gc.set_threshold(10_000, 10, 10)


def worker_exit(server: Any, worker: Any) -> None:
    # The helper threads' connections would otherwise be dropped without a goodbye to PostgreSQL.
    from tenants.readers import close_readers

    close_readers()
