"""Time named in a query: "last week", "in May 2023", "3 days ago", "before 10 April 2023".

`timeframe(query, now)` finds the first such phrase and resolves it against `now` (the request's `now`,
else its `as_of`, else the server's time) into a half-open window [start, end). English phrases only.
A phrase that names an event rather than a date ("before the move", "since the trip") is read by
`event_reference`; `event_timeframe` bounds its window at the event's first mention, which the caller
looks up in the subject's history (router.policy, through an episodic selector). The router uses the
window as a preference for episodes inside it and, when the window is over, as the time at which
facts are read (router.policy).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from core.timestamps import MONTHS

_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10}
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_DAY_MONTH = rf"(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH})\.?(?:,?\s+(?P<y1>\d{{4}}))?"
_MONTH_DAY = rf"(?P<m2>{_MONTH})\.?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<y2>\d{{4}}))?"
_MONTH_YEAR = rf"(?P<m3>{_MONTH})\.?(?:\s+(?:of\s+)?(?P<y3>\d{{4}}))?"
_DATE = rf"(?:{_DAY_MONTH}|{_MONTH_DAY}|{_MONTH_YEAR}|(?P<y4>(?:19|20)\d\d))"

_PATTERNS = (
    ("relation", re.compile(rf"\b(?P<rel>before|after|since|until)\s+(?:the\s+)?{_DATE}\b", re.I)),
    ("date", re.compile(rf"\b(?:in|on|during|of|from)\s+(?:early\s+|late\s+|mid-?)?{_DATE}\b", re.I)),
    ("day", re.compile(r"\b(?P<word>yesterday|today|tonight)\b", re.I)),
    ("period", re.compile(r"\b(?P<which>last|this|past|previous)\s+(?P<unit>week(?:end)?|month|year)\b", re.I)),
    (
        "ago",
        re.compile(
            r"\b(?P<n>\d+|a|an|one|two|three|four|five|six|ten)\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I
        ),
    ),
)


@dataclass(frozen=True)
class Timeframe:
    """The window [start, end) a query's time phrase names; either bound may be open (None)."""

    phrase: str
    start: datetime | None
    end: datetime | None

    def contains(self, moment: datetime) -> bool:
        return (self.start is None or moment >= self.start) and (self.end is None or moment < self.end)


