#!/usr/bin/env bash
# First start of the database container: pgvector, the application role that row-level security
# binds (no superuser, no BYPASSRLS; web and beat log in as it) and the worker's role (the same, plus
# the switch to the eraser role that migrate grants it). The owner (POSTGRES_USER) runs migrations.
# The password and the database name go in as psql variables, which psql quotes (:'..' a literal,
# :".." an identifier): spliced into the SQL by the shell, a ' in the password broke the statement.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v app_password="$ENGRAM_APP_DB_PASSWORD" -v worker_password="$ENGRAM_WORKER_DB_PASSWORD" \
  -v db="$POSTGRES_DB" <<'SQL'
CREATE EXTENSION IF NOT EXISTS vector;
CREATE ROLE engram_app LOGIN PASSWORD :'app_password' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
GRANT CONNECT ON DATABASE :"db" TO engram_app;
CREATE ROLE engram_worker LOGIN PASSWORD :'worker_password' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
GRANT CONNECT ON DATABASE :"db" TO engram_worker;
SQL
