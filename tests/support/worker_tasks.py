"""Tasks that only the worker-loss test sends to a real worker (`celery worker --include` loads them)."""

from __future__ import annotations

import os
from pathlib import Path

from celery import shared_task


@shared_task(name="tests.die_once")
def die_once(workdir: str) -> str:
    """The first run kills its worker process outright, as an OOM kill would; a rerun finishes."""
    attempts = Path(workdir) / "attempts"
    with attempts.open("a") as fh:
        fh.write("x")
    if len(attempts.read_text()) == 1:
        os._exit(137)
    (Path(workdir) / "done").write_text("done")
    return "done"
