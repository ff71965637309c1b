"""Gunicorn hooks for the web process: `gunicorn -c config/gunicorn_conf.py config.wsgi` (make run, the
image, the latency benchmark)."""

from typing import Any


def post_worker_init(worker: Any) -> None:
    # Otherwise the first context request of each worker loads the embedding model (seconds) while its
    # client waits; a worker takes requests once this returns.
    from tenants.embedding import embed_one

    embed_one("warm up")


def worker_exit(server: Any, worker: Any) -> None:
    # The helper threads' connections would otherwise be dropped without a goodbye to PostgreSQL.
    from tenants.readers import close_readers

    close_readers()
