"""Every statement on a tenant table names its tenant itself.

Row-level security keeps tenants apart, but on Citus a policy does not route a query: only a
`tenant_id` in the statement's own WHERE or JOIN ... ON (or in an INSERT's column list) sends it to
one shard instead of all of them. This runs a representative set of API requests with an execute
wrapper on every connection and reads each statement's SQL.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.backends.signals import connection_created

from consolidation.models import ArchiveManifest
from consolidation.tasks import archive_episodes, decay_and_forget
from episodic.models import Episode, allow_episode_deletion
from privacy import erasure
from tenants.distribution import classify_tables
from tenants.scope import tenant_scope
from tenants.tasks import purge_idempotency_records
from tests.episodic.conftest import item
from tests.privacy.test_erasure_api import seed_through_the_api

pytestmark = pytest.mark.django_db

_KEYWORDS = {
    "where", "on", "set", "inner", "left", "right", "full", "cross", "join", "group", "order", "limit",
    "for", "using", "natural", "lateral", "union", "returning", "values", "window", "offset", "having",
    "as", "with", "select", "except", "intersect", "fetch", "tablesample",
}  # fmt: skip
_REFERENCE = re.compile(r"\b(from|join|update|into)\s+([a-z_][a-z0-9_]*)(?:\s+(?:as\s+)?([a-z_][a-z0-9_]*))?")
# tenant_id compared with a value the statement was given (not only with another table's tenant_id).
_ANCHORED = re.compile(r"tenant_id\s*(?:=\s*(?:any\s*\(\s*)?(?:%s|%\(\w+\)s|'[0-9a-f-]{36}')|in\s*\(\s*(?:%s|'))")


def _normalise(sql: str) -> str:
    return re.sub(r"\s+", " ", sql.replace('"', "")).strip().lower()


def unfiltered(sql: str, tenant_tables: set[str]) -> list[str]:
    """What is wrong with one statement: a tenant table it reads or writes without comparing that
    table's tenant_id, a write of tenant_id itself, or no tenant_id pinned to a value at all."""
    text = _normalise(sql)
    problems: list[str] = []
    insert = re.match(r"insert into ([a-z_][a-z0-9_]*) \(([^)]*)\)", text)
    if insert and insert.group(1) in tenant_tables:
        if "tenant_id" not in [c.strip() for c in insert.group(2).split(",")]:
            problems.append(f"INSERT into {insert.group(1)} without tenant_id")
    references = [
        (m.group(2), m.group(3) if m.group(3) and m.group(3) not in _KEYWORDS else m.group(2))
        for m in _REFERENCE.finditer(text)
        if m.group(2) in tenant_tables and m.group(1) != "into"
    ]
    starts = [m.end() for m in _REFERENCE.finditer(text)] + [len(text)]
    for (table, alias), start in zip(
        references,
        [m.end() for m in _REFERENCE.finditer(text) if m.group(2) in tenant_tables and m.group(1) != "into"],
        strict=True,
    ):
        qualified = rf"(?<![\w.]){re.escape(alias)}\.tenant_id\s*(?:=|in\b)|=\s*{re.escape(alias)}\.tenant_id\b"
        # An unqualified tenant_id belongs to the nearest table named before it (a subquery's own table).
        following = text[start : min(s for s in starts if s > start)] if alias == table else ""
        bare = r"(?<![\w.])tenant_id\s*(?:=|in\b)"
        if not re.search(qualified, text) and not re.search(bare, following):
            problems.append(f"{table} ({alias}) without its tenant_id in WHERE or ON")
    if (references or (insert and insert.group(1) in tenant_tables and "select" in text)) and not (
        _ANCHORED.search(text)
    ):
        if not insert or references:
            problems.append("no tenant_id compared with a given value")
    update = re.match(r"update ([a-z_][a-z0-9_]*) set (.*?)(?: where |$)", text)
    if update and update.group(1) in tenant_tables and re.search(r"(?<![\w.])tenant_id\s*=", update.group(2)):
        problems.append(f"UPDATE of {update.group(1)} writes tenant_id (the distribution column never changes)")
    return problems


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ('SELECT "episodic_episode"."id" FROM "episodic_episode" WHERE "episodic_episode"."id" = %s', "without"),
        ("UPDATE episodic_session SET status = %s WHERE episodic_session.id = %s", "without"),
        ("DELETE FROM semantic_fact WHERE semantic_fact.id IN (%s, %s)", "without"),
        ("INSERT INTO semantic_factsource (fact_id, episode_id) VALUES (%s, %s)", "INSERT into"),
        (
            "SELECT e.id FROM episodic_episode e JOIN episodic_session s ON s.id = e.session_id WHERE e.tenant_id = %s",
            "episodic_session (s)",
        ),
        (
            "SELECT e.id FROM episodic_episode e JOIN episodic_session s ON s.tenant_id = e.tenant_id",
            "no tenant_id compared",
        ),
        ("UPDATE semantic_fact SET tenant_id = %s, value = %s WHERE tenant_id = %s AND id = %s", "writes tenant_id"),
    ],
)
def test_the_reader_catches_a_statement_without_its_tenant(sql: str, expected: str) -> None:
    tables = {"episodic_episode", "episodic_session", "semantic_fact", "semantic_factsource"}
    assert any(expected in p for p in unfiltered(sql, tables)), unfiltered(sql, tables)


