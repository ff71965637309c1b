"""A memory's line as a context renders it: `- {speaker}: {text}`, whitespace made single spaces, an
excerpt of a longer text marked with "…" where it goes on. Computed when a passage is written, so that
a context request reads a stored line and its stored token count instead of building and pricing each
one (episodic.passages, router.rendering)."""

from __future__ import annotations

from core.tokens import count_tokens

LINE_PREFIX = "- "


def said_line(speaker: str, content: str, *, opens: bool = True, closes: bool = True) -> str:
    """The text of the line (without LINE_PREFIX): `{speaker}: {content}`, or the content alone without a
    speaker; "… " before an excerpt that does not `open` its text and " …" after one that does not
    `close` it."""
    excerpt = f"{'' if opens else '… '}{content}{'' if closes else ' …'}"
    raw = f"{speaker}: {excerpt}" if speaker else excerpt
    return " ".join(raw.split())


def line_tokens_of(text: str) -> int:
    """Tokens of the rendered line `LINE_PREFIX + text` (cl100k)."""
    return count_tokens(LINE_PREFIX + text)
