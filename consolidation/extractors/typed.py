"""Typed values: a fact's value is the typed value its statement names, never the clause around it.

Whatever reads a sentence (the rules, the self-disclosure reader, a model) hands its facts through
`typed_facts`: a value that holds a typed value inside a clause ("API gateway is Kong", "replaced Kong
with Envoy as their API gateway", "Porto in the spring") becomes that value ("Kong", "Envoy", "Porto");
which one is the current value is the grammar's to say (semantic.predicates.current_value). A typed
value with a word or two that name what it is ("the Business plan", "Coldplay concerts") stays as said.
A statement that tells a change of the speaker's own state ("I turned 42 on Saturday", "we replaced
Kong with Envoy") is a state, not an experience, unless it tells the past ("back in 2015 I moved ...").
Events, plans, issues and instructions keep their clause: what happened is their value.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol, TypeVar

from core import lexicon as core_lexicon
from semantic import predicates

from . import lexicon
from .fact_filters import LITERAL_ATTRIBUTES
from .first_person import goal_aimed, habit_held, manner_held, milestone_reached, state_held
from .parsing import left_by_verb, object_beside_when, perfect_state, with_head_noun

CLAUSE_VALUED = predicates.EVENT_ATTRIBUTES | {"answer_style"}
# A typed value may keep this many words beside it that say what it is ("Coldplay concerts").
HEAD_WORDS = predicates.HEAD_WORDS
_ARTICLES = frozenset({"the", "a", "an"})
# The typed values that keep the noun they modify: a name says which thing ("the Payments team"), a count
# already has its unit ("three-week sprints" is a count of weeks).
NAMED_KINDS = frozenset({"name", "version"})


class _Fact(Protocol):
    @property
    def attribute(self) -> str: ...
    @property
    def value(self) -> str: ...


F = TypeVar("F", bound=_Fact)


def is_typed(value: str, *, subject: str = "") -> bool:
    """Whether `value` is no longer than the typed value it names: no typed value at all, or one typed
    value (after an article) with at most HEAD_WORDS words after it that name what it is ("the Business
    plan"), none of them a word of grammar."""
    if not predicates.typed_spans(value, subject=subject):
        return True
    typed = predicates.current_value(value, subject=subject)
    if typed is None:
        return False
    before = [w for w in re.findall(r"[\w'’-]+", value[: typed.start]) if w.lower() not in _ARTICLES]
    after = re.findall(r"[\w'’-]+", value[typed.end :])
    grammar = predicates.function_words()
    return not before and len(after) <= HEAD_WORDS and not any(w.lower() in grammar for w in after)


def _held_before_left(value: str) -> str:
    """A value said with the one it replaces ("aisle seats instead of window seats", "tea rather than
    coffee"): the part before the words that bring the old value (change.txt, [after the new value]),
    when that part is a state of a word or a few; else the value as said."""
    markers = core_lexicon.alternation(predicates.section("change.txt", "after the new value"))
    m = re.search(rf",?\s+\b(?:{markers})\b", value, re.I)
    if m is None or m.start() == 0:
        return value
    held = value[: m.start()].strip()
    return held if predicates.term_kind(held) is not None else value


@functools.cache
def _leaving() -> tuple[frozenset[str], re.Pattern[str]]:
    verbs = frozenset(w for w in predicates.section("change.txt", "before the old value") if " " not in w)
    return verbs, re.compile(rf"\b(?:{core_lexicon.alternation(verbs)})\b", re.I)


def left_by_leaving(text: str, typed: predicates.Typed) -> bool:
    """Whether a verb of leaving (change.txt [before the old value]: quit, left, sold, ...) leaves `typed`:
    "quit their job at Fernwood Analytics" leaves Fernwood Analytics, and says when it did ("in August")."""
    verbs, said = _leaving()
    return bool(said.search(text)) and left_by_verb(text, typed.start, verbs)


def current_value(text: str, *, subject: str = "") -> predicates.Typed | None:
    """`predicates.current_value`, read past what a verb of leaving leaves however far it stands from the verb
    ("quit their job at Fernwood Analytics and joined Brightmoor": Brightmoor; "quit their job at Fernwood
    Analytics": None)."""
    current = predicates.current_value(text, subject=subject)
    if current is None or not left_by_leaving(text, current):
        return current
    left = {(t.start, t.end) for t in predicates.left_values(text, subject=subject)}
    return next(
        (
            t
            for t in predicates.typed_spans(text, subject=subject)
            if t.start > current.start and (t.start, t.end) not in left and not left_by_leaving(text, t)
        ),
        None,
    )


def typed_value(value: str, *, statement: str = "", subject: str = "") -> str:
    """The typed value `value` names, or `value` itself when it names none or already is one. The
    statement, when it holds the value, is read instead: it keeps whose things are named ("Ana's sister
    Anna lives in Lisbon": the value is Lisbon). A state said with the one it replaces is the state
    held ("aisle seats instead of window seats"); a clause that says a thing is in a state, the state
    ("visa application is pending")."""
    if not predicates.typed_spans(value, subject=subject):
        return (
            state_held(_held_before_left(value))
            or state_held(_held_before_left(predicates.without_when(value)))
            or habit_held(value)
            or manner_held(value)
            or _state_reached(value)
            or _held_before_left(value)
        )
    # A state said with when it started ("is divorced as of March", "is separated since the spring").
    held = predicates.without_when(value)
    if held != value and not predicates.typed_spans(held, subject=subject) and (state := state_held(held)):
        return state
    if is_typed(value, subject=subject):
        return value
    if state := _state_of_the_thing(value, subject=subject):
        return state
    # A thing of the speaker's named, then set to a value ("sets the AC to 24 degrees"): the value after
    # "to" or "at", not the name that says which thing.
    if (named := current_value(value, subject=subject)) and (value_set := _set_to(value, named, subject)):
        return value_set
    # A habit's object that names a typed value with its head noun ("follows a Mediterranean diet").
    habit, current = habit_held(value), current_value(value, subject=subject)
    if habit and current is not None and current.text in habit and is_typed(habit, subject=subject):
        return habit
    # How often a habit is done is no value of it: "drinks coffee every morning" holds coffee, "drives to
    # work every day" driving, "plays squash every Thursday" (a day said as recurring) squash.
    held = habit or manner_held(value)
    if current is not None and recurring(value, current):
        # ... however it is said ("plays hockey three times a week": the habit without how often)
        apart = _without_how_often(value, current)
        held = held or habit_held(apart) or manner_held(apart)
        if held and held not in current.text and current.text not in held:
            return held
    # A date that only says when is no value beside the thing the verb names ("got their orange belt the week
    # before 5 October 2026": "orange belt"): the thing is.
    if current is not None and current.kind == "date" and (thing := _thing_beside_when(value, current, subject)):
        return thing
    typed = current_value(statement, subject=subject) if value in statement else None
    if typed is None or typed.text not in value:
        typed = current_value(value, subject=subject)
    if typed is None or typed.kind not in NAMED_KINDS:
        return typed.text if typed is not None else value
    # ... a name with the noun it names ("is on the Payments team": "Payments team"), read from the parse
    said = statement if value in statement and statement[typed.start : typed.end] == typed.text else value
    return said[typed.start : with_head_noun(said, typed.start, typed.end, most=HEAD_WORDS)]


_MASK = "item"


def _state_reached(value: str) -> str:
    """The state a thing of the speaker's reached, said with a perfect and nothing after it ("parcel has
    arrived": "arrived"), when it is the state of a process (`_process_state`)."""
    state = perfect_state(value)
    return state if state and _process_state(state) else ""


def _state_of_the_thing(value: str, *, subject: str) -> str:
    """The state a thing named with a name or a number is in ("claim #7713 is now approved": "approved";
    "Etsy parcel has arrived": "arrived"): the typed values say which thing it is, in the thing's own words,
    and are no value of the state (as "my Trek bike" names no value, `predicates.typed_spans`). A state of
    a process only (a participle, a state in -ing, a preposition's phrase): "My Pixel 8 is great" says
    nothing of the kind. "" for anything else."""
    spans = predicates.typed_spans(value, subject=subject)
    if not spans:
        return ""
    masked = value
    for typed in reversed(spans):
        masked = masked[: typed.start] + _MASK + masked[typed.end :]
    state = state_held(masked) or perfect_state(value)
    if not state or _MASK in state.split() or predicates.typed_spans(state) or not _process_state(state):
        return ""
    return state


def _set_to(value: str, named: predicates.Typed, subject: str) -> str:
    """The typed value after "to" or "at" that a name said as a thing with its article or possessive is
    set to ("sets the AC to 24 degrees": "24 degrees"), or ""."""
    if named.kind not in NAMED_KINDS or not re.search(r"\b(?:the|my|their|our)\s+$", value[: named.start], re.I):
        return ""
    later = [t for t in predicates.typed_spans(value, subject=subject) if t.start >= named.end]
    if not later or not re.fullmatch(r"\s+(?:to|at)\s+", value[named.end : later[0].start]):
        return ""
    return later[0].text


def _without_how_often(value: str, typed: predicates.Typed) -> str:
    """`value` without how often it says it is done ("plays hockey three times a week": "plays hockey")."""
    before = re.sub(r"\s+(?:every|each|on)\s*$", "", value[: typed.start], flags=re.I)
    return " ".join(f"{before} {value[typed.end :]}".split())


def _thing_beside_when(value: str, when: predicates.Typed, subject: str) -> str:
    """The thing a clause's verb names beside a date that only says when it happened (`object_beside_when`),
    when the date is the clause's only typed value and the thing a state of a word or a few."""
    if len(predicates.typed_spans(value, subject=subject)) != 1:
        return ""
    thing = object_beside_when(value, when.start)
    return thing if thing and predicates.term_kind(thing) is not None else ""


def recurring(value: str, typed: predicates.Typed) -> bool:
    """The typed value says how often: a frequency, or a day said as recurring ("every Thursday", "on
    Thursdays")."""
    if typed.kind == "frequency":
        return True
    return typed.kind == "date" and bool(
        re.search(r"\b(?:every|each)\s+$", value[: typed.start], re.I) or re.fullmatch(r"[A-Z][a-z]+days", typed.text)
    )


def _state_since(value: str) -> str:
    """The state a statement says is held since a time ("has been dairy-free since March": "dairy-free"),
    or ""."""
    held = predicates.without_when(value)
    return state_held(held) if held != value else ""


# A perfect said with how long or since when it holds ("has been on the Atlas team for two years", "has
# lived in Leeds since 2019"): the perfect of English that runs up to the moment it is said.
_PERFECT_FOR = re.compile(
    r"^(?P<perfect>(?:has|have)\s+(?!been\s+\w+ing\b)\S.*?)\s+(?:(?P<since>since)|for)\s+(?P<how_long>[^,;]+?)[.!]?$",
    re.I,
)
_HOW_LONG = re.compile(r"^(?:(?:a|one|two|\w+)\s+)?(?:years?|months?|weeks?|decades?|ages|a while|a long time)$", re.I)


def _held_for(value: str, *, speaker: str, said_at: datetime | None) -> str:
    """The value a perfect says holds up to now, said with how long or since when ("has been on the Atlas
    team for two years": "Atlas team"; "has been a blue belt for a year": "blue belt"), or "": the value of
    the clause without how long, when it is a typed value or a state, and the clause tells no past."""
    m = _PERFECT_FOR.match(value.strip())
    if m is None:
        return ""
    how_long = m.group("how_long")
    if not m.group("since") and not (
        _HOW_LONG.match(how_long)
        or any(
            t.kind == "count" and t.unit in {"year", "month", "week", "day", "decade"}
            for t in predicates.typed_spans(how_long)
        )
    ):
        return ""
    perfect = m.group("perfect")
    if tells_the_past(perfect, said_at) or left_by_any(perfect, speaker):
        return ""
    if not predicates.typed_spans(perfect, subject=speaker):
        return state_held(perfect)
    held = typed_value(perfect, statement=perfect, subject=speaker)
    return held if held != perfect and is_typed(held, subject=speaker) else ""


def left_by_any(text: str, speaker: str) -> bool:
    """Whether the clause names a value it leaves (`predicates.left_values`, a verb of leaving)."""
    return bool(predicates.left_values(text, subject=speaker)) or any(
        left_by_leaving(text, t) for t in predicates.typed_spans(text, subject=speaker)
    )


def tells_the_past(text: str, said_at: datetime | None) -> bool:
    """A narrative of the past: "back in", "used to", or a year before the one it was said in."""
    if predicates.tells_the_past(text):
        return True
    years = [int(y) for y in re.findall(r"(?<![\w.])((?:19|20)\d\d)(?![\w.])", text)]
    return said_at is not None and any(y < said_at.year for y in years)


def _state_become(value: str, *, sentence: str, said_at: datetime | None) -> str:
    """The state a statement of becoming says is held now ("has gone vegan", "became vegetarian": a
    verb of change.txt [becoming], then a state of a word or two, `predicates.term_kind`), or ""."""
    verbs = core_lexicon.alternation(predicates.section("change.txt", "becoming"))
    m = re.fullmatch(
        rf"(?:has |have |had )?(?:[a-z]+ly |just )?(?:{verbs})\s+(?:[a-z]+ly\s+)?(?:a |an )?(?P<state>[a-z][\w'’ -]*?)"
        r"(?:,?\s+(?:now|these days|nowadays))?(?:\s+(?:in|on|around|since)\s+[\w ]+)?",
        value.strip(" ."),
        re.I,
    )
    # "went fishing" is an activity, not a state become
    if (
        m is None
        or predicates.term_kind(m.group("state")) is None
        or m.group("state").split()[0].lower().endswith("ing")
        or tells_the_past(sentence, said_at)
    ):
        return ""
    return m.group("state")


def _changed_to_state(value: str, *, sentence: str, speaker: str, said_at: datetime | None) -> str:
    """The state a change told of the speaker holds now ("switched to oat milk": "oat milk"; "switched to
    tea instead of coffee": "tea"), or "": a verb of change with "to", then a state of a word or a few
    (`first_person.state_held`); not the past."""
    if not predicates.says_change(value, subject=speaker) or tells_the_past(sentence, said_at):
        return ""
    # ... whatever it names as left with "from" before "to" ("switched from tennis to padel": padel)
    value = re.sub(r"\s+from\s+[^,;]+?\s+(?=(?:to|into)\s)", " ", value, count=1, flags=re.I)
    if held := state_held(_held_before_left(value)):
        return held
    # A thing of the speaker's changed to a state ("changed the default branch to main", "switched their
    # terminal theme to dracula"): the state after "to".
    m = _THING_CHANGED_TO.match(value.strip(" ."))
    if m is None or predicates.someone_elses(value, subject=speaker):
        return ""
    state = re.sub(r"^(?:a|an|the)\s+", "", _held_before_left(m.group("state")), flags=re.I)
    return state if predicates.term_kind(state) is not None else ""


# A verb, the speaker's thing (with "the" or a possessive), "to"/"into", the state.
_THING_CHANGED_TO = re.compile(
    r"^[a-z]+(?:\s+[a-z]+)?\s+(?:the|their|its)\s+[a-z][\w-]*(?:\s+[a-z][\w-]*){0,2}?\s+(?:to|into)\s+(?P<state>[a-z].*)$",
    re.I,
)


def _reached_or_aimed(value: str, *, sentence: str, speaker: str, said_at: datetime | None) -> tuple[str, str] | None:
    """(value, statement) of a count of years the speaker reached, said by the ordinal of their own
    milestone ("celebrated their 30th birthday": "turned 30"), or of a goal they aim at now ("is aiming
    for 12,000 steps a day": "goal is 12,000 steps a day"); None for anything else, the past, a
    hypothesis or a question."""
    if "?" in sentence or predicates.hedges(sentence) or tells_the_past(sentence, said_at):
        return None
    if count := milestone_reached(value):
        return count, f"{speaker} turned {count}."
    goal, said = goal_aimed(value)
    if goal:
        now = " now" if predicates.says_now(value) or predicates.says_change(value, subject=speaker) else ""
        return goal, f"{speaker}'s goal is{now} {said}."
    return None


def typed_facts(facts: Sequence[F], *, sentence: str, speaker: str, said_at: datetime | None = None) -> list[F]:
    """The facts of one sentence with typed values (see the module docstring)."""
    out: list[F] = []
    for fact in facts:
        attribute = fact.attribute
        if attribute in LITERAL_ATTRIBUTES:
            out.append(fact)
            continue
        held = _reached_or_aimed(fact.value, sentence=sentence, speaker=speaker, said_at=said_at)
        if held is not None:
            value, statement = held
            out.append(dataclasses.replace(fact, attribute="about", value=value, statement=statement))  # type: ignore[type-var]
            continue
        if attribute == "experiences" and (
            state := _state_become(fact.value, sentence=sentence, said_at=said_at)
            or _changed_to_state(fact.value, sentence=sentence, speaker=speaker, said_at=said_at)
            # a habit in the present ("reads e-books instead of paperbacks now") is held, not told
            or ("" if tells_the_past(sentence, said_at) else habit_held(fact.value))
            # ... and so is a state said with since when ("has been dairy-free since March")
            or ("" if tells_the_past(sentence, said_at) else _state_since(fact.value))
            # ... and a value a perfect holds up to now ("has been on the Atlas team for two years")
            or _held_for(fact.value, speaker=speaker, said_at=said_at)
        ):
            out.append(dataclasses.replace(fact, attribute="about", value=state))  # type: ignore[type-var]
            continue
        if (
            attribute == "experiences"
            and predicates.says_change(fact.value, subject=speaker)
            and not tells_the_past(sentence, said_at)
            and predicates.current_value(fact.value, subject=speaker) is not None
        ):
            attribute = "about"
        if attribute in CLAUSE_VALUED:
            out.append(fact)
            continue
        # A statement that names only what the speaker left ("quit their job at Fernwood Analytics") tells
        # what happened: an event, whose clause is its value, and no value held now.
        spans = predicates.typed_spans(fact.value, subject=speaker)
        if attribute == "about" and spans and all(left_by_leaving(fact.value, t) for t in spans):
            out.append(dataclasses.replace(fact, attribute="experiences"))  # type: ignore[type-var]
            continue
        value = typed_value(fact.value, statement=getattr(fact, "statement", ""), subject=speaker)
        if value != fact.value or attribute != fact.attribute:
            fact = dataclasses.replace(fact, attribute=attribute, value=value)  # type: ignore[type-var]
        out.append(fact)
    return out


# "The standup moved to 10:15", "The launch was pushed to May 19": in the speaker's own turn, a change
# told of a thing of theirs named with "the".
# A lead-in before the statement: "Starting next week, ...", "Quick update: ...".
_LEAD_IN = re.compile(r"^(?:[\w'’-]+\s+){0,4}[\w'’-]+(?:,|:)\s+")
_COPULA = re.compile(r"^\w+(?:\s+\w+){0,5}?\s+(?:is|are)\s+(?:now\s+|still\s+)?(?:at|on|in|every|from|due)?\b", re.I)
_THE_THING = re.compile(r"^(?:the|our|my)\s+(?P<rest>[a-z][\w'’ -]*\b.*)$", re.IGNORECASE)


_BARE_THING = re.compile(r"^(?P<rest>[A-Z][a-z]+(?:\s+[a-z]+)?\s+.*)$")


def _bare_thing(clause: str, speaker: str) -> re.Match[str] | None:
    """A thing named without an article ("Standup moved to 10am", "Sprints got extended to three
    weeks"), when the sentence tells a change to a count, a time, a date or an amount: a name there
    would as likely be a person's ("Sam moved to Lisbon"), and is not read."""
    m = _BARE_THING.match(clause)
    # "It was my birthday ...", "There are 6 of us ...": a word of grammar names no thing.
    if m is None:
        return None
    if not predicates.says_change(clause, subject=speaker):
        return None
    # A name renamed ("Orion has been renamed to Vega") is a thing: people are not renamed.
    if any(t.start == 0 for t in predicates.left_values(clause, subject=speaker)):
        return m
    typed = predicates.current_value(clause[0].lower() + clause[1:], subject=speaker)
    return m if typed is not None and typed.kind in {"count", "time", "date", "amount"} else None


# A label and its value: "Weekly mileage: 45 km now", "New locker number: 87". The label is a noun
# phrase of up to three words; after the colon comes a typed value and at most a word of time.
_LABELLED = re.compile(r"^(?:(?:my|our|the)\s+)?(?P<label>[A-Za-z][a-z-]+(?:\s+[a-z][a-z-]+){0,2}):\s+(?P<rest>.+)$")
_LABEL_TAIL = re.compile(r"^(?:,?\s*(?:now|currently|again|these days|as of \w+(?: \w+)?|since \w+(?: \w+)?))?$", re.I)


_LEAD_INS = lexicon.words("lead_ins.txt")


def _labelled(sentence: str, *, speaker: str) -> list[tuple[str, str]]:
    """(value, statement) for a label and its value said as a line of its own."""
    m = _LABELLED.match(sentence.strip().rstrip(".!"))
    if m is None or "?" in sentence:
        return []
    label, rest = m.group("label"), m.group("rest")
    if any(w.lower() in predicates.function_words() for w in label.split()) or label.lower() in _LEAD_INS:
        return []
    thing = label[0].lower() + label[1:]
    spans = predicates.typed_spans(rest, subject=speaker)
    # ... or the state of a process ("Ticket status: closed")
    if not spans and (state := state_held(f"{thing} is {rest.strip(' ,')}")) and _process_state(state):
        return [(state, f"{speaker}'s {thing} is {rest.strip(' ,')}.")]
    article = re.match(r"(?:a|an|the)\s+", rest, re.I)
    start = article.end() if article else 0
    if not spans or spans[0].start != start or not _LABEL_TAIL.match(rest[spans[0].end :].strip()):
        return []
    return [(spans[0].text, f"{speaker}'s {thing} is {rest.strip(' ,')}.")]


def _process_state(state: str) -> bool:
    first = state.split()[0].lower()
    return (
        bool(re.search(r"(?:ed|en)$", first))
        or first in lexicon.sections("moment.txt").get("states in -ing", ())
        or first in predicates.function_words()
    )


@functools.cache
def _taking_the_place() -> re.Pattern[str]:
    verbs = core_lexicon.alternation(predicates.section("change.txt", "taking the place"))
    return re.compile(
        r"^(?P<value>[A-Z][\w'’.+#&-]*(?: [A-Z0-9][\w'’.+#&-]*){0,3}|[a-z][\w-]*(?: [a-z][\w-]*){0,2}?)"
        rf"\s+(?:has\s+|have\s+)?(?:now\s+)?(?:{verbs})(?:\s+(?P<old>(?!as\b)[\w'’.+#&-]+(?: [\w'’.+#&-]+){{0,3}}?))?"
        r"\s+as\s+(?:my|our)\s+(?P<thing>[a-z][\w-]*(?: [a-z][\w-]*){0,2})$"
    )


def _took_the_place(sentence: str, *, speaker: str) -> list[tuple[str, str]]:
    """(value, statement) for a value said to take the place of another as a thing of the speaker's
    ("Muse has overtaken Radiohead as my favourite band": Muse, "... favourite band is now Muse instead of
    Radiohead")."""
    m = _taking_the_place().match(sentence.strip().rstrip(".!"))
    if m is None or m.group("value").lower() in predicates.function_words() | _ARTICLES:
        return []
    value, old = m.group("value"), m.group("old")
    if predicates.comparable_kind(value) is None:
        return []
    left = f" instead of {old}" if old else ""
    return [(value, f"{speaker}'s {m.group('thing')} is now {value}{left}.")]


def changed_things(sentence: str, *, speaker: str, said_at: datetime | None) -> list[tuple[str, str]]:
    """(value, statement) for a sentence of the speaker's that tells a change of a thing of theirs
    without a pronoun ("The planning meeting moved to Thursdays"), or that gives a thing's value after
    its label ("Weekly mileage: 45 km now"): the typed value it holds now and the sentence said of the
    speaker. Nothing for a question, a denial, a hypothesis, someone else's thing, an addition or the
    past."""
    if labelled := _labelled(sentence, speaker=speaker) or _took_the_place(sentence, speaker=speaker):
        return labelled
    said = sentence.strip().rstrip(".!")
    # An old value set off by commas is no lead-in ("The project, formerly called Atlas, is now ...").
    lead = _LEAD_IN.match(said)
    appositive = lead and "," in lead.group() and "," in said[lead.end() :]
    clause = (
        said[lead.end() :] if lead and not (appositive and predicates.opens_with_left(said[lead.end() :])) else said
    )
    m = _THE_THING.match(clause) or _bare_thing(clause, speaker)
    renamed = any(t.start == 0 for t in predicates.left_values(clause, subject=speaker))
    if m is not None and m.start("rest") == 0 and not renamed:  # the thing's own word opens the sentence: no name
        clause = clause[0].lower() + clause[1:]
    # Said of a thing with "the", a change or a copula with its value ("The standup is at 9:30").
    if m is None or "?" in sentence or not (predicates.says_change(clause, subject=speaker) or _COPULA.search(clause)):
        return []
    if (
        predicates.denies(clause)
        or predicates.hedges(clause)
        or predicates.adds(clause)
        or predicates.someone_elses(clause)
        or tells_the_past(predicates.without_left(clause, subject=speaker), said_at)
    ):
        return []
    typed = predicates.current_value(clause, subject=speaker)
    rest = m.group("rest") if not renamed else clause[m.start("rest") :]
    # ... or the state of a process a thing named with "the" is in ("The kitchen renovation is finished",
    # "The permit is on hold"): a participle, a state in -ing or a preposition's phrase, not an
    # evaluation ("The view is priceless").
    value = typed.text if typed is not None else state_held(predicates.without_when(rest))
    if typed is None and value and not _process_state(value):
        return []
    if not value:
        return []
    return [(value, f"{speaker}'s {rest if renamed else rest[0].lower() + rest[1:]}.")]
