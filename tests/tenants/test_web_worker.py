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


def test_a_worker_freezes_what_it_loads_and_collects_young_objects_less_often() -> None:
    # A full collection would otherwise walk the model and the framework on some request's time.
    hooks = _hooks()
    thresholds = gc.get_threshold()
    gc.unfreeze()
    try:
        hooks.post_worker_init(worker=None)
        assert gc.get_freeze_count() > 10_000
        assert gc.get_threshold()[0] > thresholds[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
