"""LoCoMo evidence recall of POST /v1/context, by halves, next to BM25, dense retrieval, a recent window
and full replay.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/locomo.py                 # fresh scratch database engram_router_eval
    .venv/bin/python bench/locomo.py --reuse         # keep the written, consolidated tenant: ask again
    .venv/bin/python bench/locomo.py --db engram_eval_mine --every 4 --budgets 1000,2000,4000 \
        --report /tmp/locomo.md                      # a quick sample, in a database of your own

Creates (as the owner) and migrates a scratch database of its own, then runs
`manage.py memory_eval locomo` there: the real write path (episodes through the API, every session
ended, consolidation and embeddings run to completion), then every question at 1,000 / 2,000 / 4,000 /
8,000 tokens; every figure for conversations 0-4, 5-9 and all, grounded recall (the headline) beside
plain recall, and answer containment. --no-consolidation leaves the sessions open (labelled as such in
the report).
Writes docs/benchmarks/locomo.md and locomo.png. bench/locomo_long.py, bench/updates.py and
bench/eval_latency.py run the other sets the same way.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
# Beside the checkout, or beside a parent of it (a git worktree sits a level deeper).
DATASET = next(
    (p / "shared/datasets/locomo/locomo10.json" for p in ROOT.parents if (p / "shared/datasets/locomo").is_dir()),
    ROOT.parent / "shared/datasets/locomo/locomo10.json",
)
DOCS = ROOT / "docs" / "benchmarks"


def django_ready() -> None:
    """For a bench that reads the project's code in process (scorers that import its models): the checkout on
    the path and Django set up, with the local settings unless the environment names others."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()


def _with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def scratch_env(db: str) -> dict[str, str]:
    """Create (as the owner) and migrate the scratch database `db`; the environment to run manage.py in it."""
    owner, app = os.environ.get("DATABASE_OWNER_URL"), os.environ.get("DATABASE_URL")
    if not owner or not app:
        sys.exit("DATABASE_OWNER_URL and DATABASE_URL are not set: run `set -a && . .data/engram.env && set +a`.")
    import psycopg

    with psycopg.connect(_with_db(owner, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db]).fetchone():
            conn.execute(f'CREATE DATABASE "{db}"')
        conn.execute(f'GRANT CONNECT ON DATABASE "{db}" TO "{urlparse(app).username}"')
    with psycopg.connect(_with_db(owner, db), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    env = {
        **os.environ,
        "DATABASE_URL": _with_db(app, db),
        "DATABASE_OWNER_URL": _with_db(owner, db),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "TQDM_DISABLE": "1",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    return env


def run_memory_eval(benchmark: str, db: str, eval_args: list[str], script: str) -> None:
    """`manage.py memory_eval <benchmark> ...` in a scratch database, citing this script's command line."""
    env = scratch_env(db)
    command = f"{script} " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    subprocess.run(
        [sys.executable, "manage.py", "memory_eval", benchmark, *eval_args, "--command-line", command.strip()],
        cwd=ROOT,
        env=env,
        check=True,
    )


def add_common(parser: argparse.ArgumentParser, *, db: str, report: str) -> None:
    """The options every evaluation script shares (passed on to memory_eval)."""
    parser.add_argument("--db", default=db)
    parser.add_argument("--reuse", action="store_true", help="keep the written tenant: only ask again")
    parser.add_argument("--budgets", default="1000,2000,4000,8000")
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="only every K-th question of each conversation")
    parser.add_argument("--methods", default="", help="memory_eval's methods (default: all)")
    parser.add_argument(
        "--no-consolidation", action="store_true", help="sessions left open: not the product, labelled as such"
    )
    parser.add_argument("--report", default=str(DOCS / report), help="the Markdown report to write")
    parser.add_argument("--json", default="", help="the JSON result (default: .data/<report name>.json)")


def common_eval_args(args: argparse.Namespace) -> list[str]:
    report = Path(args.report)
    out = ["--budgets", args.budgets, "--report", str(report)]
    out += ["--json", args.json or str(ROOT / ".data" / f"{report.stem}.json")]
    if args.reuse:
        out.append("--reuse")
    if args.conversations:
        out += ["--conversations", str(args.conversations)]
    if args.every > 1:
        out += ["--every", str(args.every)]
    if args.methods:
        out += ["--methods", args.methods]
    if args.no_consolidation:
        out.append("--no-consolidation")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(parser, db="engram_router_eval", report="locomo.md")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--chart", default="", help="the chart to write (default: beside the report, .png)")
    args = parser.parse_args()
    chart = args.chart or str(Path(args.report).with_suffix(".png"))
    eval_args = ["--dataset", args.dataset, "--chart", chart, *common_eval_args(args)]
    run_memory_eval("locomo", args.db, eval_args, "bench/locomo.py")


if __name__ == "__main__":
    main()
