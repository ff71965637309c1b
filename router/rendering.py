"""The prompt: labelled sections, one block per session and day with its date, one line per item.

Rendering is a pure function of the chosen items, so that packing can measure what it costs and the
token counts in the answer are those of the text the caller receives.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date, datetime
from functools import lru_cache

from core.lines import LINE_PREFIX
from router.types import Candidate, Layer

SECTIONS: dict[Layer, tuple[str, ...]] = {
    "procedural": ("Procedures",),
    "semantic": ("Known facts",),
    "episodic": ("Recent activity", "Relevant history"),
    "working": ("Working notes",),
}
SECTION_SEPARATOR = "\n\n"


@lru_cache(maxsize=4096)
def _day(year: int, month: int, day: int) -> str:
    return f"{day} {date(year, month, day):%b %Y}"


def format_day(moment: datetime) -> str:
    # strftime costs more than the rest of a line, and a context holds hundreds of lines over few days.
    return _day(moment.year, moment.month, moment.day)


def section_header(name: str, fmt: str) -> str:
    if fmt == "xml":
        return f"<{name.lower().replace(' ', '_')}>"
    return f"## {name}"


def section_footer(name: str, fmt: str) -> str:
    return f"</{name.lower().replace(' ', '_')}>" if fmt == "xml" else ""


def group_header(label: str, fmt: str) -> str:
    return f"[{label}]" if fmt == "xml" else f"### {label}"


def item_line(item: Candidate) -> str:
    return LINE_PREFIX + item.text


def render_section(name: str, items: Sequence[Candidate], fmt: str) -> str:
    if not items:
        return ""
    lines = [section_header(name, fmt)]
    current_group: str | None = None
    for item in sorted(items, key=lambda c: c.order):
        if item.group_header and item.group != current_group:
            lines.append(group_header(item.group_header, fmt))
        current_group = item.group
        lines.append(item_line(item))
    footer = section_footer(name, fmt)
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def render_layer(layer: Layer, items: Iterable[Candidate], fmt: str) -> str:
    by_section: dict[str, list[Candidate]] = {}
    for item in items:
        by_section.setdefault(item.section, []).append(item)
    parts = [render_section(name, by_section.get(name, []), fmt) for name in SECTIONS[layer]]
    return SECTION_SEPARATOR.join(p for p in parts if p)


def render_prompt(layer_texts: Iterable[str]) -> str:
    return SECTION_SEPARATOR.join(t for t in layer_texts if t)
