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


def section_pieces(name: str, items: Sequence[Candidate], fmt: str) -> list[str | Candidate]:
    """A section's lines in order, joined by newlines: its header, each block's header and footer as
    text, each item as itself (its line is item_line). None for no items."""
    if not items:
        return []
    pieces: list[str | Candidate] = [section_header(name, fmt)]
    current_group: str | None = None
    for item in sorted(items, key=lambda c: c.order):
        if item.group_header and item.group != current_group:
            pieces.append(group_header(item.group_header, fmt))
        current_group = item.group
        pieces.append(item)
    footer = section_footer(name, fmt)
    if footer:
        pieces.append(footer)
    return pieces


def render_section(name: str, items: Sequence[Candidate], fmt: str) -> str:
    return "\n".join(p if isinstance(p, str) else item_line(p) for p in section_pieces(name, items, fmt))


def layer_sections(layer: Layer, items: Iterable[Candidate], fmt: str) -> list[list[str | Candidate]]:
    """The layer's sections that have items, in order, each as its pieces (section_pieces); the layer's
    text is them joined by SECTION_SEPARATOR."""
    by_section: dict[str, list[Candidate]] = {}
    for item in items:
        by_section.setdefault(item.section, []).append(item)
    return [section_pieces(name, by_section[name], fmt) for name in SECTIONS[layer] if by_section.get(name)]


def render_layer(layer: Layer, items: Iterable[Candidate], fmt: str) -> str:
    return SECTION_SEPARATOR.join(
        "\n".join(p if isinstance(p, str) else item_line(p) for p in pieces)
        for pieces in layer_sections(layer, items, fmt)
    )


def render_prompt(layer_texts: Iterable[str]) -> str:
    return SECTION_SEPARATOR.join(t for t in layer_texts if t)
