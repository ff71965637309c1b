.PHONY: run test lint bench services stop

# Start Engram on embedded defaults: PostgreSQL+pgvector, Redis, API, admin, worker and beat.
run:
	@scripts/bootstrap.sh
	@.venv/bin/python scripts/run.py

# Set up the same way and run ruff, mypy and the whole test suite.
test:
	@scripts/test.sh

# Only the static checks: ruff (lint and format), the layer rule (import-linter) and mypy.
lint:
	@scripts/bootstrap.sh
	@.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/lint-imports && .venv/bin/mypy .

# The quality benchmarks that need no scale data (each prints a table and writes docs/benchmarks/);
# the latency and scale benchmarks take their own arguments: see the docstring of each bench/*.py.
bench:
	@scripts/bootstrap.sh
	@.venv/bin/python scripts/devenv.py up >/dev/null
	@set -a && . .data/engram.env && set +a && .venv/bin/python bench/locomo.py

services:
	@scripts/bootstrap.sh
	@.venv/bin/python scripts/devenv.py up

stop:
	@.venv/bin/python scripts/devenv.py down