@pytest.mark.parametrize(
    "sql",
    [
        'SELECT "semantic_fact"."id" FROM "semantic_fact" WHERE ("semantic_fact"."tenant_id" = %s AND "semantic_fact"."id" = %s)',
        "SELECT e.id FROM episodic_episode e JOIN episodic_session s ON s.id = e.session_id AND s.tenant_id = e.tenant_id"
        " WHERE e.tenant_id = %(tenant)s",
        "INSERT INTO episodic_episode (tenant_id, session_id, content) VALUES (%s, %s, %s)",
        "UPDATE episodic_session SET status = %s WHERE (episodic_session.tenant_id = %s AND episodic_session.id = %s)",
        'SELECT "tenants_tenant"."id" FROM "tenants_tenant" WHERE "tenants_tenant"."id" = %s',
    ],
)
def test_the_reader_accepts_statements_that_name_their_tenant(sql: str) -> None:
    tables = {"episodic_episode", "episodic_session", "semantic_fact"}
    assert unfiltered(sql, tables) == []


class _Recorder:
    def __init__(self) -> None:
        self.statements: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        with self.lock:
            self.statements.append(sql)
        return execute(sql, params, many, context)


@pytest.fixture
def recorded() -> Iterator[_Recorder]:
    recorder = _Recorder()

    def install(sender: Any, connection: Any, **kwargs: Any) -> None:
        connection.execute_wrappers.append(recorder)

    connection_created.connect(install, weak=False, dispatch_uid="tenant_filter_recorder")
    connection.execute_wrappers.append(recorder)
    try:
        yield recorder
    finally:
        connection.execute_wrappers.remove(recorder)
        connection_created.disconnect(dispatch_uid="tenant_filter_recorder")


def _ok(response: Any, *statuses: int) -> dict[str, Any]:
    assert response.status_code in statuses, (response.status_code, response.content[:500])
    return response.json() if response.content else {}


