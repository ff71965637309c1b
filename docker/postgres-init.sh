#!/usr/bin/env bash
# First start of the database container: pgvector, and the application role that row-level
# security binds (no superuser, no BYPASSRLS). The owner (POSTGRES_USER) runs migrations.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<SQL
CREATE EXTENSION IF NOT EXISTS vector;
CREATE ROLE engram_app LOGIN PASSWORD '${ENGRAM_APP_DB_PASSWORD}' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
GRANT CONNECT ON DATABASE ${POSTGRES_DB} TO engram_app;
SQL
