"""Where the web process's CPU goes during context requests over HTTP: py-spy samples of the gunicorn
workers while bench/context_cpu_http.py's requests are asked one after the other.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/context_web_profile.py --db engram_locomo_r4 --set locomo --budget 1000 \
        --py-spy /path/to/py-spy

The server, the key, the questions and their order are bench/context_cpu_http.py's. py-spy (not a
dependency of the project: pass its path) records the workers' thread that holds the interpreter (so
native code that lets go of it, the query's embedding in onnxruntime, is not sampled) in its raw format; the report gives each function's own
samples (the frame that was running) and the samples under each of a few parts of the request
(authentication, the router, the answer's JSON, ...), as shares of all samples. Sampling slows the
workers; the shares are what compare, not the time.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import SETS, api_key, questions, reference_loop_ms  # noqa: E402
from context_latency import serve  # noqa: E402

# A request's parts, by the first frame (from the outside in) that names one of these functions.
PARTS = (
    ("authentication", ("authenticate (api/auth.py",)),
    ("throttle, permissions", ("check_throttles (", "check_permissions (")),
    ("request body, input validation", ("is_valid (", "_load_data_and_files (")),
    ("the trace's items (after the answer)", ("trace_items_record (",)),
    ("query embedding", ("embed_one (", "embed_query (", "query_embedding (")),
    ("history's candidates", ("episode_candidates (",)),
    ("facts' candidates (on the reader thread)", ("fact_candidates (", "semantic_candidates (")),
    ("procedures' candidates (on the reader thread)", ("procedure_candidates (",)),
    ("the reader and writer threads' own (their transactions, futures)", ("_scoped (", "set_result (")),
    ("packing and rendering", ("assemble (", "explore (")),
    ("the trace row", ("objects.create (", "create (django/db/models/query.py")),
    ("the answer's dicts", ("item_dict (", "traced_dict (", "context_body (")),
    ("policy, other", ("offer (router/policy.py",)),
    ("JSON rendering", ("render (rest_framework/renderers.py", "OrjsonRenderer.render (")),
    ("context_build, other", ("context_build (",)),
    ("middleware, DRF, front", ("get_response (", "_WsgiCall.run (")),
)
FRAME = re.compile(r"^(?P<func>.+?) \((?P<file>[^:)]+)(?::(?P<line>\d+))?\)$")


def _name(frame: str) -> str:
    match = FRAME.match(frame)
    if match is None:
        return frame
    return f"{match['func']} ({match['file']})"


def summarise(raw: Path, top: int) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    own: collections.Counter[str] = collections.Counter()
    parts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        # py-spy's raw lines may start with the process and thread; the frames are "func (file:line)".
        frames = [f for f in frames if FRAME.match(f)]
        if not frames:
            continue
        total += n
        own[_name(frames[-1])] += n
        part = "the event loop (gunicorn's HTTP, the access line)"
        for frame in frames:
            label = next((p for p, needles in PARTS if any(frame.startswith(x) or x in frame for x in needles)), None)
            if label is not None:
                part = label
                # The innermost of nested parts names it: keep looking inward.
        parts[part] += n
    return total, own.most_common(top), parts.most_common()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--py-spy", required=True, help="path of a py-spy executable")
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument(
        "--all-running",
        action="store_true",
        help="every thread py-spy takes for running, not only the one holding the interpreter (on a loaded "
        "machine a thread woken by PostgreSQL's answer waits runnable, and is counted in psycopg's wait)",
    )
    parser.add_argument("--raw", default="", help="keep py-spy's raw samples here")
    parser.add_argument("--summarise", default="", help="only summarise this raw file")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    if args.summarise:
        _print(*summarise(Path(args.summarise), args.top))
        return
    import httpx

    pairs = questions(args.set, args.conversations)[: args.warmup + args.requests]
    key = api_key(args.db, SETS[args.set])
    server = serve(args.db, args.port, 2, 4)
    raw = Path(args.raw or f"/tmp/context_web_profile_{args.budget}.txt")
    try:
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{args.port}", headers={"Authorization": f"Bearer {key}"}, timeout=60
        )

        def ask(pair: tuple[str, str]) -> None:
            body = {
                "subject": pair[0],
                "query": pair[1],
                "max_tokens": args.budget,
                "budgets": {"reserve": 0, "episodic": args.budget},
            }
            response = client.post("/v1/context", json=body)
            assert response.status_code == 200, response.text[:300]

        for pair in pairs[: args.warmup]:
            ask(pair)
        reference = reference_loop_ms()
        spy = subprocess.Popen(
            [args.py_spy, "record", "--pid", str(server.pid), "--subprocesses", "--format", "raw", "--rate",
             str(args.rate), "--output", str(raw), "--nonblocking", *([] if args.all_running else ["--gil"])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(2)
        for pair in pairs[args.warmup :]:
            ask(pair)
            time.sleep(0.05)  # the trace's items are written just after the answer
        spy.send_signal(2)
        spy.wait(timeout=60)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"{args.requests} sequential requests at {args.budget} tokens on {args.db} (reference loop {reference:.1f} ms)"
    )
    _print(*summarise(raw, args.top))


def _print(total: int, own: list[tuple[str, int]], parts: list[tuple[str, int]]) -> None:
    print(f"\n{total} samples of running threads\n\n| function (own samples) | share |\n|---|---:|")
    for name, n in own:
        print(f"| `{name}` | {100 * n / total:.1f}% |")
    print("\n| part of the request (all samples under it) | share |\n|---|---:|")
    for name, n in parts:
        print(f"| {name} | {100 * n / total:.1f}% |")


if __name__ == "__main__":
    main()