def _day(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


def _month_start(year: int, month: int) -> datetime:
    return _day(year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


def _date_window(match: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    g = match.groupdict()
    try:
        if g.get("y4"):
            year = int(g["y4"])
            return _day(year, 1, 1), _day(year + 1, 1, 1)
        for d, m, y in (("d1", "m1", "y1"), ("d2", "m2", "y2")):
            if g.get(m) and g.get(d):
                month = MONTHS[g[m].lower()]
                year = int(g[y]) if g.get(y) else now.year
                start = _day(year, month, int(g[d]))
                if not g.get(y) and start > now:
                    start = _day(year - 1, month, int(g[d]))
                return start, start + timedelta(days=1)
        if g.get("m3"):
            month = MONTHS[g["m3"].lower()]
            year = int(g["y3"]) if g.get("y3") else now.year
            start = _month_start(year, month)
            if not g.get("y3") and start > now:
                start = _month_start(year - 1, month)
            return start, _month_start(start.year, start.month + 1)
    except ValueError:  # 31 February and the like: no date
        return None
    return None


def _period(which: str, unit: str, now: datetime) -> tuple[datetime, datetime]:
    today = _day(now.year, now.month, now.day)
    previous = which.lower() in ("last", "past", "previous")
    if unit == "weekend":
        # The most recent Saturday on or before today; "last weekend" is one that is over.
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if previous and today < saturday + timedelta(days=2):
            saturday -= timedelta(days=7)
        elif not previous and today.weekday() < 5:
            saturday += timedelta(days=7)
        return saturday, saturday + timedelta(days=2)
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        return (monday - timedelta(days=7), monday) if previous else (monday, monday + timedelta(days=7))
    if unit == "month":
        this = _month_start(now.year, now.month)
        return (
            (_month_start(now.year, now.month - 1), this) if previous else (this, _month_start(now.year, now.month + 1))
        )
    this_year = _day(now.year, 1, 1)
    return (_day(now.year - 1, 1, 1), this_year) if previous else (this_year, _day(now.year + 1, 1, 1))


def timeframe(query: str, now: datetime) -> Timeframe | None:
    """The window named by the first time phrase of the query, resolved against `now`; None without one."""
    found: list[tuple[int, Timeframe]] = []
    for kind, pattern in _PATTERNS:
        match = pattern.search(query)
        if match is None:
            continue
        window: tuple[datetime | None, datetime | None] | None = None
        if kind in ("relation", "date"):
            dates = _date_window(match, now)
            if dates is not None and kind == "relation":
                rel = match.group("rel").lower()
                window = (
                    (None, dates[0]) if rel in ("before", "until") else (dates[0] if rel == "since" else dates[1], None)
                )
            else:
                window = dates
        elif kind == "day":
            today = _day(now.year, now.month, now.day)
            start = today - timedelta(days=1) if match.group("word").lower() == "yesterday" else today
            window = (start, start + timedelta(days=1))
        elif kind == "period":
            window = _period(match.group("which"), match.group("unit").lower(), now)
        else:
            n = _NUMBERS.get(match.group("n").lower()) or int(match.group("n"))
            days = _UNIT_DAYS[match.group("unit").lower()]
            center = now - timedelta(days=n * days)
            half = timedelta(days=max(1, days // 2) if days > 1 else 1)
            window = (center - half, center + half)
        if window is not None:
            found.append((match.start(), Timeframe(match.group(0), window[0], window[1])))
    if not found:
        return None
    return min(found, key=lambda f: f[0])[1]


# --- events: "before the move" -------------------------------------------------------------------

# A noun phrase after the relation word needs a determiner or a possessive: "before the move", "after
# my sister's wedding"; a bare word ("before moving", "after lunch") is too open to guess at.
_EVENT = re.compile(
    r"\b(?P<rel>before|after|since|until|till)\s+(?:the|my|our|his|her|their|your)\s+"
    r"(?P<np>[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*){0,3})",
    re.I,
)
# Where a noun phrase ends: the words that begin a prepositional phrase or a clause.
_NP_END = frozenset(
    """to in on at of for with from by about into onto over under near than as and or but so
    when while where who whom whose which that what why how if because
    i me you he she it we they him us them this these those there
    is are was were be been being am do does did done have has had will would could should can may might
    must shall not no""".split()
)
# Heads that name a time or a part of one, not an event: "after the end of the week", "before the first".
_NOT_EVENTS = frozenset(
    """day days week weeks weekend month months year years morning afternoon evening night time times
    moment end start beginning middle first last next other rest same one ones hour hours minute minutes
    past future present""".split()
)


@dataclass(frozen=True)
class EventReference:
    """An event a query places its time by: `relation` (before, after, since, until) and the head
    noun of the phrase that names it ("the move to Lisbon": move)."""

    phrase: str
    relation: str
    head: str


def event_reference(query: str) -> EventReference | None:
    """The first "before/after/since/until + the/my/... + noun phrase" of the query that names an
    event rather than a date or a time; None without one (a date phrase is `timeframe`'s)."""
    for match in _EVENT.finditer(query):
        words: list[str] = []
        for word in match.group("np").split():
            if word.casefold() in _NP_END:
                break
            words.append(word)
        if not words:
            continue
        head = re.sub(r"['’]s?$", "", words[-1]).casefold()
        if head in _NOT_EVENTS or head in MONTHS or head.isdigit():
            continue
        rel = match.group("rel").casefold()
        phrase = " ".join([*match.group(0).split()[:2], *words])
        return EventReference(phrase=phrase, relation="until" if rel == "till" else rel, head=head)
    return None


def event_timeframe(event: EventReference, at: datetime) -> Timeframe:
    """The window an event bounds, the event taken to happen at `at`."""
    if event.relation in ("before", "until"):
        return Timeframe(event.phrase, None, at)
    return Timeframe(event.phrase, at, None)


def query_window(
    query: str, now: datetime, first_mention: Callable[[str, datetime], datetime | None]
) -> Timeframe | None:
    """The window the query names: a date phrase's (`timeframe`), else an event's, bounded at
    `first_mention(head, now)`, the earliest time the subject's history mentions the event up to
    `now` (None: the event is not found, and there is no window).

    The first mention, for every relation: an event is talked about from its planning or its telling
    on, and for a long time after it ("since the move I cycle"), so its first mention is the latest
    time it can be known to be still ahead. Bounded there, "before the move" keeps only what surely
    preceded it (and facts are read as they were then, not as the move left them), and "after the
    move" loses none of what followed it; the last mention would put months of aftermath "before"
    the move."""
    frame = timeframe(query, now)
    if frame is not None:
        return frame
    event = event_reference(query)
    if event is None:
        return None
    at = first_mention(event.head, now)
    return event_timeframe(event, at) if at is not None else None
