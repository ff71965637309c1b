"""Predicates: what a statement says about its subject once its values are masked (issue 42).

A statement names typed values: names (of people, places, organisations and products, with a version
when one is said), numbers with their unit, times, days and dates, amounts, addresses. Its *frame* is
the statement with every typed value masked and the grammar of change taken out ("now", "switched",
"from X", "instead of X"): "Ana's API gateway is Kong." and "Ana replaced Kong with Envoy as their API
gateway." have near frames and values of one kind that differ, so the second supersedes the first.

This module is grammar and formats only: which spans are values, which one a statement holds now
(`current_value`), which it says were left (`left_values`), how a frame reads (`frame`) and, given the
similarity of two frames, whether the later statement supersedes the earlier (`judge`). The word
lists are data files in semantic/data/. semantic.services applies the decision in the merge.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

from core import lexicon
from core.timestamps import MONTHS
from semantic.values import NUMBER_IN_WORDS, number_in_words, value_spans, values_same

DATA = Path(__file__).resolve().parent / "data"

# Facts of what happened (an event, a plan) stay true when a later value of the same kind is said: they
# are neither superseded by the mechanism nor supersede anything.
EVENT_ATTRIBUTES = frozenset({"experiences", "plans", "known_issues", "instructions", "constraints"})
# The attributes an extractor gives a statement that fits no named slot (consolidation/extractors/
# vocabulary.py): a fact of one of them may say the same thing as a fact of any attribute. Two named
# attributes (a writer's "database" and "cache") are two predicates unless the later statement tells
# a change.
GENERIC_ATTRIBUTES = frozenset({"about", "relations", "possessions", "preferences", "uses", "likes", "prefers"})

# The cosine of two frames (MiniLM, unit vectors) above which the later statement says the same thing
# about the subject: when it names the earlier value as the one it left, when it uses the grammar of
# change, and when it says neither.
SIMILAR_NAMING_OLD = 0.45
SIMILAR_WITH_CHANGE = 0.60
SIMILAR_PLAIN = 0.88
# Two states said with a word or two ("pescatarian", "vegan"; "pending", "approved") are values of one
# predicate only when their own meanings are this near (MiniLM cosine of the values alone):
# docs/consolidation.md gives the pairs it was set on.
SIMILAR_TERMS = 0.40
# ... and this near when both are said with the same verb other than a copula ("eats vegan", "eats
# pescatarian": 0.32; "works remote", "works hybrid": 0.34): the verb says which dimension they are of,
# where "is" says none ("tidy" and "small": 0.21; "cheap" and "noisy": 0.31, said of a flat with "is").
SIMILAR_TERMS_SAME_VERB = 0.30
_COPULA = re.compile(r"\b(?:is|are|am|was|were|be|been|being|become|became|becomes|get|gets|got|seems?|feels?)\b", re.I)
MAX_TERM_WORDS = 3


def _words(name: str) -> frozenset[str]:
    return lexicon.words(DATA / name)


def _section(name: str, section: str) -> tuple[str, ...]:
    return lexicon.sections(DATA / name).get(section, ())


def section(name: str, section: str) -> tuple[str, ...]:
    """One section of a word list of semantic/data/ ("change.txt", "before the old value")."""
    return _section(name, section)


@dataclasses.dataclass(frozen=True)
class Typed:
    """A typed value in a text: its span, its kind and, for a count, its unit ("5 people": person)."""

    start: int
    end: int
    kind: str
    text: str
    unit: str = ""
    # A range said as one value ("9am to 5pm", "Monday to Friday"): its "from" marks no old value.
    ranged: bool = False


_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_WEEKDAY = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_TIME = re.compile(
    r"(?<![\w:.])\d{1,2}(?::\d{2})\s?(?:[ap]\.?m\.?)?(?![\w:])|(?<![\w:.])\d{1,2}\s?[ap]\.?m\.?(?!\w)", re.I
)
_DAY = re.compile(rf"\b(?:{_WEEKDAY})s?\b|\b(?:{_MONTH})\b(?:\s+\d{{4}}\b)?", re.I)
_YEAR = re.compile(r"(?<![\w.])(?:19|20)\d\d(?![\w.])")
# An identifier written with hyphens, digits or a sigil: "us-east-1", "#backend-team", "@ana".
_IDENTIFIER = re.compile(r"(?<![\w#@-])(?:[#@][\w-]+|[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*-\d[\w-]*)(?![\w-])")
_TIME_UNIT = "seconds?|minutes?|hours?|days?|weeks?|months?|years?"
# How often: "twice a week", "3 times per month", "every other day", "every two weeks", "fortnightly".
_PERIOD = r"(?:day|week|fortnight|month|quarter|year|weekday|weekend|morning|evening|night)"
_FREQUENCY = re.compile(
    rf"(?<![\w-])(?:(?:once|twice|thrice|(?:\d+|{NUMBER_IN_WORDS}|a few|several|a couple of)\s+times)\s+"
    rf"(?:a|an|per|each|every)\s+{_PERIOD}"
    rf"|every\s+(?:other\s+|second\s+|third\s+|(?:\d+|{NUMBER_IN_WORDS})\s+)?{_PERIOD}s?"
    # "weekly" as an adverb; before a noun ("my weekly one-on-one") it says which thing, not how often
    r"|(?:bi-?)?(?:daily|weekly|monthly|quarterly|yearly|annually|fortnightly|nightly|hourly)"
    r"(?!\s+(?!(?:now|again|instead|too|and|or|but|so|since|until|from|at|on|in|with|for)\b)[a-z]))(?![\w-])",
    re.I,
)
_PER_PERIOD = re.compile(rf"\b(?:a|an|per|each|every)\s+{_PERIOD}\b", re.I)


def how_often(text: str) -> bool:
    """The text says how often or how much per period ("twice a week", "8 hours a night", "30 minutes a
    day"): a habit, whatever its verb's form."""
    return bool(_FREQUENCY.search(text)) or any(
        t.kind == "count" and _PER_PERIOD.match(text, t.end + 1) for t in typed_spans(text)
    )


# A count in words: "three weeks", "thirty-five engineers", "a dozen eggs"; "a" or "an" counts only a
# unit of time ("an hour"). Neither inside a compound written with hyphens ("one-on-one", "second-hand").
# A number of two words or of the teens and tens stands alone too ("I'm thirty-five", "turned forty").
_COUNT_IN_WORDS = re.compile(
    rf"(?<![\w-])(?:(?P<number>{NUMBER_IN_WORDS}|a dozen|a couple of)(?:[ -](?P<unit>[a-z][a-z]+))?|"
    rf"(?:half an?|an?) (?P<time>{_TIME_UNIT}))(?![\w-])",
    re.I,
)
_COUNT_OF = re.compile(
    rf"\b(?P<unit>[a-z][a-z]+)\s+of\s+(?:\d+|{NUMBER_IN_WORDS})\b(?![\w-]|\s+(?!(?:now|again|these|this|at|in|on|and|but|so|since|after)\b)[a-z])",
    re.I,
)
# One word of a name: a capital, a digit followed by letters ("1Password"), or a capital inside
# ("iOS", "macOS"); dots, plus signs and hashes belong to it ("Fly.io", "C++", "C#").
_NAME_WORD = r"(?:[A-Z](?:[\w.+#&-]|['’](?=[A-Z]))*[\w+#]|[A-Z]|\d+[A-Za-z][\w-]*|[a-z]+[A-Z][\w.-]*)"
# A number before a name belongs to it ("42 Baker Street", "2019 MacBook Pro"), and so does a version
# after it ("PostgreSQL 16").
_NAME = re.compile(rf"(?<![\w'’.@/-])(?:\d+[A-Za-z]?\s+)?{_NAME_WORD}(?:[ -]{_NAME_WORD})*(?:\s+v?\d+(?:\.\d+)*\b)?")
_APPOSITION_BEFORE = re.compile(r"(?:\b(?:our|my|their|his|her|your)|\w['’]s)\s+[a-z][\w-]*,?\s+$", re.I)
_UNIT = re.compile(r"\s*-?\s*(?P<unit>[a-z][a-z]+)\b")
_POSSESSIVE_BEFORE = re.compile(r"(?:\b(?:our|my|their|his|her|its|your)|\w['’]s)\s+$", re.I)
_LOWER_NOUN_AFTER = re.compile(r"^\s+[a-z][a-z-]+")


def _singular(word: str) -> str:
    low = word.lower()
    if low.endswith("ies") and len(low) > 4:
        return low[:-3] + "y"
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return low[:-1]
    return low


def identifier(text: str) -> re.Match[str] | None:
    """`text` is one identifier written with hyphens, digits or a sigil ("us-east-1", "#backend-team")."""
    return _IDENTIFIER.fullmatch(text)


_NAME_AFTER_DAY = re.compile(r"(?: [A-Z][a-z][\w'’-]*)+")


_THING_RENAMED = r"(?:the|our|my|their|this|that)\s+(?:[\w-]+\s+){1,2}?"


@functools.cache
def _renaming_stems() -> tuple[str, str]:
    """The stems of the renaming verbs (change.txt [naming], those of more than a word: "renam",
    "rebrand", "know"), and of those that take the thing renamed as object ("renamed it to")."""
    naming = _section("change.txt", "naming")
    stems = {re.sub(r"(?:ed|n)$", "", w.split()[0]) for w in naming if " " in w}
    taking = {re.sub(r"(?:ed|n)$", "", w.split()[0]) for w in naming if " it " in w}
    return "|".join(sorted(stems)), "|".join(sorted(taking))


@functools.cache
def _renaming() -> str:
    # "renamed to", "rebranded as", "known as" in any form of the verb ("renaming to", "rebrand as"),
    # and with the thing renamed between, where the verb takes one ("renamed it to"): "renamed the
    # repo to beacon", "are renaming our app to beacon".
    stems, taking = _renaming_stems()
    return rf"(?:(?:{stems})\w*\s+(?:it\s+|them\s+)?|(?:{taking})\w*\s+{_THING_RENAMED})(?:as|to)"


def renames(text: str) -> bool:
    """The text gives a thing a new name ("is renaming the repo to beacon", "was renamed to Vega")."""
    return bool(re.search(rf"\b(?:{_renaming()})\s+\S", text, re.I))


@functools.cache
def _named() -> re.Pattern[str]:
    naming = lexicon.alternation(_section("change.txt", "naming"))
    renaming = _renaming()
    # A word of one piece ("is called atlas") only where the naming word is a passive's or a renaming's,
    # not a verb of its own ("I called mom").
    return re.compile(
        rf"\b(?:{naming})\s+(?P<name>[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+)(?![\w-])"
        rf"|(?:\b(?:is|are|was|were|be|been|being|now|got)\s+(?:called|named)|\b(?:{renaming})|\bre\w+ed\s+(?:to\s+)?as"
        rf"|\b(?:{naming})\s+(?:[\w-]+\s+){{0,3}}?from\s+(?P<old>[a-z][\w-]*)\s+to)"
        r"\s+(?P<word>[a-z][a-z0-9]*)(?![\w-])",
        re.I,
    )


def typed_spans(text: str, *, subject: str = "") -> list[Typed]:
    """The typed values of `text`, in order. The subject's own name is no value, nor is a name that
    only says whose or which thing it is ("Ana's", "our API gateway", "my Trek bike": the value is what
    the thing is)."""
    function_words = _words("function_words.txt")
    found: list[Typed] = []

    def free(start: int, end: int) -> bool:
        return not any(start < t.end and t.start < end for t in found)

    def add(start: int, end: int, kind: str, unit: str = "") -> None:
        chunk = text[start:end]
        start += len(chunk) - len(chunk.lstrip())
        end -= len(chunk) - len(chunk.rstrip(" \t.,;:"))
        if end > start and free(start, end):
            found.append(Typed(start, end, kind, text[start:end], unit))

    # The subject's own name, however it is written ("user-4821" would read as an identifier), is no value
    # and no part of one.
    if subject:
        for m in re.finditer(rf"(?<![\w-]){re.escape(subject)}(?![\w-])", text, re.I):
            found.append(Typed(m.start(), m.end(), "subject", m.group(0)))

    for m in _IDENTIFIER.finditer(text):
        add(*m.span(), "name")
    for m in _TIME.finditer(text):
        add(*m.span(), "time")
    for m in _FREQUENCY.finditer(text):  # before counts: "twice a week" is no count of weeks
        add(*m.span(), "frequency")
    for start, end, kind in value_spans(text):  # before numbered names: "1 October 2026" is no "42 Baker Street"
        if kind == "date":
            add(start, end, "date")
    names = list(_names(text, subject, function_words))
    for start, end, numbered in names:
        if numbered:
            add(start, end, "name")
    for m in _DAY.finditer(text):  # before a bare year: "September 2026" is one date
        # ... but a day's or a month's word opening a longer name is the name's ("Friday Notes").
        longer = _NAME_AFTER_DAY.match(text, m.end())
        if longer is not None and not _DAY.match(text, m.end() + 1):
            add(m.start(), longer.end(), "name")
            continue
        add(*m.span(), "date")
    # After a naming word, the next word is a name however it is written ("is called atlas-core").
    for m in _named().finditer(text):
        for group in ("name", "old", "word"):
            if m.group(group) and m.group(group).lower() not in function_words:
                add(*m.span(group), "name")
    for start, end, kind in value_spans(text):
        if kind == "number" and _YEAR.fullmatch(text[start:end]):
            add(start, end, "date")
    # "a team of 7", "a family of four": the noun before "of" is what is counted.
    for m in _COUNT_OF.finditer(text):
        if m.group("unit").lower() not in function_words:
            add(m.start("unit"), m.end(), "count", _singular(m.group("unit")))
    for start, end, kind in value_spans(text):
        if kind == "number":
            unit = _UNIT.match(text, end)
            word = unit.group("unit") if unit else ""
            if unit and word.lower() not in function_words:
                add(start, unit.end(), "count", _singular(word))
            else:
                add(start, end, "count")
            continue
        add(start, end, kind)
    for counted in _COUNT_IN_WORDS.finditer(text):
        unit_word: str = counted.group("unit") or counted.group("time") or ""
        if unit_word and unit_word.lower() not in function_words:
            add(*counted.span(), "count", _singular(unit_word))
        elif (number := number_in_words(counted.group("number") or "")) is not None and number > 9:
            add(*counted.span("number"), "count")
    for start, end, numbered in names:
        if not numbered:
            add(start, end, "name")
    return _joined(text, sorted((t for t in found if t.kind != "subject"), key=lambda t: t.start))


# Days or times said together are one value: a list ("Tuesdays and Thursdays") or a range ("Monday to
# Friday", "9am to 5pm", "8:30-4:30").
_LISTED = re.compile(r"\s*(?:,\s*)?(?:and|&)\s+|\s*,\s*|\s*/\s*")
_RANGED = re.compile(r"\s*[-–—]\s*|\s+(?:to|until|till|through|thru)\s+")


def _joined(text: str, spans: list[Typed]) -> list[Typed]:
    """A day and its time said together are one value ("Tuesdays at 6pm", "March 14 at 10:00"), and so
    are days or times said as a list or a range ("Tuesdays and Thursdays", "9am to 5pm"); "from A to B"
    after a verb of change is a change, not a range ("moved the lesson from 4pm to 5pm")."""
    out: list[Typed] = []
    for t in spans:
        if (
            out
            and out[-1].kind == "date"
            and t.kind == "time"
            and re.fullmatch(r"\s+(?:at\s+)?", text[out[-1].end : t.start])
        ):
            last = out[-1]
            out[-1] = dataclasses.replace(last, end=t.end, text=text[last.start : t.end])
            continue
        if out and out[-1].kind == t.kind and t.kind in {"date", "time"}:
            last, between = out[-1], text[out[-1].end : t.start]
            ranged = bool(_RANGED.fullmatch(between))
            changed = re.search(r"\bfrom\s+$", text[: last.start], re.I) and _change_verbs().search(text)
            if (ranged and not changed) or (_LISTED.fullmatch(between) and not last.ranged):
                out[-1] = Typed(last.start, t.end, t.kind, text[last.start : t.end], ranged=ranged or last.ranged)
                continue
        out.append(t)
    return out


def _names(text: str, subject: str, function_words: frozenset[str]) -> list[tuple[int, int, bool]]:
    out = []
    for m in _NAME.finditer(text):
        start = m.start()
        name = re.sub(r"(?:['’]s?|[.-])+$", "", m.group(0))
        words = name.split()
        # Words of grammar that start a sentence or stand alone with a capital ("We", "Our", "I").
        while words and words[0].lower().strip("'’") in function_words:
            start += text[start:].index(words[0]) + len(words[0])
            start += len(text[start:]) - len(text[start:].lstrip())
            words = words[1:]
        name = " ".join(words)
        end = start + len(name)
        first = words[0].lower().rstrip("s") if words else ""
        if not name or text[start:end] != name or name.lower() == subject.lower():
            continue
        if first in MONTHS or re.fullmatch(_WEEKDAY, first):  # a date, read as one
            continue
        if re.match(r"['’]s\b", text[end:]):  # whose thing it is
            continue
        after = _LOWER_NOUN_AFTER.match(text[end:])
        if (
            _POSSESSIVE_BEFORE.search(text[:start])
            and after is not None
            and after.group(0).strip().lower() not in function_words
        ):
            continue
        # "my sister Anna", "our accountant, Mira Patel,": the name says who the thing is, not its value.
        if _APPOSITION_BEFORE.search(text[:start]) and re.match(r",?\s+[a-z]", text[end:]):
            continue
        numbered = bool(re.search(r"\s+v?\d+(?:\.\d+)*$", name) or re.match(r"\d", name))
        out.append((start, end, numbered))
    return out


_BETWEEN_STOP = frozenset({"with", "to", "into", "for", "by", "and", "or", "as"})


def _marked(text: str, span: Typed, spans: list[Typed], markers: tuple[str, ...]) -> bool:
    return _marker_at(text, span, spans, markers) is not None


def _marker_at(text: str, span: Typed, spans: list[Typed], markers: tuple[str, ...]) -> int | None:
    """Where the marker that makes `span` the old value starts, or None."""
    before = text[: span.start].lower()
    for marker in markers:
        # The marker, then at most two words ("from our old", "no longer use", "replaced the"), none of
        # them a preposition that introduces another value ("replaced Kong with Envoy") and no other
        # value between.
        m = re.search(rf"\b{re.escape(marker)}\s+(?P<between>(?:[\w'’-]+\s+){{0,2}})$", before)
        if m is None:
            continue
        between = m.group("between").split()
        if any(w in _BETWEEN_STOP for w in between):
            continue
        if any(m.start() < t.start < span.start for t in spans if t is not span):
            continue
        return m.start()
    return None


def left_values(text: str, *, subject: str = "") -> list[Typed]:
    """The typed values `text` marks as the old ones: "from X", "replaced X", "instead of X", "no
    longer X"; in "from X to Y" and "replaced X with Y", Y is held."""
    markers = _section("change.txt", "before the old value")
    spans = typed_spans(text, subject=subject)
    after = lexicon.alternation(_section("change.txt", "after the old value"))
    renamed = re.compile(rf"\s+(?:(?:has|have)\s+been\s+|(?:is|are|was|were|got)\s+)?(?:{after})\b", re.I)
    return [t for t in spans if not t.ranged and (_marked(text, t, spans, markers) or renamed.match(text, t.end))]


def opens_with_left(text: str) -> bool:
    """The text opens with a marker of the old value ("formerly called Atlas, ...", "previously at 9")."""
    markers = lexicon.alternation(_section("change.txt", "before the old value"))
    return bool(re.match(rf"(?:{markers})\b", text.strip(), re.I))


def without_left(text: str, *, subject: str = "") -> str:
    """The text without the old values its markers name, and the markers ("The team formerly known as
    Falcons is now Hawks" -> "The team is now Hawks"): what it says holds now. "formerly" and
    "previously" there tell which name was left, not a narrative of the past."""
    markers = _section("change.txt", "before the old value")
    spans = typed_spans(text, subject=subject)
    out = text
    for span in sorted(spans, key=lambda t: t.start, reverse=True):
        start = None if span.ranged else _marker_at(text, span, spans, markers)
        if start is not None:
            out = out[:start].rstrip(" ,") + " " + out[span.end :].lstrip(" ,")
    return " ".join(out.split())


_CIRCUMSTANCE = re.compile(r"\b(?:on|in|since|during|last|this|until|over|after|before)\s+(?:the\s+)?$", re.I)


def current_value(text: str, *, subject: str = "") -> Typed | None:
    """The value `text` says holds now: the first typed value it does not mark as left (the object of
    its verb; "with 16 GB of RAM" after it only describes it), a date said as the time of the statement
    aside ("turned 42 on Saturday"); None when there is none."""
    left = {(t.start, t.end) for t in left_values(text, subject=subject)}
    held = [t for t in typed_spans(text, subject=subject) if (t.start, t.end) not in left]
    while len(held) > 1 and held[-1].kind == "date" and _CIRCUMSTANCE.search(text[: held[-1].start]):
        held = held[:-1]
    # A year said as when, anywhere ("my goal in 2026 is to read 24 books", from "this year"), beside
    # another value: the other is what the statement holds.
    if any(t.kind != "date" for t in held):
        held = [t for t in held if not (_YEAR.fullmatch(t.text) and _CIRCUMSTANCE.search(text[: t.start]))]
    if len(held) > 1 and _change_words().search(text):
        # A change says its new value after "to" ("pushed back a week, to April 9"; "cut by 15 minutes to
        # 45 minutes"): the other values measure the change.
        # ... or right after an adverb that says it holds now ("it was my birthday on Monday and I'm now 35").
        new = lexicon.alternation(_section("change.txt", "before the new value") + _section("change.txt", "adverbs"))
        marked = [t for t in held if re.search(rf"\b(?:{new})\s+(?:the\s+|a\s+|an\s+)?$", text[: t.start], re.I)]
        if marked:
            return marked[0]
    return held[0] if held else None


def without_when(text: str) -> str:
    """`text` without a circumstance of time at its end: "since ..." or "as of ..." (change.txt, [from then
    on] and [circumstance of time]) to the end, or a date after "on", "in", "from", "until" ("is
    divorced as of March": "is divorced")."""
    opens = lexicon.alternation(
        (*_section("change.txt", "from then on"), *_section("change.txt", "circumstance of time"))
    )
    m = re.search(rf"\s+(?:{opens})\s+[^,.;]+[.!]?$", text, re.I)
    if m is not None:
        return text[: m.start()]
    spans = typed_spans(text)
    if spans and spans[-1].kind == "date" and not text[spans[-1].end :].strip(" .!"):
        before = re.search(r"\s+(?:on|in|from|until|till|by)\s+(?:the\s+)?$", text[: spans[-1].start], re.I)
        if before is not None:
            return text[: before.start()]
    return text


def value_kind(value: str) -> Typed | None:
    """The typed value a fact's value is, when it is one and nothing more."""
    spans = typed_spans(value.strip())
    if len(spans) != 1:
        return None
    rest = (value[: spans[0].start] + value[spans[0].end :]).strip(" .,;:!?\"'")
    rest = re.sub(r"^(?:the|a|an)\b", "", rest, flags=re.I).strip()
    return spans[0] if not rest else None


def term_kind(value: str) -> Typed | None:
    """A state said with a word or two, no typed value in it ("vegan", "on hold", "approved"): a value
    the mechanism compares by meaning (`judge`), never a fragment test's typed value."""
    text = value.strip(" .")
    words = re.findall(r"[\w'’-]+", text)
    if not 1 <= len(words) <= MAX_TERM_WORDS or not re.fullmatch(r"[a-z][a-z'’ -]*", text) or typed_spans(text):
        return None
    if all(w.lower() in function_words() for w in words):
        return None
    if _COPULA.match(text):  # "is engaged now" is a clause that holds a state, not the state
        return None
    return Typed(0, len(text), "term", text)


def comparable_kind(value: str) -> Typed | None:
    """The kind by which a fact's value is compared with another: its typed value, or a short state."""
    return value_kind(value) or term_kind(value)


# A typed value may keep this many words after it that name what it is ("the Business plan").
HEAD_WORDS = 2


def headed_kind(value: str) -> Typed | None:
    """The typed value of a value that names it with a word or two after it ("the Business plan",
    "Organization tier"): one typed value after an optional article, then at most HEAD_WORDS words,
    none of them a word of grammar."""
    text = value.strip(" .")
    spans = typed_spans(text)
    if len(spans) != 1:
        return None
    before = [w for w in re.findall(r"[\w'’-]+", text[: spans[0].start]) if w.lower() not in {"the", "a", "an"}]
    after = re.findall(r"[\w'’-]+", text[spans[0].end :])
    if before or len(after) > HEAD_WORDS or any(w.lower() in function_words() for w in after):
        return None
    return spans[0]


def deciding_kind(value: str) -> Typed | None:
    """The kind by which the merge compares a fact's value with another's: `comparable_kind`, or the
    typed value it names with its head noun (`headed_kind`)."""
    return comparable_kind(value) or headed_kind(value)


_FAMILY = {"version": "name", "time": "time", "date": "date"}


def with_head(statement: str, value: str) -> str:
    """The value with the head noun the statement says right after it, up to HEAD_WORDS words ("on a
    Mediterranean diet now": "Mediterranean diet"; "a Cannondale road bike": "Cannondale road bike"): what
    kind of thing the value is, so that two values are compared as two things of one kind ("low-carb diet"
    and "Mediterranean": 0.09; with the head, 0.52). The value alone where the statement names none."""
    said = value.strip(" .")
    m = re.search(rf"(?<![\w-]){re.escape(said)}(?P<head>(?:\s+[a-z][a-z-]+){{1,{HEAD_WORDS}}})?", statement)
    if m is None or not m.group("head"):
        return said
    head: list[str] = []
    for word in m.group("head").split():
        if word in function_words() or _ADVERB.fullmatch(word) or _COPULA.fullmatch(word) or word in said.split():
            break
        head.append(word)
    return " ".join([said, *head])


def thing_word(value: Typed) -> bool:
    """A name or a state of at most MAX_TERM_WORDS words, with no number apart from its words ("Tacos",
    "10K", "half marathon"; not "iPhone 15", "Node 20"): what a thing is, said with or without a
    capital."""
    words = value.text.split()
    return (
        value.kind in {"name", "term"}
        and len(words) <= MAX_TERM_WORDS
        and not any(w.isdigit() or re.fullmatch(r"v?\d+(?:\.\d+)*", w) for w in words)
        and identifier(value.text) is None
    )


# Units of time: a duration in one and a duration in another are one kind of value ("30 minutes", "an
# hour"; "two weeks", "a month").
_TIME_UNITS = frozenset({"second", "minute", "hour", "day", "week", "month", "year"})


def _unit(value: Typed) -> str:
    return "duration" if value.unit in _TIME_UNITS else value.unit


def _hour(value: Typed) -> bool:
    """A count without a unit that can be an hour of the clock (1 to 24)."""
    return not value.unit and value.text.isdigit() and 1 <= int(value.text) <= 24


def same_kind(a: Typed, b: Typed) -> bool:
    """Two values of one type: two names (a product with its version is a name), two counts of the same
    unit (or one without a unit; two durations in any units of time), two dates, two times (or a time and
    an hour said as a bare number), two amounts, two addresses."""
    if {a.kind, b.kind} == {"time", "count"}:
        # A time said by its hour alone is a bare number ("wake up at 6", then "at 5:30 now").
        return _hour(a if a.kind == "count" else b)
    if _FAMILY.get(a.kind, a.kind) != _FAMILY.get(b.kind, b.kind):
        return False
    return not (a.kind == "count" and a.unit and b.unit and _unit(a) != _unit(b))


@functools.cache
def _new_thing() -> re.Pattern[str]:
    """ "my new ...", "our new ...", "Ana's new ...": the adjective (change.txt, [after a possessive]) in
    lower case, since "New York" is a name."""
    adjectives = lexicon.alternation(_section("change.txt", "after a possessive"))
    return re.compile(rf"(\b(?:my|our|their|[\w-]+['’]s))\s+(?:{adjectives})\b")


@functools.cache
def _change_verbs() -> re.Pattern[str]:
    """The verbs of change in any person (change.txt, [verbs])."""
    verbs = "|".join(re.escape(m) for m in sorted(_section("change.txt", "verbs"), key=len, reverse=True))
    return re.compile(rf"\b(?:(?:{verbs})(?:s|es)?\b|{_reaching()})", re.I)


# A level named with its number after a possessive or none: "B2", "Grade 6", "my level 3 exam".
_NUMBERED_LEVEL = r"(?:(?:my|our|their|his|her|the)\s+)?(?:[A-Za-z]{1,8}\s?)?\d"


def _reaching() -> str:
    """A verb that tells a change only before the number it reaches (change.txt, [reaching]): "hits 28",
    "reached 10,000", or the level it names with a number ("passed B2", "passed my Grade 6 exam"); or
    the mask that stands for the number in a frame."""
    verbs = "|".join(re.escape(m) for m in _section("change.txt", "reaching"))
    return rf"\b(?:{verbs})(?:s|es)?(?=\s+(?:{_NUMBERED_LEVEL}|(?:(?:my|our|their|the)\s+)?{MASK}\b))"


@functools.cache
def _change_words() -> re.Pattern[str]:
    """The verbs of change in any person ("cut", "cuts"; "switch", "switches": a statement is told of
    the speaker in the third person) and the adverbs of change."""
    verbs = "|".join(re.escape(m) for m in sorted(_section("change.txt", "verbs"), key=len, reverse=True))
    adverbs = "|".join(re.escape(m) for m in sorted(_section("change.txt", "adverbs"), key=len, reverse=True))
    return re.compile(rf"\b(?:(?:{verbs})(?:s|es)?|{adverbs})\b|{_reaching()}", re.I)


# A circumstance of time is no part of the predicate ("... has 9 engineers after the hiring round",
# "... since the reorg", "... this week"): up to the clause's end, where no other value follows.
_WHEN = re.compile(
    r"\s+(?:(?:after|since|during|until|following|as of)\s+(?!something\b)[^,.;]*"
    r"|(?:this|last|next|these|those)\s+(?:week|weekend|month|year|quarter|sprint|days|morning|evening|summer|winter"
    r"|spring|autumn|fall|season|term|semester)\b)(?=\s*(?:[,.;]|$))",
    re.I,
)
MASK = "something"


# What stands before a date that only says when ("in September 2026", "the weekend before 1 October
# 2026", as the extractors resolve "last weekend").
_WHEN_BEFORE = re.compile(
    r"\s+(?:(?:the\s+)?(?:day|week|weekend|month|year|morning|afternoon|evening|night)\s+(?:before|after|of)"
    r"|(?:earlier|later|early|late)\s+in|on|in|around|at|since|during|last|this)?\s*$",
    re.I,
)


def _undated(statement: str, spans: list[Typed], value: str) -> tuple[str, list[Typed]]:
    """The statement without the dates at its end that are not its value, with what says they are when."""
    while spans and spans[-1].kind == "date" and not values_same(spans[-1].text, value):
        last = spans[-1]
        if statement[last.end :].strip(" .!;,") or (value and value.strip(" .") in last.text):
            break
        before = _WHEN_BEFORE.search(statement[: last.start])
        cut = before.start() if before is not None else last.start
        statement, spans = statement[:cut].rstrip(" ,") + statement[last.end :], spans[:-1]
    return statement, spans


# A noun and a preposition before a name say which thing the statement is about ("my flight to Tokyo",
# "the meeting with Dana"), when the name comes before the statement's value.
_WHICH_THING = re.compile(r"\b[a-z][\w-]*\s+(?:to|for|with|at|of|in|on)\s+(?:the\s+)?$")


def _without_which_thing(statement: str, spans: list[Typed], value: str) -> list[Typed]:
    """The spans to mask: not a name before the value that says which thing it is ("my flight to Tokyo
    is on March 3" is about the flight to Tokyo, not about a flight to somewhere)."""
    at = next((t.start for t in spans if values_same(t.text, value) or t.text == value.strip(" .")), None)
    if at is None:
        return spans
    return [t for t in spans if not (t.start < at and t.kind == "name" and _WHICH_THING.search(statement[: t.start]))]


def frame(statement: str, *, subject: str = "", value: str = "") -> str:
    """The statement with its typed values masked and the grammar of change taken out; a state said
    with a word or two (`term_kind`) is masked too when it is the fact's `value`; a date at its end that
    is not its value only says when, and is left out."""
    spans = typed_spans(statement, subject=subject)
    if value:
        statement, spans = _undated(statement, spans, value)
    text = statement
    if value and term_kind(value) is not None:
        said = re.search(rf"(?<![\w-]){re.escape(value.strip(' .'))}(?![\w-])", statement, re.I)
        if said is not None and not any(said.start() < t.end and t.start < said.end() for t in spans):
            spans = sorted([*spans, Typed(said.start(), said.end(), "term", said.group(0))], key=lambda t: t.start)
    if value:
        spans = _without_which_thing(statement, spans, value)
    for t in reversed(spans):
        text = text[: t.start] + MASK + text[t.end :]
    markers = _section("change.txt", "before the old value")
    old = "|".join(re.escape(m) for m in sorted(markers, key=len, reverse=True))
    text = re.sub(rf"\b(?:{old})\s+(?:the |our |my |their )?{MASK}\b", " ", text, flags=re.I)
    # What the statement says it left is no part of what it says ("... a flat white rather than a latte").
    after = lexicon.alternation(_section("change.txt", "after the new value"))
    text = re.sub(rf"(?:,\s*)?\b(?:{after})\b[^,.;]*", " ", text, flags=re.I)
    # A perfect's auxiliary goes with its verb of change ("have become", "has moved").
    text = re.sub(rf"\b(?:has|have|had)\s+(?:just\s+|now\s+)?(?={_change_words().pattern})", "", text, flags=re.I)
    text = _change_words().sub(" ", _new_thing().sub(r"\1", text))
    # ... and so does a renaming verb in any form before the thing it renames ("is renaming the repo to").
    taking = _renaming_stems()[1]
    text = re.sub(rf"\b(?:{taking})\w*\s+(?={_THING_RENAMED}(?:to|as)\s+{MASK}\b)", "", text, flags=re.I)
    text = re.sub(rf"\b(?:with|to|into)\s+(?={MASK}\b)", "", text, flags=re.I)
    text = _WHEN.sub("", text)
    # An adverb between the copula and the state says how or since when it holds ("is happily married",
    # "is recently divorced"), not what about.
    text = re.sub(rf"({_COPULA.pattern})\s+[a-z]+ly\s+(?={MASK}\b)", r"\1 ", text, flags=re.I)
    text = re.sub(rf"\b{MASK}(?:\s+{MASK})+\b", MASK, text, flags=re.I)
    if subject:
        # What the subject works, serves or plays as is what the subject is ("works as a nurse").
        as_what = rf"^({re.escape(subject)})\s+[a-z]+\s+as\s+(?:(?:an?|the)\s+)?(?={MASK}\b)"
        text = re.sub(as_what, r"\1 is ", text, flags=re.I)
    return " ".join(text.split()).strip(" .") + "."


_ADVERB = re.compile(r"[a-z]{2,}(?<![ip])ly")
# British and American spellings of one word: "colour" and "color", "favourite" and "favorite",
# "organise" and "organize", "centre" and "center".
_SPELLINGS = (
    (re.compile(r"(?<=[a-z]{2})our(?=ite|ed|ing|s)?$|(?<=[a-z]{2})our(?=ite)"), "or"),
    (re.compile(r"(?<=[a-z]{3})is(?=e|ed|es|ing|ation)"), "iz"),
    (re.compile(r"(?<=[a-z]{3})tre$"), "ter"),
)


def one_spelling(word: str) -> str:
    """The word in one spelling of its British and American ones (a key, not always a word: "color")."""
    for pattern, written in _SPELLINGS:
        word = pattern.sub(written, word)
    return word


def content_words(text: str, *, subject: str = "") -> frozenset[str]:
    """The words of a frame that say what it is about: not grammar, not the mask, not the subject."""
    function_words = _words("function_words.txt")
    text = text.lower()
    if subject:
        # The subject's name goes before the words are split: split first, "crew-12" leaves "crew-".
        text = re.sub(rf"(?<![\w-]){re.escape(subject.lower())}(?:['’]s)?(?![\w-])", " ", text)
    # Adverbs say how or how often ("usually", "only", "fully"), not what about.
    return frozenset(
        one_spelling(_singular(w.removesuffix("'s").removesuffix("’s")))
        for w in re.findall(r"[a-z][a-z'’-]+", text)
        # A copula ("was", "got", "became") links the thing to its value; it says nothing of what about.
        if w not in function_words
        and w != MASK
        and len(w) > 2
        and not _ADVERB.fullmatch(w)
        and not _COPULA.fullmatch(w)
    )


def says_change(text: str, *, subject: str = "") -> bool:
    """The statement tells a change: a verb or adverb of change, a new name given ("is renaming the repo
    to beacon"), or a value it marks as left."""
    return (
        bool(_change_words().search(text))
        or renames(text)
        or bool(_new_thing().search(text))
        or bool(left_values(text, subject=subject))
    )


def becomes(text: str, value: str) -> bool:
    """The statement says the value was become: a verb of change.txt [becoming] right before it ("went
    vegan", "turned vegetarian", "has gone freelance"), a change whose complement is the new state; not
    where the speaker went ("went home early": change.txt [not a state become])."""
    said = value.strip(" .")
    if not said or said.split()[0].lower() in _section("change.txt", "not a state become"):
        return False
    verbs = lexicon.alternation(_section("change.txt", "becoming"))
    return bool(re.search(rf"\b(?:{verbs})\s+(?:(?:a|an)\s+)?{re.escape(said)}(?![\w-])", text, re.I))


# A participle of a state reached ("resolved", "approved", "granted", "taken"): an ending of English verbs,
# not a list of them.
_PARTICIPLE = re.compile(r"[a-z]{3,}(?:ed|en)")


def reached(text: str, value: str) -> bool:
    """The statement says the state was reached, a change told by the perfect of "be" before a
    participle ("my ticket has been resolved", "my permit has now been granted"). A state said with the
    perfect and "since" ("has been noisy since the spring") tells no change of its own: it may be one
    more state of the same thing, and MiniLM reads "vegan" no nearer "pescatarian" (0.30) than "tired"
    (0.29)."""
    said = value.strip(" .")
    if not _PARTICIPLE.fullmatch(said.lower()):
        return False
    return bool(
        re.search(
            rf"\b(?:has|have|had)\s+(?:(?:now|just|finally|officially|already)\s+)?been\s+{re.escape(said)}(?![\w-])",
            text,
            re.I,
        )
    )


def continues(text: str) -> bool:
    """The statement says its state continues and is to end (change.txt [continuing]: "is still open")."""
    return bool(re.search(rf"\b(?:{lexicon.alternation(_section('change.txt', 'continuing'))})\b", text, re.I))


def takes_up(statement: str, *, subject: str) -> bool:
    """The statement tells the subject took up a new thing (change.txt [taking up]: "took a job at ...",
    "has started a new job at ...", "got a new car"): the verb right after the subject, an auxiliary or
    an adverb between."""
    verbs = lexicon.alternation(_section("change.txt", "taking up"))
    return bool(
        re.match(
            rf"\s*{re.escape(subject)}\s+(?:(?:has|have|had|just|finally|recently|[a-z]+ly)\s+)*(?:{verbs})\b",
            statement,
            re.I,
        )
    )


def function_words() -> frozenset[str]:
    """Words of grammar (semantic/data/function_words.txt)."""
    return _words("function_words.txt")


def tells_the_past(text: str) -> bool:
    """The text tells the past ("back in", "used to", "when I was")."""
    said = _section("change.txt", "past narrative")
    return bool(re.search(rf"\b(?:{lexicon.alternation(said)})\b", text, re.I))


def says_now(text: str) -> bool:
    """The text says what holds now ("now", "these days", "currently": the adverbs of change.txt)."""
    said = _section("change.txt", "adverbs")
    return bool(re.search(rf"\b(?:{lexicon.alternation(said)})\b", text, re.I))


def denies(text: str) -> bool:
    """The text denies ("not", "never", "didn't")."""
    return bool(re.search(r"\b(?:not|never|no|none|\w+n['’]t)\b", text, re.I))


def hedges(text: str) -> bool:
    """The text wonders or plans rather than states (semantic/data/change.txt, "hypothetical")."""
    said = _section("change.txt", "hypothetical")
    return bool(re.search(rf"\b(?:{lexicon.alternation(said)})\b", text, re.I))


def for_one_occasion(text: str) -> bool:
    """The text tells an exception for one occasion ("this week only", "just this once")."""
    said = _section("change.txt", "one occasion")
    if re.search(rf"\b(?:{lexicon.alternation(said)})\b", text, re.I):
        return True
    # "Tomorrow the standup is at 11": one coming occasion, unless said as where a change starts.
    since = lexicon.alternation(_section("change.txt", "from then on"))
    for m in re.finditer(rf"\b(?:{lexicon.alternation(_section('change.txt', 'one day'))})\b", text, re.I):
        if not re.search(rf"\b(?:{since})\s+$", text[: m.start()], re.I):
            return True
    return False


def adds(text: str) -> bool:
    """The statement adds a value to those held ("also", "another", "as well")."""
    return bool(re.search(rf"\b(?:{lexicon.alternation(_words('additive.txt'))})\b", text, re.I))


OTHER_PEOPLE = _words("other_people.txt")
# Every noun for a person other than the speaker; those of people.txt ("son", "kids", "roommate") are
# someone else only as the statement's subject ("my son turned 12"; not "I have three kids").
PEOPLE = OTHER_PEOPLE | _words("people.txt")


def someone_elses(text: str, *, subject: str = "", value: str = "") -> bool:
    """The statement is about someone other than its subject: "her", "his", a person named by a noun
    for other people ("Ana's colleague keeps her notes in ..."), another name's possessive ("Priya's
    team uses ..."), or a person of theirs as its subject ("Ana's roommate pays ..."). Not when the
    value is who that person of theirs is ("Dana Kim became Ana's manager", "Ana's boss is Dana
    Kim"): that is the subject's own relation."""
    if subject:
        # The subject's own name says nothing of anyone else, however it is written ("client-3318": a
        # word for a person inside an id).
        name = rf"(?<![\w-]){re.escape(subject)}"
        text = re.sub(rf"{name}['’]s(?![\w-])", "my", text, flags=re.I)
        text = re.sub(rf"{name}(?![\w-])", "I", text, flags=re.I)
    if re.search(r"\b(?:he|she|his|her|him)\b", text, re.I):
        return True
    if value and _names_a_person_of_theirs(text, subject=subject, value=value):
        return False
    if value and deciding_kind(value) is not None:
        # A noun for a person inside the value names what the subject is ("a product manager role",
        # "the release manager now", a title with capitals: "Marketing Manager", "Partner"), not someone
        # else.
        text = re.sub(rf"(?<![\w-]){re.escape(value.strip(' .'))}(?![\w-])", " ", text, flags=re.I)
    # A noun for a person that the subject is ("I'm a product manager at Initech", "is the team lead
    # of ...") names what the subject is, not someone else.
    people = lexicon.alternation(PEOPLE)
    text = re.sub(
        rf"^(\s*I\s+(?:is|am|'m|was|became|becomes|has become)\s+(?:now\s+)?(?:an?|the)\s+(?:[\w-]+\s+){{0,2}}?)"
        rf"(?:{people})\b",
        r"\1",
        text,
        flags=re.I,
    )
    for m in re.finditer(r"\b([A-Z][\w-]*)['’]s\b", text):
        if m.group(1).lower() != subject.lower() and m.group(1).lower() not in _words("function_words.txt"):
            return True
    if re.search(rf"\b(?:{lexicon.alternation(OTHER_PEOPLE)})\b", text, re.I):
        return True
    owner = rf"(?:{re.escape(subject)}['’]s|my|our)" if subject else r"(?:my|our)"
    return bool(re.match(rf"\s*{owner}\s+(?:[\w-]+\s+)?(?:{lexicon.alternation(PEOPLE)})\b", text, re.I))


_BECOMES = r"(?:is|was|became|becomes|has become|is now|has been)"


def _names_a_person_of_theirs(text: str, *, subject: str, value: str) -> bool:
    """The statement says who a person of the subject's is: `value` on one side of a copula, the person
    ("my manager", "Ana's business partner") on the other, and nothing more; the value a name ("my
    nephew is twenty-one" is the nephew's age)."""
    named = value_kind(value)
    if named is None or named.kind != "name":
        return False
    owner = rf"(?:{re.escape(subject)}['’]s|my|our)" if subject else r"(?:my|our)"
    person = rf"{owner}\s+(?:new\s+)?(?:[\w-]+\s+)?(?:{lexicon.alternation(PEOPLE)})"
    said = re.escape(value.strip(" ."))
    return bool(
        re.fullmatch(rf"\s*(?:now\s+)?{said}\s+(?:now\s+)?{_BECOMES}\s+(?:now\s+)?{person}\s*[.!]?\s*", text, re.I)
        or re.fullmatch(rf"\s*{person}\s+{_BECOMES}\s+(?:now\s+)?{said}\s*[.!]?\s*", text, re.I)
    )


def names_left(statement: str, value: str, *, subject: str = "") -> bool:
    """The statement marks `value` as the one it left ("replaced Kong with ...", "a flat white rather
    than a latte")."""
    if any(
        values_same(t.text, value) or t.text.lower() in value.lower() for t in left_values(statement, subject=subject)
    ):
        return True
    if term_kind(value) is None:
        return False
    markers = lexicon.alternation(_section("change.txt", "before the old value"))
    said = re.escape(value.strip(" ."))
    # "instead of taking the bus": an activity's verb may stand before the value left
    return bool(
        re.search(rf"\b(?:{markers})\s+(?:[a-z]+ing\s+)?(?:(?:the|a|an|my|our|their)\s+)?{said}\b", statement, re.I)
    )


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether a later statement supersedes an earlier one, and the reason read from the grammar
    (logged by the merge at DEBUG, semantic.services.supersede_same_predicate)."""

    superseded: bool
    reason: str


def judge(
    *,
    old_statement: str,
    old_value: str,
    new_statement: str,
    new_value: str,
    similarity: float,
    subject: str = "",
    values_similarity: float | None = None,
) -> Verdict:
    """Whether the later statement (`new_*`) supersedes the earlier (`old_*`) of the same subject,
    given the cosine of their frames: values of one type that differ, no addition and no one else's
    value, and the same predicate (the same content words, or frames at least as similar as the grammar
    of the later statement asks: less when it names the earlier value as left or tells a change)."""
    old_typed, new_typed = deciding_kind(old_value), deciding_kind(new_value)
    if old_typed is None or new_typed is None:
        return Verdict(False, "values of different kinds")
    if not same_kind(old_typed, new_typed):
        if not (thing_word(old_typed) and thing_word(new_typed)):
            return Verdict(False, "values of different kinds")
        # A thing said with a capital and one without ("Tacos" opening a sentence, "sushi"; "10K", "half
        # marathon"): both name a thing, compared by meaning as two states are.
        new_typed = Typed(new_typed.start, new_typed.end, "term", new_typed.text)
    if new_typed.kind == "term":
        old_frame = frame(old_statement, subject=subject, value=old_value)
        new_frame = frame(new_statement, subject=subject, value=new_value)
        same_verb = (
            content_words(old_frame, subject=subject) == content_words(new_frame, subject=subject)
            and bool(content_words(new_frame, subject=subject))
            and not _COPULA.search(old_frame)
            and not _COPULA.search(new_frame)
        )
        floor = SIMILAR_TERMS_SAME_VERB if same_verb else SIMILAR_TERMS
        # The same frame, and the later statement tells a change ("my new favourite cheese is halloumi",
        # "the loft conversion is complete now"): the speaker says this value replaced the other, however
        # far apart the two words' meanings are (gouda and halloumi: 0.33; underway and complete: 0.30).
        old_said = content_words(old_frame, subject=subject)
        told = old_said == content_words(new_frame, subject=subject) and bool(old_said)
        if (
            (told and says_change(new_statement, subject=subject))
            or becomes(new_statement, new_value)
            # "My ticket is still open", then "... has been resolved": a state said to continue, then one reached.
            or (reached(new_statement, new_value) and continues(old_statement))
            or names_left(new_statement, old_value, subject=subject)
        ):
            pass
        elif values_similarity is None or values_similarity < floor:
            return Verdict(False, "states of different meanings")
    if values_same(old_value, new_value):
        return Verdict(False, "the same value")
    if adds(new_statement):
        return Verdict(False, "an addition")
    if hedges(new_statement):
        return Verdict(False, "a hypothesis")
    if for_one_occasion(new_statement):
        return Verdict(False, "an exception for one occasion")
    if tells_the_past(new_statement) and not says_now(new_statement):
        return Verdict(False, "the past")
    if someone_elses(new_statement, subject=subject, value=new_value):
        return Verdict(False, "someone else's value")
    old_words = content_words(frame(old_statement, subject=subject, value=old_value), subject=subject)
    new_words = content_words(frame(new_statement, subject=subject, value=new_value), subject=subject)
    if names_left(new_statement, old_value, subject=subject):
        # "We replaced the Volvo with a Skoda": a frame that says nothing but the change names no other
        # predicate than the one whose value it says was left.
        ok = not new_words or similarity >= SIMILAR_NAMING_OLD
        return Verdict(ok, f"names the old value as left, frames at {similarity:.2f}")
    open_verbs = _words("open_verbs.txt")
    changed = (
        says_change(new_statement, subject=subject)
        or becomes(new_statement, new_value)
        or reached(new_statement, new_value)
    )
    # "uses X", "has X": a relation of many values names no one thing; a new value adds to it unless
    # the later statement tells a change ("now uses Y", "switched to Y").
    # Counts of one unit are the exception: "has 4 guitars" and "has 3 guitars" cannot both hold.
    counted = old_typed.kind == "count" and bool(old_typed.unit) and old_typed.unit == new_typed.unit
    open_relation = (old_words and old_words <= open_verbs) or (new_words and new_words <= open_verbs)
    if open_relation and not changed and not counted:
        return Verdict(False, "an open relation without a change")
    if old_words and old_words == new_words:
        return Verdict(True, "the same content words")
    if changed:
        return Verdict(similarity >= SIMILAR_WITH_CHANGE, f"a change, frames at {similarity:.2f}")
    # Said plainly, each naming something the other does not ("starts work" and "finishes work"):
    # two predicates, however near they read.
    if old_words - new_words and new_words - old_words:
        return Verdict(False, f"each frame names words the other lacks, at {similarity:.2f}")
    # One frame says all the other does and a circumstance more ("... has 9 engineers after the
    # hiring round"): the same predicate, read as near as a change asks.
    if old_words and new_words:
        # ... but a word more before the value names another thing ("the marketing team uses ..."
        # after "our team uses ..."), not a circumstance.
        longer = frame(new_statement, subject=subject, value=new_value)
        if old_words > new_words:
            longer = frame(old_statement, subject=subject, value=old_value)
        head = [
            next(iter(content_words(w, subject=subject)), "")
            for w in (longer[: longer.find(MASK)] if MASK in longer else longer).split()
        ]
        shared = [i for i, w in enumerate(head) if w in old_words & new_words]
        # Only a word of the same noun phrase (no word of grammar between it and the shared words) says
        # which thing: "sets their interface language to Spanish" after "interface language is English"
        # names the same language with a verb before the possessive.
        phrase = head[: shared[-1]] if shared else []
        while phrase and phrase[-1]:
            phrase = phrase[:-1]
        if shared and any(w and w not in old_words & new_words for w in head[len(phrase) : shared[-1]]):
            return Verdict(False, "a word more names another thing")
        return Verdict(similarity >= SIMILAR_WITH_CHANGE, f"one frame holds the other's words, at {similarity:.2f}")
    return Verdict(similarity >= SIMILAR_PLAIN, f"said plainly, frames at {similarity:.2f}")
