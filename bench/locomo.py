"""LoCoMo evidence recall of POST /v1/context next to BM25, a recent window and full replay.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/locomo.py                 # fresh scratch database engram_router_eval
    .venv/bin/python bench/locomo.py --reuse         # keep the imported, embedded tenant

Creates (as the owner) and migrates a scratch database of its own, then runs
`manage.py memory_eval locomo` there: import with import_conversations, embed with MiniLM, ask every
question at 1,000 / 2,000 / 4,000 / 8,000 tokens. Writes docs/benchmarks/locomo.md and locomo.png.
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


def _with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--budgets", default="1000,2000,4000,8000")
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--dataset", default=str(DATASET))
    args = parser.parse_args()
    owner, app = os.environ.get("DATABASE_OWNER_URL"), os.environ.get("DATABASE_URL")
    if not owner or not app:
        sys.exit("DATABASE_OWNER_URL and DATABASE_URL are not set: run `set -a && . .data/engram.env && set +a`.")
    import psycopg

    with psycopg.connect(_with_db(owner, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.db]).fetchone():
            conn.execute(f'CREATE DATABASE "{args.db}"')
        conn.execute(f'GRANT CONNECT ON DATABASE "{args.db}" TO "{urlparse(app).username}"')
    env = {
        **os.environ,
        "DATABASE_URL": _with_db(app, args.db),
        "DATABASE_OWNER_URL": _with_db(owner, args.db),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "TQDM_DISABLE": "1",
    }
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    command = "bench/locomo.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    docs = ROOT / "docs" / "benchmarks"
    eval_args = [
        "memory_eval", "locomo", "--dataset", args.dataset, "--budgets", args.budgets,
        "--json", str(ROOT / ".data" / "locomo.json"), "--report", str(docs / "locomo.md"), "--chart", str(docs / "locomo.png"),
        "--command-line", command.strip(),
    ]  # fmt: skip
    if args.reuse:
        eval_args.append("--reuse")
    if args.conversations:
        eval_args += ["--conversations", str(args.conversations)]
    subprocess.run([*manage, *eval_args], cwd=ROOT, env=env, check=True)


if __name__ == "__main__":
    main()
