"""The fenced code blocks of the documentation, read from the Markdown as a reader sees them.

A block is run by tests/docs/test_docs_run.py when its info string names a language the runner
speaks (`sh`, `python`, `http`); `json` blocks must parse; `text` blocks are shown, not run. Any
other block, and a block of a runnable language that must not run, carries a marker on the line
before its fence saying why: `<!-- not run: starts the servers -->` (CONTRIBUTING.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
# The pages a reader follows; docs/benchmarks/ is written by the bench scripts, whose commands take minutes.
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

RUN = {"sh": "sh", "bash": "sh", "shell": "sh", "python": "python", "http": "http"}
SHOWN = {"json", "text"}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*not run:\s*(?P<reason>.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str  # the info string's first word, lower case ("" when there is none)
    code: str
    not_run: str | None  # the marker's reason, or None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runner(self) -> str | None:
        return None if self.not_run is not None else RUN.get(self.language)


def blocks(path: Path) -> list[Block]:
    """Every fenced block of one Markdown file, in order; an indented fence (in a list item) counts,
    its indentation removed from the code."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        info = opening["info"].strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines):
            closing = _FENCE.match(lines[i])
            if closing and closing["fence"].startswith(fence) and not closing["info"].strip():
                break
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1
        before = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = _MARKER.match(before)
        found.append(
            Block(
                path=path,
                line=start + 1,
                language=info.split()[0].lower() if info else "",
                code="\n".join(body) + "\n",
                not_run=marker["reason"] if marker else None,
            )
        )
    return found
