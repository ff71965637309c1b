#!/usr/bin/env bash
# First start of the database container: pgvector, and the application role that row-level
# security binds (no superuser, no BYPASSRLS). The owner (POSTGRES_USER) runs migrations.
# The password and the database name go in as psql variables, which psql quotes (:'..' a literal,
# :".." an identifier): spliced into the SQL by the shell, a ' in the password broke the statement.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v app_password="$ENGRAM_APP_DB_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
CREATE EXTENSION IF NOT EXISTS vector;
CREATE ROLE engram_app LOGIN PASSWORD :'app_password' NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
GRANT CONNECT ON DATABASE :"db" TO engram_app;
SQL
