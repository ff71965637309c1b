.PHONY: run test lint bench services stop

# Start Engram on embedded defaults: PostgreSQL+pgvector, Redis, API, admin, worker and beat.
run:
	@scripts/bootstrap.sh
	@.venv/bin/python scripts/run.py

# Set up the same way and run ruff, mypy and the whole test suite.
test:
	@scripts/test.sh

services:
	@scripts/bootstrap.sh
	@.venv/bin/python scripts/devenv.py up

stop:
	@.venv/bin/python scripts/devenv.py down
