"""What the latent readings cost consolidation: the offline extractor's CPU over a base tenant's episodes,
with the latent readings (consolidation.extractors.latent) and without, in interleaved rounds, and how many
latent candidates the merge then weighs (each is embedded and upserted in a savepoint, kept only where it
supersedes). Reads the episodes of a database an evaluation wrote; writes nothing to it.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/latent_cpu.py --db engram_locomo_base --db engram_tech_base

Prints a table and writes docs/benchmarks/latent_cpu.md. CPU is the process's (user + system), per
episode read; the parse cache is emptied before every pass, so each pass parses as a worker's first batch
does. The reference loop's time says how fast the machine was.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import reference_loop_ms  # noqa: E402
from context_latency import _env  # noqa: E402
from locomo import DOCS, _with_db, django_ready  # noqa: E402
from sentence_write_cpu import _cpu  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", required=True, help="a database an evaluation wrote (repeatable)")
    parser.add_argument("--sample", type=int, default=1500, help="episodes per database")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--report", default=str(DOCS / "latent_cpu.md"))
    args = parser.parse_args()
    django_ready()
    import psycopg

    from consolidation.extractors import latent, parsing
    from consolidation.extractors.rules import RuleBasedExtractor
    from episodic.models import Episode

    extractor = RuleBasedExtractor()
    readings = latent.readings
    rows = []
    reference = [reference_loop_ms()]
    for db in args.db:
        with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db)) as conn:
            found = conn.execute(
                "SELECT id, subject, role, content, occurred_at FROM episodic_episode"
                " WHERE kind = 'message' ORDER BY id"
            ).fetchall()
        sample = sorted(random.Random(7).sample(found, min(args.sample, len(found))))
        by_subject: dict[str, list[Any]] = defaultdict(list)
        for id_, subject, role, content, occurred_at in sample:
            by_subject[subject].append(
                Episode(id=id_, subject=subject, kind="message", role=role, content=content, occurred_at=occurred_at)
            )
        ms: dict[bool, list[float]] = {True: [], False: []}
        latent_count = 0
        for n in range(args.rounds):
            for on in (True, False) if n % 2 == 0 else (False, True):
                latent.readings = readings if on else (lambda sentence, *, speaker: [])
                parsing.parse.cache_clear()
                started = _cpu()
                count = 0
                for subject, episodes in by_subject.items():
                    count += len(extractor.extract(tenant=None, subject=subject, episodes=episodes).updates_only)  # type: ignore[arg-type]
                ms[on].append((_cpu() - started) / len(sample) * 1000)
                if on:
                    latent_count = count
        latent.readings = readings
        without, with_ = statistics.median(ms[False]), statistics.median(ms[True])
        rows.append((db, len(sample), latent_count / len(sample) * 100, without, with_, with_ / without))
    reference.append(reference_loop_ms())
    head = (
        "| episodes of | messages | latent candidates per 100 | ms CPU an episode, without | with latent readings | ratio |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    table = "\n".join(
        [head] + [f"| {r[0]} | {r[1]} | {r[2]:.1f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} |" for r in rows]
    )
    print(table)
    command = "bench/latent_cpu.py " + " ".join(sys.argv[1:])
    Path(args.report).write_text(
        "# What the latent readings cost consolidation\n\n"
        f"Produced by `{command}` on {date.today().isoformat()}; reference loop "
        f"{min(reference):.0f}-{max(reference):.0f} ms (before, after).\n\n"
        "The offline extractor's CPU (user + system) per message of a random sample of the base tenant's episodes, "
        f"read subject by subject as a consolidation batch reads them, in {args.rounds} interleaved rounds (median), "
        "with the latent readings and without; the parse cache emptied before every pass. Each latent candidate "
        "is then embedded and upserted by the merge in a savepoint (not counted here), and kept only where it "
        "supersedes. Consolidation runs in the worker, never on a request path.\n\n" + table + "\n"
    )


if __name__ == "__main__":
    main()
