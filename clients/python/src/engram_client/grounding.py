"""Which context items an answer used: the feedback an agent owes Engram, decided from the answer.

An item is used when the answer cites it or restates one of its lines:

- Cites: the item's id (`episode:12`, `fact:<uuid>`, ... as the context names it) stands in the answer
  as a whole (not as part of a longer id: `episode:12` is not cited by `episode:123`). The rendered
  prompt gives items no marker of their own, so an agent that cites names the ids it was given.
- Restates: the server's grounding rule (DESIGN.md invariant 13, evaluation/grounding.py), with the
  answer in place of the cited turn. An item's text is cut into lines at line breaks, ellipses and
  sentence ends, after the rendering's own words are taken off (a leading label of one or two words
  and a colon, a fact's trailing `(<day>, confidence <c>)`). A line of n content terms (lower-cased
  runs of letters and digits, stopwords out, a light stemmer applied, each counted once) is restated
  when at least min(3, 40% of n rounded up) of them, and never fewer than 2 when n is 2 or more, are
  terms of the answer.

This module is a copy of the server's rule (the client cannot import the server); the server's test
suite holds the two equal on a shared table of cases (tests/client/test_grounding_agrees.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from importlib.resources import files
from typing import Any, cast

from engram_client.models import Context, context_items

STOPWORDS = frozenset(
    word
    for line in files("engram_client").joinpath("stopwords.txt").read_text(encoding="utf-8").splitlines()
    if not line.startswith("#")
    for word in line.split()
)
_WORD = re.compile(r"[a-z0-9]+")
_SUFFIXES = ("ing", "ed", "es", "s")
_LABEL = re.compile(r"^\s*[^\s:]+(?: [^\s:]+)?: ")
_FACT_NOTE = re.compile(r"\s*\((?:[^()]*, )?confidence \d+(?:\.\d+)?\)\s*$")
_LINE_END = re.compile(r"\n|…|(?<=[.!?])\s+")


def _term(word: str) -> str:
    if word in STOPWORDS:
        return ""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """The content terms of a text, in order, repeats kept."""
    return [t for t in map(_term, _WORD.findall(text.lower())) if t]


def item_lines(text: str) -> tuple[frozenset[str], ...]:
    """The content terms of each line of an item's text (lines without any left out)."""
    said = _FACT_NOTE.sub("", _LABEL.sub("", text, count=1))
    return tuple(t for t in (frozenset(terms(line)) for line in _LINE_END.split(said)) if t)


def terms_needed(count: int) -> int:
    """How many of a line's `count` content terms the answer must hold for the line to be restated."""
    return max(min(2, count), min(3, math.ceil(0.4 * count)))


def _restated(lines: tuple[frozenset[str], ...], answer: frozenset[str]) -> bool:
    return any(len(line & answer) >= terms_needed(len(line)) for line in lines)


def restates(item_text: str, answer: str) -> bool:
    """Whether the answer restates a line of the item."""
    return _restated(item_lines(item_text), frozenset(terms(answer)))


def cites(item_id: str, answer: str) -> bool:
    """Whether the item's id stands in the answer as a whole id."""
    return re.search(rf"(?<![\w:-]){re.escape(item_id)}(?![\w:-])", answer) is not None


def used_item_ids(answer: str, offered: Context | Iterable[Mapping[str, Any]]) -> list[str]:
    """The ids of the offered items that the answer cites or restates, in the order offered, each once.

    `offered` is a context as `EngramClient.context` returns it, or its items (anything with `id` and
    `text`: `context_items(ctx)`, the LangGraph state's `memory_items`, MCP `recall`'s `items`, a
    trace's `offered`)."""
    # A context is one mapping (TypedDicts are dicts); its items are a sequence of them.
    items = context_items(cast(Context, offered)) if isinstance(offered, Mapping) else offered
    said = frozenset(terms(answer))
    used: dict[str, None] = {}
    for item in items:
        item_id = str(item["id"])
        if item_id not in used and (cites(item_id, answer) or _restated(item_lines(str(item["text"])), said)):
            used[item_id] = None
    return list(used)
