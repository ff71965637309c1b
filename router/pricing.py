"""What a candidate's line costs in tokens, priced once per candidate: below both the candidates'
builders (router.candidates), which price lines from stored counts as they make them, and packing,
which chooses by value per token. Neither calls the other for it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from core.tokens import count_tokens
from router.rendering import LINE_PREFIX, SECTION_SEPARATOR, item_line, layer_sections
from router.types import Candidate, Layer


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


def _tail(text: str) -> str:
    """The end of `text` from a place where cl100k starts a chunk whatever follows the text: its last
    space, when that space follows a character that is not whitespace (no chunk runs from such a
    character into a space: only newlines are taken after punctuation); else the whole text."""
    k = text.rfind(" ")
    if k > 0 and not text[k - 1].isspace():
        return text[k:]
    return text


@lru_cache(maxsize=65_536)
def _junction_tokens(tail: str, separator: str) -> int:
    return count_tokens(tail + separator) - count_tokens(tail)


def joined_tokens(pieces: Sequence[tuple[str, int]], separator: str) -> int:
    """The exact tokens of the texts joined by `separator` (newlines), from each text's count: cl100k
    merges nothing across chunks, and a chunk may only run from the end of a text into the newlines
    after it (punctuation takes them), never on into the next text, which here always begins with a
    character that is not whitespace (a list marker, a header, a tag). So each join costs what the
    separator costs after the last chunk of the text before it; tests/router/test_pricing.py checks the
    identity against tiktoken."""
    if not pieces:
        return 0
    total = sum(count for _, count in pieces)
    for text, _ in pieces[:-1]:
        total += _junction_tokens(_tail(text), separator)
    return total


def _piece(piece: str | Candidate) -> tuple[str, int]:
    if isinstance(piece, str):
        return piece, count_tokens(piece)
    return item_line(piece), line_tokens(piece)


def layer_tokens(layer: Layer, items: Iterable[Candidate], fmt: str) -> tuple[int, str]:
    """The exact tokens of router.rendering.render_layer(layer, items, fmt), from the lines' counts
    (line_tokens) and the headers', without counting the layer's text; and the text's last line, which
    the prompt's count needs (prompt_tokens)."""
    sections = []
    last = ""
    for pieces in layer_sections(layer, items, fmt):
        lines = [_piece(p) for p in pieces]
        sections.append((lines[-1][0], joined_tokens(lines, "\n")))
        last = lines[-1][0]
    return joined_tokens(sections, SECTION_SEPARATOR), last


def prompt_tokens(layers: Iterable[tuple[int, str]]) -> int:
    """The exact tokens of router.rendering.render_prompt over the layers' texts, from each layer's
    count and last line (layer_tokens): the prompt is not counted again."""
    return joined_tokens([(last, count) for count, last in layers if count], SECTION_SEPARATOR)
