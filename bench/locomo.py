"""LoCoMo evidence recall of POST /v1/context, by halves, next to BM25, dense retrieval, a recent window
and full replay.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/locomo.py                 # fresh scratch database engram_router_eval
    .venv/bin/python bench/locomo.py --reuse         # keep the imported, embedded tenant

Creates (as the owner) and migrates a scratch database of its own, then runs
`manage.py memory_eval locomo` there: import with import_conversations, embed with MiniLM, ask every
question at 1,000 / 2,000 / 4,000 / 8,000 tokens; every figure for conversations 0-4, 5-9 and all.
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
DATASET = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"
DOCS = ROOT / "docs" / "benchmarks"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--budgets", default="1000,2000,4000,8000")
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="only every K-th question of each conversation")
    parser.add_argument("--dataset", default=str(DATASET))
    args = parser.parse_args()
    eval_args = [
        "--dataset", args.dataset, "--budgets", args.budgets, "--json", str(ROOT / ".data" / "locomo.json"),
        "--report", str(DOCS / "locomo.md"), "--chart", str(DOCS / "locomo.png"),
    ]  # fmt: skip
    if args.reuse:
        eval_args.append("--reuse")
    if args.conversations:
        eval_args += ["--conversations", str(args.conversations)]
    if args.every > 1:
        eval_args += ["--every", str(args.every)]
    run_memory_eval("locomo", args.db, eval_args, "bench/locomo.py")


if __name__ == "__main__":
    main()
