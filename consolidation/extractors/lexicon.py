"""The word lists the extractors read, kept as data beside them (consolidation/extractors/data/).

A file's first line says where its words came from; other lines starting with `#` are comments, a line
`[name]` opens a section, every other line is one entry (lower case unless the case matters). Each file
is read once per process.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


@functools.cache
def sections(name: str) -> dict[str, tuple[str, ...]]:
    """The entries of data file `name`, by section ("" for those before the first section)."""
    out: dict[str, list[str]] = {}
    current = ""
    for raw in (DATA / name).read_text(encoding="utf-8").splitlines():
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
def words(name: str) -> frozenset[str]:
    """Every entry of data file `name`, whatever its section."""
    return frozenset(entry for entries in sections(name).values() for entry in entries)


def alternation(name: str) -> str:
    """The entries of data file `name` as a regular-expression alternation, longest first."""
    return "|".join(re.escape(entry) for entry in sorted(words(name), key=lambda e: (-len(e), e)))
