"""The web worker's start-up hook (config/gunicorn_conf.py)."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

from django.conf import settings


def _hooks():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "gunicorn_conf", Path(settings.BASE_DIR) / "config" / "gunicorn_conf.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_worker_freezes_what_it_loads_before_its_first_request() -> None:
    # A full collection would otherwise walk the model and the framework on some request's time.
    hooks = _hooks()
    gc.unfreeze()
    try:
        hooks.post_worker_init(worker=None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
