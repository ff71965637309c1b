"""Word lists kept as data files beside the code that reads them.

A file's first line says where its words came from; other lines starting with `#` are comments, a line
`[name]` opens a section, every other line is one entry. Each file is read once per process.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path


@functools.cache
def sections(path: Path) -> dict[str, tuple[str, ...]]:
    """The entries of the data file at `path`, by section ("" for those before the first section)."""
    out: dict[str, list[str]] = {}
    current = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
            out.setdefault(current, [])
            continue
        out.setdefault(current, []).append(line)
    return {key: tuple(values) for key, values in out.items()}


@functools.cache
def words(path: Path) -> frozenset[str]:
    """Every entry of the data file at `path`, whatever its section."""
    return frozenset(entry for entries in sections(path).values() for entry in entries)


def alternation(entries: frozenset[str] | tuple[str, ...]) -> str:
    """Entries as a regular-expression alternation, longest first."""
    return "|".join(re.escape(entry) for entry in sorted(set(entries), key=lambda e: (-len(e), e)))
