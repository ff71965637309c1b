"""Issue 31, item 12: only the worker's login may switch to the eraser role.

The web process logs in as the application role (DATABASE_URL), which is no member of the eraser role:
a compromised web process can neither delete episodes nor switch to the role that may. The Celery
worker logs in as a role of its own (ENGRAM_WORKER_DATABASE_URL): the application's privileges, and
the switch to the eraser role inside `episodic.models.allow_episode_deletion()`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from psycopg import errors

from privacy import tasks
from tenants.dbroles import eraser_role, switch_connection_user
from tests.conftest import TenantContext

SUBJECT = "w.subject"


def _login(user: str, password: str) -> psycopg.Connection[Any]:
    db = connection.settings_dict
    return psycopg.connect(
        host=db["HOST"], port=db["PORT"], dbname=db["NAME"], user=user, password=password, autocommit=True
    )


@pytest.mark.django_db
def test_the_application_role_can_neither_switch_to_the_eraser_role_nor_delete_episodes() -> None:
    app_user, app_password = settings.ENGRAM_TEST_APP_CREDENTIALS
    eraser = eraser_role(app_user)
    with _login(app_user, app_password) as conn:
        assert conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [eraser]).fetchone(), "no eraser role"
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute(f'SET ROLE "{eraser}"')
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("DELETE FROM episodic_episode")
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("UPDATE episodic_episode SET content = ''")


@pytest.mark.django_db
def test_only_the_workers_login_may_switch_to_the_eraser_role() -> None:
    app_user, _ = settings.ENGRAM_TEST_APP_CREDENTIALS
    worker_user, worker_password = settings.ENGRAM_TEST_WORKER_CREDENTIALS
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT u.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid"
            " JOIN pg_roles u ON u.oid = m.member WHERE r.rolname = %s AND m.set_option",
            [eraser_role(app_user)],
        )
        assert [row[0] for row in cursor.fetchall()] == [worker_user]
    with _login(worker_user, worker_password) as conn:
        # The application's privileges, not the eraser's, until it switches.
        assert conn.execute("SELECT count(*) FROM episodic_episode").fetchone() is not None
        with pytest.raises(errors.InsufficientPrivilege):
            conn.execute("DELETE FROM episodic_episode")
        with conn.transaction():
            conn.execute(f'SET LOCAL ROLE "{eraser_role(app_user)}"')
            conn.execute("DELETE FROM episodic_episode WHERE false")


@pytest.fixture
def as_login() -> Iterator[Any]:
    """Switches the default connection's login, as the web and the worker processes each log in; the
    suite's own login comes back at the end. Only for transactional tests (the switch reconnects)."""
    suite = (connection.settings_dict["USER"], connection.settings_dict["PASSWORD"])
    yield lambda creds: switch_connection_user("default", *creds)
    switch_connection_user("default", *suite)


@pytest.mark.django_db(transaction=True)
def test_erasure_requested_through_the_web_runs_only_as_the_worker(
    ctx_a: TenantContext, as_login: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queued: list[tuple[Any, ...]] = []
    monkeypatch.setattr(tasks.execute_erasure, "delay", lambda *args: queued.append(args))
    api = ctx_a.client

    as_login(settings.ENGRAM_TEST_APP_CREDENTIALS)  # the web process
    episode = {"session": "w-s1", "subject": SUBJECT, "content": "My phone is 912 345 678."}
    assert api.post("/v1/episodes", {"episodes": [episode]}, format="json").status_code == 201
    accepted = api.post(f"/v1/subjects/{SUBJECT}/erasure", {"reason": "asked"}, format="json")
    assert accepted.status_code == 202, accepted.content
    request_id = accepted.json()["id"]
    assert len(queued) == 1

    as_login(settings.ENGRAM_TEST_WORKER_CREDENTIALS)  # the worker takes the task from the queue
    with connection.cursor() as cursor:
        cursor.execute("SELECT session_user")
        assert cursor.fetchone()[0] == settings.ENGRAM_TEST_WORKER_CREDENTIALS[0]
    tasks.execute_erasure(*queued[0])

    as_login(settings.ENGRAM_TEST_APP_CREDENTIALS)
    detail = api.get(f"/v1/erasure-requests/{request_id}").json()
    assert detail["status"] == "done", detail
    assert detail["counts"]["episodes"] == 1
    exported = api.get(f"/v1/subjects/{SUBJECT}/export").json()["locations"]
    assert all(rows == [] for rows in exported.values()), exported


@pytest.mark.django_db(transaction=True)
def test_two_migrations_creating_the_eraser_role_at_once_both_succeed() -> None:
    """Roles belong to the cluster: two databases migrated at once (the suite's workers on a fresh server)
    both find the role missing and both create it; the second waits on the first's uncommitted row and
    then fails on the roles' unique index unless the statement expects that."""
    import threading
    import uuid

    from tenants.dbroles import create_nologin_role

    owner = _owner_params(settings.DATABASE_OWNER_URL)
    role = f"engram_race_{uuid.uuid4().hex[:8]}"
    statement = create_nologin_role(role, unable="test")
    errors_seen: list[BaseException] = []
    first = psycopg.connect(**owner)
    try:
        first.execute(statement)  # created, not yet committed: the second blocks on its row

        def second() -> None:
            try:
                with psycopg.connect(**owner, autocommit=True) as conn:
                    conn.execute(statement)
            except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
                errors_seen.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(timeout=1.0)
        assert thread.is_alive(), "the second creation did not wait for the first"
        first.commit()
        thread.join(timeout=10.0)
        assert not thread.is_alive() and errors_seen == []
    finally:
        first.close()
        with psycopg.connect(**owner, autocommit=True) as conn:
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def _owner_params(url: str) -> dict[str, Any]:
    import environ

    cfg = environ.Env.db_url_config(url)
    return {
        "host": cfg["HOST"],
        "port": cfg["PORT"],
        "dbname": cfg["NAME"],
        "user": cfg["USER"],
        "password": cfg["PASSWORD"],
    }
