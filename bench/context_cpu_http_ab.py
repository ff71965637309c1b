"""Service CPU per context request over HTTP, two versions served at once and asked in turn.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/context_cpu_http_ab.py --before-root ../wt-main --db engram_locomo_r4 --set locomo

bench/context_cpu_http.py measures one version at a time; on a shared machine whose speed swings 2x in
an hour, two such runs cannot show a change of 10%. Here both versions' servers (gunicorn as
bench/context_cpu_http.py starts it, each from its own checkout) serve the same database at the same
time, and each question is asked of both, one after the other, the first alternating. Per round, each
version's CPU: its gunicorn processes (all threads, from /proc's schedstat, in nanoseconds) and its own
PostgreSQL backends (those whose client port is a socket of its processes; a backend that ends during a
round is counted as far as it was read); the table gives every round and the medians of the
ratios after / before. Requests are sequential; the trace's items are written just after each answer,
so the client waits --settle seconds before the next question.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import SETS, _children, _cpu_ns, api_key, questions, reference_loop_ms  # noqa: E402
from context_latency import _env, _with_db, serve  # noqa: E402


def _serve(root: Path, db: str, port: int, workers: int, threads: int) -> subprocess.Popen[bytes]:
    # Connections kept for the run, so that a backend's CPU is read from its start to its end.
    keep = {"DB_CONN_MAX_AGE": os.environ.get("DB_CONN_MAX_AGE", "3600")}
    return serve(db, port, workers, threads, root=root, extra_env=keep, quiet=True)


_SOCKET = re.compile(r"socket:\[(\d+)\]")


def _local_ports(pids: set[int]) -> set[int]:
    """The local TCP ports of these processes' sockets (/proc/net/tcp and tcp6 by inode)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                match = _SOCKET.match(os.readlink(fd))
            except OSError:
                continue
            if match:
                inodes.add(match.group(1))
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class Side:
    def __init__(self, name: str, server: subprocess.Popen[bytes], conn: Any, db: str) -> None:
        self.name, self.server, self.conn, self.db = name, server, conn, db

    def backends(self) -> set[int]:
        ports = _local_ports(_children(self.server.pid))
        rows = self.conn.execute(
            "SELECT pid, client_port FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'",
            [self.db],
        ).fetchall()
        return {pid for pid, port in rows if port in ports}

    def cpu(self) -> tuple[float, dict[int, int]]:
        """The web processes' CPU (s) and each of the version's backends' (ns)."""
        return _cpu_ns(_children(self.server.pid)) / 1e9, {pid: _cpu_ns({pid}) for pid in self.backends()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before-root", required=True, help="the checkout of the version to compare against")
    parser.add_argument("--after-root", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--db", required=True)
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=30, help="questions a round, each asked of both")
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--settle", type=float, default=0.05)
    parser.add_argument("--ports", default="8871,8872")
    parser.add_argument("--output", default="")
    args = parser.parse_args()
    import httpx
    import psycopg

    pairs = questions(args.set)
    needed = args.warmup + args.rounds * args.requests
    if len(pairs) < needed:
        sys.exit(f"The set has {len(pairs)} questions; {needed} are needed.")
    key = api_key(args.db, SETS[args.set])
    conn = psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), "postgres"), autocommit=True)
    ports = [int(p) for p in args.ports.split(",")]
    roots = {"before": Path(args.before_root).resolve(), "after": Path(args.after_root).resolve()}
    sides = {
        name: Side(name, _serve(root, args.db, port, 2, 4), conn, args.db)
        for (name, root), port in zip(roots.items(), ports, strict=True)
    }
    clients = {
        name: httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=120)
        for name, port in zip(sides, ports, strict=True)
    }
    errors = 0
    ended = 0

    def ask(name: str, pair: tuple[str, str]) -> None:
        nonlocal errors
        body = {
            "subject": pair[0],
            "query": pair[1],
            "max_tokens": args.budget,
            "budgets": {"reserve": 0, "episodic": args.budget},
        }
        response = clients[name].post("/v1/context", json=body)
        if response.status_code != 200 or response.json()["tokens"]["total"] > args.budget:
            errors += 1
        time.sleep(args.settle)

    rounds: list[dict[str, dict[str, float]]] = []
    reference = [reference_loop_ms()]
    try:
        for pair in pairs[: args.warmup]:
            for name in sides:
                ask(name, pair)
        for index in range(args.rounds):
            series = pairs[args.warmup + index * args.requests : args.warmup + (index + 1) * args.requests]
            before = {name: side.cpu() for name, side in sides.items()}
            for i, pair in enumerate(series):
                for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                    ask(name, pair)
            result = {}
            for name, side in sides.items():
                web0, backends0 = before[name]
                web1, backends1 = side.cpu()
                # A backend opened during the round spent all its CPU in it; one that ended is left out.
                pg = sum(ns - backends0.get(pid, 0) for pid, ns in backends1.items()) / 1e9
                ended += len(set(backends0) - set(backends1))
                n = len(series)
                result[name] = {"web_ms": (web1 - web0) * 1000 / n, "pg_ms": pg * 1000 / n}
            rounds.append(result)
            b, a = result["before"], result["after"]
            print(
                f"round {index + 1}: before web {b['web_ms']:.1f} + PostgreSQL {b['pg_ms']:.1f} ms, "
                f"after {a['web_ms']:.1f} + {a['pg_ms']:.1f} ms",
                flush=True,
            )
    finally:
        for side in sides.values():
            side.server.terminate()
            side.server.wait(timeout=30)
        conn.close()
    reference.append(reference_loop_ms())
    text = report(args, rounds, reference, errors, ended)
    print(text)
    if args.output:
        Path(args.output).write_text(text)


def report(
    args: argparse.Namespace, rounds: list[dict[str, dict[str, float]]], reference: list[float], errors: int, ended: int
) -> str:
    def ratio(r: dict[str, dict[str, float]], key: str) -> float:
        if key == "total":
            return (r["after"]["web_ms"] + r["after"]["pg_ms"]) / (r["before"]["web_ms"] + r["before"]["pg_ms"])
        return r["after"][key] / r["before"][key]

    lines = [
        f"`bench/context_cpu_http_ab.py --before-root {args.before_root} --db {args.db} --set {args.set} "
        f"--budget {args.budget} --rounds {args.rounds} --requests {args.requests}`; reference loop "
        f"{reference[0]:.0f} ms before, {reference[1]:.0f} ms after; errors {errors}; backends that ended during a "
        f"round (left out of it): {ended}.",
        "",
        "| round | before: web ms | before: PostgreSQL ms | after: web ms | after: PostgreSQL ms | after / before |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(rounds, start=1):
        b, a = r["before"], r["after"]
        lines.append(
            f"| {i} | {b['web_ms']:.1f} | {b['pg_ms']:.1f} | {a['web_ms']:.1f} | {a['pg_ms']:.1f} | "
            f"{ratio(r, 'total'):.3f} |"
        )
    med = {k: statistics.median(ratio(r, k) for r in rounds) for k in ("web_ms", "pg_ms", "total")}
    lines += [
        "",
        f"Median ratio after / before: web {med['web_ms']:.3f}, PostgreSQL {med['pg_ms']:.3f}, together "
        f"{med['total']:.3f}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
