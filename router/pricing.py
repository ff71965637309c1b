"""What a candidate's line costs in tokens, priced once per candidate: below both the candidates'
builders (router.candidates), which price lines from stored counts as they make them, and packing,
which chooses by value per token. Neither calls the other for it."""

from __future__ import annotations

from functools import lru_cache

from core.tokens import count_tokens
from router.rendering import LINE_PREFIX, item_line
from router.types import Candidate


def line_tokens(item: Candidate) -> int:
    """Tokens of the item's rendered line (without its newline), counted once per candidate."""
    if item.line_tokens < 0:
        item.line_tokens = count_tokens(item_line(item))
    return item.line_tokens


@lru_cache(maxsize=1024)
def _said_prefix(speaker: str) -> tuple[int, int]:
    head = f"{speaker}:" if speaker else ""
    return count_tokens(head), count_tokens(LINE_PREFIX + head if head else LINE_PREFIX.rstrip())


@lru_cache(maxsize=65_536)
def _leading_space_tokens(word: str) -> int:
    return count_tokens(" " + word) - count_tokens(word)


def said_tokens(speaker: str, content: str, content_tokens: int) -> tuple[int, int] | None:
    """The exact token counts of the text `{speaker}: {content}` (or `content` alone without a
    speaker) and of its rendered line, from the content's stored count (Episode.token_count), without
    running the tokeniser over the line: a context prices hundreds of episode lines, and counting each
    cost more than the rest of building it.

    Exact because cl100k splits text into chunks before merging, and merges never cross a chunk: the
    line "- {speaker}: {content}" is the chunks of "- {speaker}:" followed by those of " {content}",
    which are the content's own but for its first word, which takes the space. The caller guarantees
    that the content is normalised (single spaces, no other whitespace, not empty) and that
    `content_tokens` is its count; None when the count is unusable. tests/router/test_packing.py checks
    the identity on random texts."""
    if content_tokens <= 0 or not content:
        return None
    spaced = content_tokens + _leading_space_tokens(content.split(" ", 1)[0])
    head, line_head = _said_prefix(speaker)
    return (head + spaced if speaker else content_tokens), line_head + spaced
