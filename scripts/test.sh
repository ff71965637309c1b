#!/usr/bin/env bash
# The test command: set up like the run command, then lint, type-check and run the whole suite
# against the real PostgreSQL with pgvector and the real Redis. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# The browser tests drive Debian's chromium (never a downloaded browser); install it once when we can.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> installing chromium for the browser tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# Stop afterwards what this run started (a PostgreSQL, a private Redis), and only that: a server that
# was already running (make run, make services, another checkout's) is left alone.
started=$(mktemp)
trap '.venv/bin/python scripts/devenv.py down --started-file "$started"; rm -f "$started"' EXIT
.venv/bin/python scripts/devenv.py up --started-file "$started" >/dev/null
set -a; . .data/engram.env; set +a
export DJANGO_SETTINGS_MODULE=config.settings.test
# While mypy holds one core, collect the suite once on the other with bytecode written: each pytest
# worker then reads the project's and the tests' compiled modules instead of compiling them again
# (PYTHONDONTWRITEBYTECODE, set on some machines, would leave every run compiling them).
PYTHONDONTWRITEBYTECODE= .venv/bin/pytest --collect-only -q -p no:xdist >/dev/null 2>&1 &
collecting=$!
echo "==> ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "==> import-linter (the layer rule, docs/architecture.md)"
.venv/bin/lint-imports
echo "==> mypy"
.venv/bin/mypy .
wait "$collecting" || true
echo "==> pytest"
# One worker per core, a test file per worker at a time (module fixtures: the browser, the ONNX engine);
# each worker has its own test database (pytest-django's suffix) and Redis number (config/settings/test.py).
.venv/bin/pytest -n "${ENGRAM_TEST_WORKERS:-auto}" --dist loadfile "$@"
