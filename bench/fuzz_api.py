"""The long run of the raw-request fuzzer (tests/api/fuzzing.py) over every /v1/ route, in process
(Django's test client: the whole middleware and view stack, everything but the socket), and optionally
schemathesis over the OpenAPI schema against a live server. Not a latency benchmark.

A database of its own (bench_engram_fuzz, created as the owner, used as the worker's role so that
row-level security is in force and the erasure tasks, run eagerly, may erase) holds one tenant with a
little of everything, written through the API.
Every request must answer below 500, every 4xx as problem+json, every status one the schema documents.
Writes docs/benchmarks/fuzz.md.

    .venv/bin/python bench/fuzz_api.py [--requests 20000] [--seed 22] [--schemathesis-examples 100]
        [--schemathesis-phases examples,coverage,fuzzing,stateful] [--schemathesis-max-time 900]

schemathesis's `--max-time` bounds its whole run: it shares the budget among the phases (holding a
share back for the stateful phase), and repeats fuzzing and stateful while time remains, so a slow or
shared machine gets a shorter run rather than none.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ["ENGRAM_TEST_DB_NAME"] = os.environ.get("ENGRAM_BENCH_DB_NAME", "bench_engram_fuzz")
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

import django  # noqa: E402

django.setup()

import logging  # noqa: E402

# Each expected 4xx would log a warning; errors still show.
logging.getLogger("django.request").setLevel(logging.ERROR)

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed  # noqa: E402
from hypothesis import settings as hypothesis_settings  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from tests.api import fuzzing  # noqa: E402
from tests.api.test_fuzz import seed_known_ids  # noqa: E402

OUT = ROOT / "docs" / "benchmarks" / "fuzz.md"


def run_fuzz(
    requests: int,
    seed_value: int,
    raw_key: str,
    known: dict[str, list[str]],
    progress: Callable[[dict[str, object]], None] | None = None,
) -> dict[str, object]:
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    documented = fuzzing.documented_statuses(schema)
    routes = fuzzing.v1_routes()
    strategy = fuzzing.requests(routes, fuzzing.schema_field_names(schema), raw_key, known, fuzzing.body_shapes(schema))
    client = Client()
    statuses: Counter[int] = Counter()
    per_route: dict[str, Counter[str]] = {}
    violations: list[str] = []
    started = time.monotonic()

    @seed(seed_value)
    @given(request=strategy)
    @hypothesis_settings(
        max_examples=requests,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def one(request: fuzzing.FuzzRequest) -> None:
        response = fuzzing.send(client, request)
        statuses[response.status_code] += 1
        counts = per_route.setdefault(request.route.template, Counter())
        counts["requests"] += 1
        counts["5xx" if response.status_code >= 500 else f"{response.status_code // 100}xx"] += 1
        problem = fuzzing.violation(response, request, documented)
        if problem is not None:
            counts["violations"] += 1
            violations.append(problem)
        done = sum(statuses.values())
        if done % 1000 == 0:
            print(f"{done} requests, {time.monotonic() - started:.0f} s, {len(violations)} violations", flush=True)
        if progress is not None and done % 2000 == 0 and done < requests:
            # A long run on a busy machine: the report says how far it got, should it be stopped.
            progress({**summary(), "partial_of": requests})

    def summary() -> dict[str, object]:
        return {
            "routes": len(routes),
            "statuses": statuses,
            "per_route": per_route,
            "violations": violations,
            "seconds": time.monotonic() - started,
        }

    one()
    return summary()


def run_schemathesis(examples: int, raw_key: str, phases: str, max_time: int) -> dict[str, object]:
    """schemathesis's own CLI against a live server (runserver on a free port, loopback only), as issue
    22 ran it, with the stateful phase as well (sequences of calls that follow the schema's links)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DATABASE_URL": _app_database_url(), "REDIS_URL": os.environ["TEST_REDIS_URL"]}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.test"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload", "--nothreading"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        command = [
            str(Path(sys.executable).parent / "schemathesis"),
            "run",
            f"http://127.0.0.1:{port}/api/schema/?format=json",
            "-H",
            f"Authorization: Bearer {raw_key}",
            "-n",
            str(examples),
            "--checks",
            "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
            "--wait-for-schema",
            "60",
            "--seed",
            "22",
            "--phases",
            phases,
            "--max-time",
            str(max_time),
        ]
        started = time.monotonic()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=max_time + 600)
        output = result.stdout + result.stderr
        (ROOT / ".data" / "schemathesis-last.log").write_text(output)
        shown = " ".join(c if not c.startswith("Authorization") else "Authorization: Bearer <key>" for c in command)
        return {
            "command": shown.replace(str(Path(sys.executable).parent) + "/", ".venv/bin/"),
            "exit": result.returncode,
            "summary": _summary_lines(output),
            "seconds": time.monotonic() - started,
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def _summary_lines(output: str) -> list[str]:
    """Each phase with its time and counts, the failures (their titles and reproductions, not the long
    bodies) and the summary."""
    lines = output.splitlines()
    phases: list[str] = []
    for line in lines:
        if line.startswith("="):
            break
        words = line.split()
        if (len(words) > 1 and words[1] in {"Examples", "Coverage", "Fuzzing", "Stateful"}) or (
            words and words[0] in {"Scenarios:", "API"}
        ):
            phases.append(line.rstrip())
    kept = [ln for ln in lines if ln.startswith(("_", "- ST", "    curl", "[")) and len(ln) < 400]
    for i, line in enumerate(lines):
        if "SUMMARY" in line:
            return phases + kept[:40] + [ln for ln in lines[i : i + 40] if ln.strip()]
    return phases + kept[:40] + lines[-30:]


def _app_database_url() -> str:
    db = settings.DATABASES["default"]
    # The server runs Celery tasks eagerly (erasure among them), so it logs in as the worker's role.
    user, password = settings.ENGRAM_TEST_WORKER_CREDENTIALS
    return f"postgres://{user}:{password}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


SCHEMATHESIS_HEADING = "## schemathesis against a live server"


def fuzz_section(fuzz: dict, command: str) -> list[str]:  # type: ignore[type-arg]
    statuses: Counter[int] = fuzz["statuses"]
    total = sum(statuses.values())
    server_errors = sum(n for status, n in statuses.items() if status >= 500)
    lines = [
        "# Fuzzing the API: no 5xx on crafted input",
        "",
        *(
            [f"**Partial: {total} of the {fuzz['partial_of']} requests of this run so far.**", ""]
            if fuzz.get("partial_of")
            else []
        ),
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with:",
        "",
        f"    {command}",
        "",
        "Not a latency benchmark: requests run in process through Django's test client (every middleware,",
        "authentication, the tenant scope and the views; everything but the socket), on a shared machine.",
        "The generator is tests/api/fuzzing.py; tests/api/test_fuzz.py runs the same one with 400 examples",
        "in the test suite. It sends, to every /v1/ route the URL resolver knows (methods it answers and",
        "others), raw bodies (not JSON, not UTF-8, nested up to 200,000 deep, lone surrogates and NUL in",
        "keys and values, integers of thousands of digits, every schema field name with values of the wrong",
        "type, timestamps at the edges of the years 1 and 9999), query strings (NUL, altered and over-long",
        "cursors, huge numbers), and bad Content-Type, Idempotency-Key, If-Match, If-None-Match and",
        "Authorization values.",
        "",
        f"**{total} requests, {server_errors} answered 5xx, {len(fuzz['violations'])} violations** "
        f"({fuzz['routes']} routes, {fuzz['seconds']:.0f} s). A violation is a 5xx, a 4xx that is not",
        "problem+json with its status, or a status the OpenAPI schema does not document for the operation.",
        "",
        "| status | answers |",
        "|---|---|",
    ]
    lines += [f"| {status} | {n} |" for status, n in sorted(statuses.items())]
    lines += ["", "| route | requests | 2xx | 4xx | 5xx | violations |", "|---|---|---|---|---|---|"]
    for route, counts in sorted(fuzz["per_route"].items()):
        lines.append(
            f"| `{route}` | {counts['requests']} | {counts['2xx']} | {counts['4xx']} | {counts['5xx']} "
            f"| {counts['violations']} |"
        )
    if fuzz["violations"]:
        lines += ["", "First violations:", ""] + [f"- `{v[:300]}`" for v in fuzz["violations"][:20]]
    lines += [
        "",
        "The test suite runs a bounded version of both this and the run below: tests/api/test_fuzz.py (400",
        "raw requests) and tests/api/test_schemathesis.py (schemathesis against pytest-django's live server",
        "with the same conformance checks, 12 examples per operation).",
        "",
    ]
    return lines


def schemathesis_section(schemathesis: dict, command: str) -> list[str]:  # type: ignore[type-arg]
    return [
        SCHEMATHESIS_HEADING,
        "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC with `{command}`: the external check of issue 22, from",
        "outside over HTTP against `manage.py runserver` (loopback, one thread) on the bench database, with",
        "the 5xx, status-code (a status the schema does not document fails), content-type and",
        "response-schema checks, every phase including the stateful one (sequences of calls that follow",
        "the schema's links), and `--max-time` as the bound of the whole run: schemathesis shares it among",
        "the phases, holding a share back for the stateful one, and repeats fuzzing and stateful while",
        "time remains, so a loaded machine gets fewer cases rather than no result (issue 31: without the",
        "bound, the run was stopped at 1,800 s by an outer timeout before it printed anything):",
        "",
        f"    {schemathesis['command']}",
        "",
        f"Exit status {schemathesis['exit']} ({schemathesis['seconds']:.0f} s). Its failures and summary:",
        "",
        "```",
        *schemathesis["summary"],
        "```",
        "",
        EARLIER_FINDINGS,
        "",
    ]


EARLIER_FINDINGS = """What the external runs of issue 22 found, each fixed with a test in tests/api/test_bad_input.py
that failed before: with `-n 2` (2,063 cases), an episode whose `outcome` is an object (a TypeError in
episodic/validation.py); with `-n 200` (8,676 cases, in the fuzzing phase), `POST /v1/episodes/search`
answering 500 once the database held an episode whose client embedding had no direction in 32-bit
floats (components of 1e30 or 1e-30, or the zero vector): pgvector's cosine was NaN, which JSON
cannot carry. Client vectors are now scaled to length 1, the zero vector is a 400, and a stored
vector without a direction ranks as unrelated. The warnings in the summary are not failures: "missing
test data" names operations whose ids schemathesis could not obtain (a fact change is made only by
consolidation, not by an API call), and "schema validation mismatch" operations whose random bodies
were mostly refused with 400s, which the schema documents."""


def write_report(fuzz: dict | None, schemathesis: dict | None, command: str) -> None:  # type: ignore[type-arg]
    """Each run rewrites its own section and keeps the other's."""
    existing = OUT.read_text() if OUT.exists() else ""
    old_fuzz, _, old_schemathesis = existing.partition(SCHEMATHESIS_HEADING)
    top = "\n".join(fuzz_section(fuzz, command)) if fuzz is not None else old_fuzz
    bottom = (
        "\n".join(schemathesis_section(schemathesis, command))
        if schemathesis is not None
        else (SCHEMATHESIS_HEADING + old_schemathesis if old_schemathesis else "")
    )
    OUT.write_text(top.rstrip() + "\n\n" + bottom if bottom else top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20_000, help="0 skips the raw-request run")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--schemathesis-examples", type=int, default=100, help="0 skips the schemathesis run")
    parser.add_argument(
        "--schemathesis-phases", default="examples,coverage,fuzzing,stateful", help="schemathesis's --phases"
    )
    parser.add_argument(
        "--schemathesis-max-time", type=int, default=900, help="seconds for the whole schemathesis run (all phases)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the bench database")
    args = parser.parse_args()
    command = "  ".join(["", ".venv/bin/python bench/fuzz_api.py", *sys.argv[1:]]).strip()

    from tenants.dbroles import switch_connection_user
    from tenants.services import api_key_create
    from tests.factories.tenants import TenantFactory

    setup_test_environment()
    owner = (settings.DATABASES["default"]["USER"], settings.DATABASES["default"]["PASSWORD"])
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=args.keep)
    switch_connection_user("default", *settings.ENGRAM_TEST_WORKER_CREDENTIALS)
    try:
        from core.redis import get_redis

        get_redis().flushdb()
        tenant = TenantFactory(name="Fuzz", slug="fuzz")
        # No tenant rate limit: the run would otherwise measure the throttle.
        tenant.settings = {**tenant.settings, "rate_limit_per_minute": 0}
        tenant.save(update_fields=["settings"])
        issued = api_key_create(tenant=tenant, name="fuzz", scopes=("read", "write", "admin"))
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
        known = seed_known_ids(api)
        fuzz = (
            run_fuzz(
                args.requests,
                args.seed,
                issued.raw,
                known,
                progress=lambda partial: write_report(partial, None, command),
            )
            if args.requests
            else None
        )
        if fuzz is not None:
            statuses: Counter[int] = fuzz["statuses"]  # type: ignore[assignment]
            print(f"{'status':>8} {'answers':>8}")
            for status, n in sorted(statuses.items()):
                print(f"{status:>8} {n:>8}")
            server_errors = sum(n for code, n in statuses.items() if code >= 500)
            violations: list[str] = fuzz["violations"]  # type: ignore[assignment]
            print(f"{sum(statuses.values())} requests, {server_errors} 5xx, {len(violations)} violations")
            for violation in violations[:10]:
                print("  ", violation[:400])
        schemathesis = None
        if args.schemathesis_examples:
            connection.close()
            schemathesis = run_schemathesis(
                args.schemathesis_examples, issued.raw, args.schemathesis_phases, args.schemathesis_max_time
            )
            print("\n".join(schemathesis["summary"]))  # type: ignore[arg-type]
        write_report(fuzz, schemathesis, command)
        print(f"wrote {OUT.relative_to(ROOT)}")
    finally:
        switch_connection_user("default", *owner)
        if not args.keep:
            connection.creation.destroy_test_db(old_name, verbosity=0)


if __name__ == "__main__":
    main()