def test_every_statement_of_the_api_names_its_tenant(api_a, recorded: _Recorder) -> None:
    distributed, _ = classify_tables()
    tenant_tables = set(distributed.values())
    episodes = [
        {**item(f"turn {i}: we moved billing to Stripe and Postgres 16", entities=["acme"]), "session": "s-1"}
        for i in range(3)
    ]
    _ok(api_a.post("/v1/episodes", {"episodes": episodes}, format="json", HTTP_IDEMPOTENCY_KEY="e1"), 201)
    _ok(api_a.get("/v1/episodes", {"subject": "alice"}), 200)
    fact = _ok(
        api_a.post(
            "/v1/facts",
            {
                "entity": "acme",
                "attribute": "billing_provider",
                "value": "Stripe",
                "statement": "Acme bills on Stripe.",
            },
            format="json",
        ),
        200,
        201,
    )
    _ok(
        api_a.post(
            "/v1/facts",
            {"entity": "acme", "attribute": "billing_provider", "value": "Adyen", "statement": "Acme bills on Adyen."},
            format="json",
        ),
        200,
        201,
    )
    _ok(api_a.post("/v1/facts/search", {"query": "which billing provider"}, format="json"), 200)
    _ok(api_a.get(f"/v1/facts/{fact['fact']['id']}/history"), 200)
    _ok(
        api_a.post(
            "/v1/procedures",
            {"name": "Back off", "trigger": {"keywords": ["rate limit"]}, "behaviour": "Retry later."},
            format="json",
        ),
        201,
    )
    _ok(api_a.post("/v1/procedures/match", {"message": "we hit a rate limit"}, format="json"), 200)
    _ok(api_a.put("/v1/sessions/s-1/scratchpad", {"plan": "refund"}, format="json"), 200, 201)
    context = _ok(
        api_a.post(
            "/v1/context",
            {"subject": "alice", "session": "s-1", "query": "billing provider?", "max_tokens": 1000},
            format="json",
        ),
        200,
    )
    _ok(api_a.post(f"/v1/context/{context['trace_id']}/feedback", {"outcome": "success"}, format="json"), 200)
    _ok(api_a.post("/v1/subjects/alice/erasure", {"reason": "asked"}, format="json"), 202)

    problems = {
        f"{'; '.join(found)}: {sql}" for sql in recorded.statements if (found := unfiltered(sql, tenant_tables))
    }
    assert len(recorded.statements) > 40
    # The vector channel's prefilter (Hamming ranking, then exact re-scoring) is among them.
    assert any("<~>" in sql for sql in recorded.statements)
    assert sorted(problems) == [], "\n".join(sorted(problems))


# Statements known not to pin every table they read, each with why it stays and where it is tracked.
# Each must still be seen (it goes from here once fixed).
KNOWN_OPEN: dict[str, str] = {}


def _problems(statements: list[str], tenant_tables: set[str]) -> set[str]:
    return {
        f"{'; '.join(found)}: {sql}"
        for sql in statements
        if (found := unfiltered(sql, tenant_tables)) and not any(k in _normalise(sql) for k in KNOWN_OPEN)
    }


