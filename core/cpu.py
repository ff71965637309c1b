"""CPU time of processes on this machine, read from /proc: what the benchmarks and the evaluation
report per request beside wall time."""

from __future__ import annotations

import os
from pathlib import Path


def postgres_cpu_seconds() -> float | None:
    """CPU time (user + system) of every PostgreSQL process on this machine, or None off Linux."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    ticks = 0
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # the process ended meanwhile
            continue
        name, _, rest = text.partition(") ")
        if name.endswith("(postgres"):
            fields = rest.split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")
