"""The database roles: the owner that migrates, the application role that row-level security binds
(the web process logs in as it), the worker's role (the Celery worker logs in as it) and the eraser role.

`migrate` runs as DATABASE_OWNER_URL's user when it is set (see the migrate command override); after
every migrate the owner grants the application role what it needs on the tables, and nothing more. The
worker's role (the user of ENGRAM_WORKER_DATABASE_URL) is a member of the application role, and the
only login that may switch to the eraser role: a compromised web process cannot delete episodes.
"""

from __future__ import annotations

import logging
from typing import Any

import environ
from django.conf import settings
from django.db import connections
from django.db.models.signals import post_migrate

logger = logging.getLogger(__name__)


def app_role() -> str:
    return str(environ.Env.db_url_config(_app_url()).get("USER", ""))


def _app_url() -> str:
    return str(environ.Env().str("DATABASE_URL", default="postgres://engram_app:engram_app@127.0.0.1:54329/engram"))


def worker_role() -> str:
    """The worker's login role; migrate reads only its name (compose gives migrate no password of it)."""
    url = environ.Env().str("ENGRAM_WORKER_DATABASE_URL", default="")
    return str(environ.Env.db_url_config(url).get("USER", "")) if url else ""


def owner_credentials() -> dict[str, Any] | None:
    if not settings.DATABASE_OWNER_URL:
        return None
    cfg = environ.Env.db_url_config(settings.DATABASE_OWNER_URL)
    return {"USER": cfg.get("USER", ""), "PASSWORD": cfg.get("PASSWORD", "")}


def switch_connection_user(alias: str, user: str, password: str) -> None:
    conn = connections[alias]
    conn.close()
    conn.settings_dict["USER"] = user
    conn.settings_dict["PASSWORD"] = password


def grant_app_role(using: str = "default", *, truncate: bool = False) -> None:
    role = app_role()
    conn = connections[using]
    # A flush (transactional tests) sends post_migrate too, logged in as a role that grants nothing.
    if not role or conn.settings_dict.get("USER") in (role, worker_role()):
        return
    with conn.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role])
        if cursor.fetchone() is None:
            return
        privileges = "SELECT, INSERT, UPDATE, DELETE" + (", TRUNCATE" if truncate else "")
        cursor.execute(f'GRANT USAGE ON SCHEMA public TO "{role}"')
        cursor.execute(f'GRANT {privileges} ON ALL TABLES IN SCHEMA public TO "{role}"')
        cursor.execute(f'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
        cursor.execute(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO "{role}"')
        _append_only_episodes(cursor, role, privileges)


def eraser_role(role: str | None = None) -> str:
    """The role `episodic.models.allow_episode_deletion()` switches to: the application role's
    privileges plus UPDATE and DELETE of episodes. Only the worker's role may switch to it."""
    return f"{role or app_role()}_eraser"


def create_nologin_role(name: str, *, unable: str) -> str:
    """The statement that creates the role `name` (NOLOGIN, no superuser, no RLS bypass, no inheritance)
    unless it exists. Roles belong to the cluster, not to a database: two databases migrated at once (the
    test suite's workers, two deployments on one server) may both find it missing and both create it,
    and the second then fails on the roles' unique index (unique_violation), not with duplicate_object.
    Without CREATEROLE it says `unable` in a notice instead of failing the migration."""
    return f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{name}') THEN
                CREATE ROLE "{name}" NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT;
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
                  WHEN insufficient_privilege THEN RAISE NOTICE 'cannot create role {name}: {unable}';
        END $$"""  # noqa: S608 (the role name comes from our own settings)


def _append_only_episodes(cursor: Any, role: str, privileges: str) -> None:
    """Episodes are append-only in the database by privilege: the application role may insert them and
    fill in their embedding, nothing more; erasure and archiving, in the worker, switch (SET LOCAL ROLE)
    to the eraser role. A trigger did this before, but Citus refuses triggers on distributed tables, while GRANTs and
    roles it carries to every node. Creating the role needs CREATEROLE; an owner without it leaves the
    guard off (with a notice) rather than failing the migration."""
    eraser = eraser_role(role)
    cursor.execute(create_nologin_role(eraser, unable="episodes stay writable"))
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [eraser])
    if cursor.fetchone() is None:
        return
    cursor.execute(f'GRANT USAGE ON SCHEMA public TO "{eraser}"')
    cursor.execute(f'GRANT {privileges} ON ALL TABLES IN SCHEMA public TO "{eraser}"')
    cursor.execute(f'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO "{eraser}"')
    cursor.execute(f'GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO "{eraser}"')
    # Before issue 31 the application role could switch to it, so a compromised web process could
    # delete episodes. REVOKE of a grant that is not there only warns.
    cursor.execute(f'REVOKE "{eraser}" FROM "{role}"')
    _worker_may_erase(cursor, role, eraser)
    # What is filled in after the row is written: the embedding (the worker's drain) and a passage's stored
    # line (episodic.passages.passage_lines_backfill, for passages written before it was stored), its
    # sentence count, and its sentences' vectors (again after a change of embedder).
    for table, filled_in in (
        ("episodic_episode", "embedding"),
        ("episodic_passage", "embedding, line, line_tokens, index_terms, sentence_count"),
        ("episodic_passagesentence", "embedding"),
    ):
        cursor.execute(f'REVOKE UPDATE, DELETE ON {table} FROM "{role}"')
        cursor.execute(f'GRANT UPDATE ({filled_in}) ON {table} TO "{role}"')


def _worker_may_erase(cursor: Any, role: str, eraser: str) -> None:
    """The worker's role holds the application's privileges (inherited) and may switch to the eraser
    role (SET, not inherited: PostgreSQL 16+), which `allow_episode_deletion()` does for erasure and
    archiving. Without a worker's role nobody may erase, and a warning says so."""
    worker = worker_role()
    cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [worker])
    if not worker or cursor.fetchone() is None:
        logger.warning(
            "no worker database role (ENGRAM_WORKER_DATABASE_URL names %r): erasure and archiving cannot run",
            worker,
        )
        return
    cursor.execute(f'GRANT "{role}" TO "{worker}" WITH INHERIT TRUE, SET FALSE')
    cursor.execute(f'GRANT "{eraser}" TO "{worker}" WITH INHERIT FALSE, SET TRUE')


def _after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    grant_app_role(using, truncate=getattr(settings, "ENGRAM_GRANT_TRUNCATE", False))


def connect_signals() -> None:
    from django.apps import apps

    # post_migrate fires once per app after all migrations ran; granting once, after the last app, is enough.
    post_migrate.connect(_after_migrate, sender=apps.get_app_config("tenants"), dispatch_uid="engram_grant_app_role")
