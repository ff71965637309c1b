"""What read-your-writes costs a write: POST /v1/episodes of one LoCoMo turn with the inline embedding
on (the default: a write of at most ENGRAM_INLINE_EMBED_MAX_PASSAGES passages is embedded before it
commits) and off (the worker embeds it later), the two taking turns request by request.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/write_latency.py [--requests 200]

Runs in process through the whole API stack (Django's test client: middleware, authentication, the
tenant scope, the view, the service) against a scratch database of its own (engram_bench_writes,
created and migrated as bench/locomo.py does), with the configured embedder. Reports wall p50 / p95 and
this process's CPU per request. Run it alone on the machine. Writes docs/benchmarks/write_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from locomo import DATASET, DOCS, ROOT, scratch_env

CHILD = "ENGRAM_BENCH_WRITES_CHILD"


def _turns(limit: int) -> list[str]:
    data = json.loads(Path(DATASET).read_text())
    out: list[str] = []
    for conversation in data:
        for key, session in conversation["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                out.extend(turn["text"] for turn in session)
    return out[:limit]


def child(requests: int) -> dict[str, list[float]]:
    import django

    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    django.setup()
    from django.conf import settings
    from rest_framework.test import APIClient

    from core.embedding import get_embedder
    from tenants.services import api_key_create, tenant_create

    slug = f"bench-writes-{int(time.time())}"
    tenant = tenant_create(name=slug, slug=slug, settings={"rate_limit_per_minute": 0})
    issued = api_key_create(tenant=tenant, name="bench", scopes=["read", "write"])
    client = APIClient(SERVER_NAME="127.0.0.1")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    get_embedder().embed(["warm up"])
    turns = _turns(requests)
    results: dict[str, list[float]] = {"on wall": [], "on cpu": [], "off wall": [], "off cpu": []}
    base = dict(settings.ENGRAM)
    for i, text in enumerate(turns):
        for case in ("on", "off") if i % 2 == 0 else ("off", "on"):
            settings.ENGRAM = {**base, "INLINE_EMBED_MAX_PASSAGES": 32 if case == "on" else 0}
            body = {"episodes": [{"subject": "s", "session": f"{case}-{i // 50}", "content": text}]}
            wall, cpu = time.perf_counter(), time.thread_time()
            response = client.post("/v1/episodes", body, format="json")
            cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
            assert response.status_code == 201, response.content
            results[f"{case} wall"].append(wall * 1000)
            results[f"{case} cpu"].append(cpu * 1000)
    return results


def _p(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--db", default="engram_bench_writes")
    args = parser.parse_args()
    if os.environ.get(CHILD):
        print(json.dumps(child(args.requests)))
        return
    env = {**scratch_env(args.db), CHILD: "1"}
    done = subprocess.run(
        [sys.executable, __file__, "--requests", str(args.requests)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    results = json.loads(done.stdout.strip().splitlines()[-1])
    rows = []
    for case in ("off", "on"):
        wall, cpu = results[f"{case} wall"], results[f"{case} cpu"]
        rows.append(
            f"| {'inline embedding' if case == 'on' else 'left to the worker'} | {len(wall)} "
            f"| {_p(wall, 50):.1f} | {_p(wall, 95):.1f} | {statistics.median(cpu):.1f} |"
        )
    added = statistics.median(results["on cpu"]) - statistics.median(results["off cpu"])
    command = "bench/write_latency.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    report = "\n".join(
        [
            "# What read-your-writes costs a write",
            "",
            f"Produced by `{command.strip()}` on {datetime.now(UTC):%Y-%m-%d}, alone on the machine.",
            "",
            "POST /v1/episodes of one LoCoMo turn, in process through the whole API stack, with the inline",
            "embedding on (the default for writes of at most 32 passages) and off, taking turns request by",
            f"request; embedder `{os.environ.get('ENGRAM_EMBEDDER', 'ENGRAM_EMBEDDER unset: the ONNX Runtime engine')}`. CPU: the",
            "request thread's.",
            "",
            "| write | requests | wall p50 ms | wall p95 ms | CPU median ms |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            f"The inline embedding adds {added:.1f} ms of CPU to a one-turn write (median); the memory is then",
            "found by meaning as soon as the write is acknowledged (tests/episodic/test_read_your_writes.py).",
            "",
        ]
    )
    print(report)
    (DOCS / "write_latency.md").write_text(report)


if __name__ == "__main__":
    main()
