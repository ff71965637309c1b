"""What sentence vectors cost a write: the embedder's CPU for a sample of a base tenant's passages, with
their sentences (a tenant that keeps sentence vectors, Tenant.keeps_sentence_vectors) and without (every
other tenant), in interleaved rounds, in batches of the drain's size. Reads the passages of a database
an evaluation wrote; writes nothing to it.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/sentence_write_cpu.py --db engram_tech_base --db engram_locomo_base

Prints a table and writes docs/benchmarks/sentence_write_cpu.md. CPU is the process's (user + system, every
thread of the embedder), per passage; the reference loop's time says how fast the machine was.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import reference_loop_ms  # noqa: E402
from context_latency import _env  # noqa: E402
from locomo import DOCS, ROOT, _with_db  # noqa: E402

sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", action="append", required=True, help="a database an evaluation wrote (repeatable)")
    parser.add_argument("--sample", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--report", default=str(DOCS / "sentence_write_cpu.md"))
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    import psycopg

    from core.embedding import get_embedder
    from episodic.passages import sentence_texts
    from episodic.tasks import EMBED_BATCH

    embedder = get_embedder()
    rows = []
    reference = [reference_loop_ms()]
    for db in args.db:
        with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db)) as conn:
            contents = [r[0] for r in conn.execute("SELECT content FROM episodic_passage WHERE embedding IS NOT NULL")]
        sample = random.Random(7).sample(sorted(contents), min(args.sample, len(contents)))
        sentences = [s for p in sample if len(said := sentence_texts(p)) > 1 for s in said]
        embedder.embed(sample[:8])  # loaded and warm
        ms: dict[bool, list[float]] = {True: [], False: []}
        for n in range(args.rounds):
            for keeps in (True, False) if n % 2 == 0 else (False, True):
                texts = sample + sentences if keeps else sample
                started = _cpu()
                for i in range(0, len(texts), EMBED_BATCH):
                    embedder.embed(texts[i : i + EMBED_BATCH])
                ms[keeps].append((_cpu() - started) / len(sample) * 1000)
        without, with_ = statistics.median(ms[False]), statistics.median(ms[True])
        rows.append((db, len(sample), len(sentences) / len(sample), without, with_, with_ / without))
    reference.append(reference_loop_ms())
    head = (
        "| passages of | passages | sentence vectors a passage | ms CPU a passage, without | with sentences | ratio |\n"
        "|---|---:|---:|---:|---:|---:|"
    )
    table = "\n".join(
        [head] + [f"| {r[0]} | {r[1]} | {r[2]:.2f} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} |" for r in rows]
    )
    print(table)
    command = "bench/sentence_write_cpu.py " + " ".join(sys.argv[1:])
    Path(args.report).write_text(
        "# What sentence vectors cost a write\n\n"
        f"Produced by `{command}` on {date.today().isoformat()}; reference loop "
        f"{min(reference):.0f}-{max(reference):.0f} ms (before, after).\n\n"
        "The embedder's CPU (user + system, all its threads) per passage of a random sample of the base tenant's "
        f"passages, embedded in batches of the drain's size, in {args.rounds} interleaved rounds (median): "
        "a passage's own vector only (every tenant), and with the vectors of its sentences where it has 2 or more "
        "(a tenant that keeps them: Tenant.keeps_sentence_vectors). A small write is embedded in its own request "
        "(read-your-writes), so this is CPU the write's request pays.\n\n" + table + "\n"
    )


if __name__ == "__main__":
    main()
