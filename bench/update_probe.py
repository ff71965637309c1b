"""The update probe (issue 29, item 4): do updates win through the real write path?

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/update_probe.py            # scratch database engram_update_probe, dropped after

For each pair of bench/update_pairs.py, a subject of its own says the first value in one session and a
different value of the same thing a week later in another (POST /v1/episodes); each session is ended
(POST /v1/sessions/{id}/end) and its consolidation runs to completion as the worker would run it (the
task, eagerly, in this process), then GET /v1/facts and POST /v1/context ask. The same pairs are also
written as explicit facts (POST /v1/facts). Per pair:
- updated: the active facts hold the new value and not the old one;
- served: the context holds the new value, ahead of any mention of the old one;
- stale-only: the context holds the old value without the new one;
and for the paraphrases (one value said twice in other words): confirmed, one fact, never superseded,
confirmed by the second statement. The embedder is the production one (MiniLM, ONNX); the extractor
the offline rules (the default without an API key). In-process DRF APIClient, a scratch database
of its own. Prints a table and writes docs/benchmarks/update_probe.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.ingest import drop_db, point_env_at, prepare_db, scratch_tenant  # noqa: E402
from bench.update_pairs import (  # noqa: E402
    SAID_PARAPHRASES,
    SAID_UPDATES,
    WRITTEN_PARAPHRASES,
    WRITTEN_UPDATES,
    Outcome,
    probe_said,
    probe_written,
)

DOC = ROOT / "docs" / "benchmarks" / "update_probe.md"


def run() -> dict[str, list[Outcome]]:
    import django

    django.setup()
    from django.conf import settings
    from rest_framework.test import APIClient

    from config.celery import app

    # The worker's task, run in this process as soon as the request that enqueues it commits.
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    print(f"embedder {settings.ENGRAM['EMBEDDER']}, extractor {settings.ENGRAM['EXTRACTOR'] or 'default'}", flush=True)
    _tenant, raw = scratch_tenant("updates")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")

    def end(session: str) -> None:
        response = client.post(f"/v1/sessions/{session}/end", {}, format="json")
        assert response.status_code == 200, response.content[:300]

    out: dict[str, list[Outcome]] = defaultdict(list)
    for name, pairs in (("said updates", SAID_UPDATES), ("said paraphrases", SAID_PARAPHRASES)):
        for i, pair in enumerate(pairs):
            out[name].append(probe_said(client, pair, f"{name.split()[1][:4]}-{i}", end))
        print(f"{name}: {len(pairs)} pairs", flush=True)
    for name, pairs in (("written updates", WRITTEN_UPDATES), ("written paraphrases", WRITTEN_PARAPHRASES)):
        for i, pair in enumerate(pairs):
            out[name].append(probe_written(client, pair, f"w{name.split()[1][:4]}-{i}")[0])
        print(f"{name}: {len(pairs)} pairs", flush=True)
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def report(results: dict[str, list[Outcome]], seconds: float, command: str) -> str:
    lines = [
        "# Update probe: do updates win through the real write path?",
        "",
        f"`{command}` (bench/update_probe.py; pairs in bench/update_pairs.py, also the table tests",
        "tests/consolidation/test_updates_win.py). Sessions written through POST /v1/episodes, each ended and",
        "consolidated to completion before the questions; explicit writes through POST /v1/facts. MiniLM",
        f"(ONNX), the offline rule extractor, POST /v1/context at 1,000 tokens. {seconds:.0f} s.",
        "The same run on the code before the updates-win rule: [update_probe_before.md](update_probe_before.md).",
        "",
        "| set | pairs | updated | served (new first) | stale-only | confirmed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, outcomes in results.items():
        n = len(outcomes)
        if "paraphrase" in name:
            lines.append(f"| {name} | {n} | | | | {sum(o.confirmed for o in outcomes)} / {n} |")
        else:
            updated = sum(o.updated for o in outcomes)
            served = sum(o.served for o in outcomes)
            stale = sum(o.stale_only for o in outcomes)
            lines.append(f"| {name} | {n} | {updated} / {n} | {served} / {n} | {stale} / {n} | |")
    lines += ["", "## Per pair", "", "| set | kind | first | then | updated | served | stale-only | confirmed |"]
    lines.append("|---|---|---|---|---|---|---|---|")
    for name, outcomes in results.items():
        for o in outcomes:
            pair = o.pair
            first = getattr(pair, "first", None) or f"{getattr(pair, 'attribute', '')} = {pair.old}"
            then = getattr(pair, "then", None) or pair.new
            if "paraphrase" in name:
                flags = ["", "", "", _yes(o.confirmed)]
            else:
                flags = [_yes(o.updated), _yes(o.served), "**yes**" if o.stale_only else "no", ""]
            lines.append(f"| {name} | {pair.kind} | {first} | {then} | " + " | ".join(flags) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_update_probe")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--report", default=str(DOC))
    args = parser.parse_args()
    point_env_at(args.db)
    os.environ.setdefault("ENGRAM_EXTRACTOR", "consolidation.extractors.rules.RuleBasedExtractor")
    os.environ.setdefault("TQDM_DISABLE", "1")
    # The context's reads in this thread (the same answer, invariant 4), so that no helper thread
    # holds a connection when the scratch database is dropped.
    os.environ.setdefault("ENGRAM_PARALLEL_READERS", "0")
    drop_db(args.db)
    prepare_db(args.db)
    started = time.perf_counter()
    try:
        results = run()
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_db(args.db)
    seconds = time.perf_counter() - started
    command = "bench/update_probe.py " + " ".join(sys.argv[1:])
    text = report(results, seconds, command.strip())
    print(text.split("## Per pair")[0])
    for name, outcomes in results.items():
        for o in outcomes:
            bad = (not o.confirmed) if "paraphrase" in name else (not o.updated or not o.served or o.stale_only)
            if bad:
                print(f"  {name}: {o.pair.kind}: {o.pair.old!r} -> {o.pair.new!r}: active {o.active}")
    Path(args.report).write_text(text)
    print(f"wrote {args.report}")


if __name__ == "__main__":
    main()