def test_every_statement_of_the_maintenance_paths_names_its_tenant(
    api_a, api_b, tenant_a, tenant_b, recorded: _Recorder, settings, django_capture_on_commit_callbacks
) -> None:
    """Deletes above all: Django's collector cascades by foreign key id alone (`DELETE FROM
    episodic_passage WHERE episode_id IN (...)`), which on Citus goes to every shard. Both tenants hold
    the same kind of data, so a statement that lost its tenant would touch the other one's rows."""
    capture = django_capture_on_commit_callbacks
    distributed, _ = classify_tables()
    tenant_tables = set(distributed.values())
    subject, other = "yan.private", "bea"
    phases: dict[str, list[str]] = {}

    def phase(name: str, start: int) -> None:
        phases[name] = recorded.statements[start:]
        # Nothing left dangling: the deferred composite foreign keys are checked now, not at a commit
        # the test never reaches.
        connection.check_constraints()

    start = len(recorded.statements)
    seed_through_the_api(api_b, tenant_b, capture, other)
    # The episodes, facts, procedures, scratchpads and contexts of the subject, a session ended (its
    # scratchpad summarised and consolidated), then the consolidation sweep, decay and archiving tasks.
    seeded = seed_through_the_api(api_a, tenant_a, capture, subject)
    phase("seeding: API writes, session end, consolidation sweep, decay, archiving", start)
    b_before = erasure.locate(tenant=tenant_b, subject=other)

    start = len(recorded.statements)
    call_command("restore_archive", "--tenant", tenant_a.slug, "--all", stdout=io.StringIO())
    phase("archive restore", start)
    with tenant_scope(tenant_a):
        assert not ArchiveManifest.objects.for_tenant(tenant_a).exists()

    start = len(recorded.statements)
    with capture(execute=True):
        assert archive_episodes() >= 2
    phase("archiving (the task)", start)
    with tenant_scope(tenant_a):
        assert ArchiveManifest.objects.for_tenant(tenant_a).exists()

    start = len(recorded.statements)
    tenant_a.settings = {**tenant_a.settings, "forget_after_days": 0}
    tenant_a.save(update_fields=["settings"])
    with capture(execute=True):
        decay_and_forget()
    phase("forgetting (the decay task, every fact unconfirmed too long)", start)

    start = len(recorded.statements)
    episode = _ok(api_a.get("/v1/episodes", {"subject": subject}), 200)["results"][0]
    fact = {"entity": "PG", "attribute": "version", "value": "16", "source_episode_ids": [episode["id"]]}
    _ok(api_a.post("/v1/facts", {**fact, "statement": "PG is at 16."}, format="json"), 201)
    alias = _ok(api_a.post("/v1/entities/aliases", {"alias": "PG", "entity": "PostgreSQL"}, format="json"), 201)
    assert alias["facts_moved"] == 1
    _ok(api_a.delete(f"/v1/entities/aliases/{alias['alias']['id']}"), 200)
    phase("alias set (its facts moved) and delete", start)

    start = len(recorded.statements)
    fact = _ok(
        api_a.post(
            "/v1/facts",
            {"entity": "acme", "attribute": "region", "value": "eu", "statement": "Acme is in the EU."},
            format="json",
        ),
        201,
    )
    _ok(api_a.delete(f"/v1/facts/{fact['fact']['id']}", {"reason": "wrong"}), 200)
    phase("fact DELETE", start)

    start = len(recorded.statements)
    procedure = _ok(
        api_a.post(
            "/v1/procedures",
            {"name": "Retire", "trigger": {"keywords": ["retire"]}, "behaviour": "Do not."},
            format="json",
        ),
        201,
    )
    outcome = {"applied": True, "success": False, "episode": episode["id"]}
    _ok(api_a.post(f"/v1/procedures/{procedure['id']}/outcomes", outcome, format="json"), 201)
    _ok(api_a.delete(f"/v1/procedures/{procedure['id']}"), 200)
    phase("procedure outcome (with its episode) and DELETE", start)

    start = len(recorded.statements)
    _ok(api_a.put(f"/v1/sessions/{subject}-s1/scratchpad", {"plan": "call back"}, format="json"), 200, 201)
    with capture(execute=True):
        deleted = _ok(api_a.delete(f"/v1/sessions/{subject}-s1/scratchpad?summarise=true"), 200)
    assert deleted["summary_episode_id"]
    phase("scratchpad DELETE (summarised)", start)

    start = len(recorded.statements)
    with capture(execute=True):
        accepted = _ok(api_a.post(f"/v1/subjects/{subject}/erasure", {"reason": "asked"}, format="json"), 202)
    assert _ok(api_a.get(f"/v1/erasure-requests/{accepted['id']}"), 200)["status"] == "done"
    phase("erasure (the request, the task run eagerly)", start)
    assert {k: v for k, v in erasure.locate(tenant=tenant_a, subject=subject).items() if v} == {}
    assert erasure.locate(tenant=tenant_b, subject=other) == b_before

    start = len(recorded.statements)
    settings.ENGRAM = {**settings.ENGRAM, "IDEMPOTENCY_TTL_HOURS": 0}
    assert purge_idempotency_records() >= len(seeded["keys"])
    phase("idempotency purge (the task)", start)

    start = len(recorded.statements)
    # A throwaway tenant goes whole (demo_compare, the superuser's admin): episodes included.
    with tenant_scope(tenant_a), allow_episode_deletion():
        tenant_a.delete()
    phase("tenant deletion", start)
    with tenant_scope(tenant_b):
        assert Episode.objects.for_tenant(tenant_b).exists()

    seen = [_normalise(sql) for statements in phases.values() for sql in statements]
    assert [k for k in KNOWN_OPEN if not any(k in sql for sql in seen)] == [], "fixed? take it out of KNOWN_OPEN"
    found = {name: sorted(_problems(statements, tenant_tables)) for name, statements in phases.items()}
    assert all(len(statements) > 3 for statements in phases.values()), {k: len(v) for k, v in phases.items()}
    assert {name: problems for name, problems in found.items() if problems} == {}, "\n\n".join(
        f"{name}:\n" + "\n".join(problems) for name, problems in found.items() if problems
    )
