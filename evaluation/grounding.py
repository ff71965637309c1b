"""Grounded citations and answer containment: the two readings of a context that do not take its
sources' word for it.

A context item's source counts as evidence only when the item restates the cited turn: the item is a
verbatim excerpt of it (evaluation.recall resolves that), or one of the item's lines shares enough
content terms with the turn. A fact or a session summary cites every turn it was drawn from; only the
turns one of its lines restates are grounded.

- A line: the item's text cut at line breaks, at ellipses ("…") and at sentence ends ('.', '!' or '?'
  followed by white space), after the rendering's own words are taken off: a leading label of one or
  two words and a colon (`speaker: ` of a turn, `summary: ` of a session summary) and a fact's trailing
  `(<day>, confidence <c>)`.
- Content terms: core.terms.terms (lower-cased runs of letters and digits, core.terms.STOPWORDS
  dropped, its light stemmer applied), each counted once.
- A line of n content terms restates a turn when at least terms_needed(n) of them are terms of the
  turn: min(3, 40% of n rounded up), and never fewer than 2 when n is 2 or more; so 1 of 1, 2 of 2 to
  5, 3 of 6 and more. A line without content terms restates nothing.

Answer containment: a gold answer is contained in a prompt when every content term of the answer is a
content term of the prompt, wherever it stands. A number is the term of its digits (2022 -> "2022";
"two" is not 2); a date is its day, month name and year as terms ("7 May 2023": "7", "may", "2023"),
so the prompt's day headers count; a list ("pottery, camping, painting") needs every item. An answer
without content terms ("No") is not scored.
"""

from __future__ import annotations

import math
import re

from core.terms import terms

_LABEL = re.compile(r"^\s*[^\s:]+(?: [^\s:]+)?: ")
_FACT_NOTE = re.compile(r"\s*\((?:[^()]*, )?confidence \d+(?:\.\d+)?\)\s*$")
_LINE_END = re.compile(r"\n|…|(?<=[.!?])\s+")


def content_terms(text: str) -> frozenset[str]:
    return frozenset(terms(text))


def item_lines(text: str) -> tuple[frozenset[str], ...]:
    """The content terms of each line of an item's text (lines without any left out)."""
    said = _FACT_NOTE.sub("", _LABEL.sub("", text, count=1))
    return tuple(t for t in map(content_terms, _LINE_END.split(said)) if t)


def terms_needed(count: int) -> int:
    """How many of a line's `count` content terms must be terms of a turn for the line to restate it."""
    return max(min(2, count), min(3, math.ceil(0.4 * count)))


def line_restates(line: frozenset[str], turn: frozenset[str]) -> bool:
    return bool(line) and len(line & turn) >= terms_needed(len(line))


def lines_restate(lines: tuple[frozenset[str], ...], turn: frozenset[str]) -> bool:
    return any(line_restates(line, turn) for line in lines)


def restates(item_text: str, turn_text: str) -> bool:
    """Whether a line of the item restates the turn (by the rule above, not by being an excerpt)."""
    return lines_restate(item_lines(item_text), content_terms(turn_text))


def answer_terms(answer: object) -> frozenset[str]:
    """The content terms of a gold answer as the data gives it (text or a number)."""
    return content_terms(str(answer)) if answer is not None else frozenset()


def contains_answer(answer: frozenset[str], prompt: str | frozenset[str]) -> bool | None:
    """Whether every content term of the answer is in the prompt (text, or its content terms); None
    when the answer has none."""
    if not answer:
        return None
    return answer <= (prompt if isinstance(prompt, frozenset) else content_terms(prompt))
