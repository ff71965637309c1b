"""The offline extractor: documented sentence patterns over what the subject said, no model, no network.

It reads the subject's own messages (role user/human/customer), one sentence at a time, and skips
questions, conditionals and negated statements. Each pattern names its attribute, category and
confidence; docs/consolidation.md lists them with the precision and recall measured on
tests/fixtures/extraction/.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import partial

from django.conf import settings

from core.lexicon import alternation
from core.terms import terms
from episodic.models import Episode
from semantic import predicates
from semantic.models import Cardinality, FactCategory
from semantic.predicates import OTHER_PEOPLE
from semantic.types import FactCandidate
from semantic.validation import STATE_PHRASES, is_fragment
from tenants.models import Tenant

from . import latent, lexicon, reading
from .base import ExtractionResult, Replacement, SummaryResult, extractable
from .fact_filters import LITERAL_ATTRIBUTES, constraints, statement_is_durable, value_is_complete
from .first_person import QUESTION_AFTER_COMMA, as_stated, as_typed_formally, disclose, pointed_back, without_now
from .summary import extractive_summary, lines_outside_code
from .typed import changed_things, typed_facts

SPEAKER_ROLES = frozenset({"user", "human", "customer", "subject", ""})
# Roles that are not a person speaking about themselves; any other role names the speaker ("Caroline").
NOT_A_SPEAKER = frozenset({"assistant", "system", "tool", "agent", "bot", "ai", "model", "developer", "function"})


def speaker_of(role: str, subject: str) -> str | None:
    """Who is speaking in a message with this role: the subject for the generic user roles, the role
    itself when it is a name, None for the agent's side."""
    low = role.strip().lower()
    if low in SPEAKER_ROLES:
        return subject
    if low in NOT_A_SPEAKER:
        return None
    return role.strip()


# Known tools name the attribute they fill (data/tools.txt); anything else is a multi-valued "uses".
# Tools whose names are also common words ("the rails", "a cursor", "render the page") are in the
# sections "<slot> written as a name": they count only written as a name, with a capital.
_BY_NAME = " written as a name"
_KNOWN_TOOLS = {
    slot: frozenset(names) for slot, names in lexicon.sections("tools.txt").items() if not slot.endswith(_BY_NAME)
}
_KNOWN_TOOLS_BY_NAME = {
    slot.removesuffix(_BY_NAME): frozenset(names)
    for slot, names in lexicon.sections("tools.txt").items()
    if slot.endswith(_BY_NAME)
}
PROPER_ONLY = frozenset(name for names in _KNOWN_TOOLS_BY_NAME.values() for name in names)
TOOL_ATTRIBUTES = {
    name: (attr, name)
    for tools in (_KNOWN_TOOLS, _KNOWN_TOOLS_BY_NAME)
    for attr, names in tools.items()
    for name in names
}

_SENTENCE = re.compile(rf"(?<=[.!?])\s+|\n+|{QUESTION_AFTER_COMMA}", re.I)
_QUESTION_OR_HYPOTHETICAL = re.compile(
    r"\?\s*$|^\s*(?:if|when|whether|should|would|could|can|do|does|did|is|are|what|which|how|why)\b|\bif (?:i|we)\b",
    re.IGNORECASE,
)
_HEDGE = re.compile(r"\b(?:i think|i guess|maybe|probably|might|not sure)\b", re.IGNORECASE)
_FILLER_TAIL = re.compile(
    r"\s+(?:now|nowadays|these days|currently|at the moment|right now|for now|too|as well|mostly|"
    r"for everything|for most things|everywhere|lately|recently|anyway|though|actually|locally|in production)\s*$",
    re.IGNORECASE,
)
_TIME_TAIL = re.compile(
    r"\s+(?:yesterday|today|(?:last|this) (?:week|month|year|quarter)|"
    r"(?:a few|a couple of|two|three|\d+) (?:days|weeks|months|years) ago)\s*$",
    re.IGNORECASE,
)
_TOOL_TAIL = re.compile(r"\s+(?:for|in|at|on|to|with|from|as|because|since)\s+.*$", re.IGNORECASE)
_LEADING_ARTICLE = re.compile(r"^(?:the|a|an|our|my)\s+", re.IGNORECASE)
_END = r"(?=\s*(?:\.(?!\w)|[,;!?]|\band\b|\bbut\b|\bbecause\b|\bsince\b|\bwhich\b|\bso\b|$))"
# A dot inside a word does not end a value: a decimal point ("Ubuntu 22.04", "MySQL 8.4"), a name
# ("Fly.io", "Node.js", "ASP.NET").
_V = r"(?P<v>(?:[^.,;!?]|\.(?=\w)){1,80}?)"
# Lists ("Django, Celery and Postgres") run to the end of the clause.
_LIST = r"(?P<v>(?:[^.;!?]|\.(?=\w)){1,120}?)"
_LIST_END = (
    r"(?=\s*(?:\.(?!\w)|[;!?]|,?\s*\band (?:i|we|i'm|we're|my|our)\b|\bbut\b|\bbecause\b|\bsince\b|\bwhich\b|\bso\b|$))"
)

# People other than the speaker, as a regex fragment (semantic/data/other_people.txt).
_SOMEONE_ELSES_WORDS = r"\b(?:" + alternation(OTHER_PEOPLE) + r")\b"
MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DATE = (
    rf"(?:(?:on|by|in|next|this)\s+)?(?:\d{{4}}-\d{{2}}-\d{{2}}|(?:{MONTHS})\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?|"
    rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTHS})(?:\s+\d{{4}})?|(?:next|this)\s+(?:week|month|year|quarter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|(?:q[1-4])(?:\s+\d{4})?|tomorrow)"
)


@dataclasses.dataclass(frozen=True)
class Found:
    attribute: str
    value: str
    category: str
    confidence: float
    statement: str
    cardinality: str | None = None
    entity: str | None = None


# Words that stand for a thing without naming it: never a fact's value.
_NOT_A_VALUE = lexicon.words("not_a_value.txt")


def _clean_value(raw: str, *, max_words: int = 8, keep_time: bool = False, literal: bool = False) -> str:
    value = raw.strip(" \t\"'`")
    for _ in range(2):
        value = _FILLER_TAIL.sub("", value).strip()
        if not keep_time:
            value = _TIME_TAIL.sub("", value).strip()
    value = _LEADING_ARTICLE.sub("", value).strip()
    if not value or len(value.split()) > max_words or value.lower() in _NOT_A_VALUE:
        return ""
    # Identifiers (an email address, a phone number) are not phrases and are not judged as such.
    if not literal and is_fragment(value):
        return ""
    return value


def _tool(value: str) -> tuple[str, str | None]:
    """The attribute a tool fills, by its name (or its first words: "PostgreSQL 16" is a database)."""
    low = value.lower()
    for name, (attribute, _canonical) in sorted(TOOL_ATTRIBUTES.items(), key=lambda kv: -len(kv[0])):
        if name in PROPER_ONLY and not value[:1].isupper():
            continue
        if low == name or (low.startswith(name + " ") and _EDITION.fullmatch(low[len(name) + 1 :])):
            return attribute, Cardinality.SINGLE
    return "uses", Cardinality.MULTI


# What may follow a known tool's name and still be that tool: a version or an edition.
_EDITION = re.compile(
    r"v?\d+(?:\.\d+)*(?:\s+lts)?|lts|atlas|aurora|rds|serverless|cloud|enterprise|community|flexible server",
    re.IGNORECASE,
)


Rule = tuple[str, re.Pattern[str], Callable[[re.Match[str], str], list[Found]]]


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _simple(
    attribute: str,
    category: str,
    confidence: float,
    template: str,
    *,
    cardinality: str | None = None,
    words: int = 8,
    literal: bool = False,
) -> Callable[[re.Match[str], str], list[Found]]:
    def build(m: re.Match[str], subject: str) -> list[Found]:
        value = _clean_value(m.group("v"), max_words=words, literal=literal)
        if not value:
            return []
        return [
            Found(attribute, value, category, confidence, template.format(s=subject, v=value), cardinality=cardinality)
        ]

    return build


def _split_list(text: str) -> list[str]:
    return [p for p in re.split(r"\s*(?:,|\band\b|\bplus\b|&|\bas well as\b)\s*", text) if p.strip()]


def _each(
    attribute: str, category: str, confidence: float, template: str, *, words: int = 5
) -> Callable[[re.Match[str], str], list[Found]]:
    def build(m: re.Match[str], subject: str) -> list[Found]:
        out = []
        parts = _split_list(m.group("v"))
        if not _list_is_whole(parts):
            return []
        for part in parts:
            value = _clean_value(part, max_words=words)
            if value:
                out.append(
                    Found(
                        attribute,
                        value,
                        category,
                        confidence,
                        template.format(s=subject, v=value),
                        cardinality=Cardinality.MULTI,
                    )
                )
        return out

    return build


def _list_is_whole(parts: list[str]) -> bool:
    """A list the rules understand: every part stands alone, and no bare word sits beside a phrase
    ("the feelings and plots", "the energy, diversity and food of this city" share what follows or
    precedes them; a part read alone would be a fragment)."""
    cleaned = [_clean_value(p) for p in parts]
    if len(parts) > 1 and (not all(cleaned) or any(_LEANING.search(p) for p in parts)):
        return False
    lengths = [len(c.split()) for c in cleaned]
    return not (len(parts) > 1 and min(lengths) == 1 and max(lengths) >= 3)


def _employer(m: re.Match[str], subject: str) -> list[Found]:
    employer, _, title = m.group("v").partition(" as ")
    out = []
    employer = _clean_value(employer, max_words=4)
    title = _clean_value(title, max_words=4)
    if employer:
        out.append(Found("employer", employer, FactCategory.BUSINESS_CONTEXT, 0.75, f"{subject} works at {employer}."))
    if title:
        out.append(Found("job_title", title, FactCategory.BUSINESS_CONTEXT, 0.7, f"{subject} works as {title}."))
    return out


def _employer_named(value: str, subject: str) -> list[Found]:
    if not value[:1].isupper():
        return []
    return [Found("employer", value, FactCategory.BUSINESS_CONTEXT, 0.75, f"{subject} works at {value}.")]


def _uses(confidence: float, template: str) -> Callable[[re.Match[str], str], list[Found]]:
    def build(m: re.Match[str], subject: str) -> list[Found]:
        out = []
        # "we use Django and Postgres" names two tools.
        values = [_clean_value(_TOOL_TAIL.sub("", part), max_words=4) for part in _split_list(m.group("v"))]
        slots = [_tool(v)[0] for v in values if v]
        for value in values:
            # "Redis for the cache", "Go in production": the tool is the head of the phrase.
            if not value:
                continue
            attribute, cardinality = _tool(value)
            # Two of one slot in one breath ("we use Django and FastAPI") are both in use: neither replaces.
            if cardinality == Cardinality.SINGLE and slots.count(attribute) > 1:
                attribute, cardinality = "uses", Cardinality.MULTI
            out.append(
                Found(
                    attribute,
                    value,
                    FactCategory.TECHNICAL_ENVIRONMENT,
                    confidence,
                    template.format(s=subject, v=value),
                    cardinality=cardinality,
                )
            )
        return out

    return build


def _migrated(m: re.Match[str], subject: str) -> list[Found]:
    """The statement keeps what was moved ("moved their servers to ...": it is the predicate) and what
    it left ("switched from Evernote to ...": the old value it names). A move to a group of people ("moved
    to the Payments team") is no migration: the other readers read it as the speaker's team."""
    moved_to = (_clean_value(m.group("v"), max_words=4) or "").lower().split()
    if moved_to and moved_to[-1] in _GROUP_HEADS:
        return []
    what = re.sub(r"^(?:our|my)\b", "their", m.group("what") or "", flags=re.IGNORECASE)
    old = re.sub(r"^(?:our|my)\b", "their", m.group("old") or "", flags=re.IGNORECASE).replace("{", "").replace("}", "")
    said = " ".join(w for w in (m.group("verb").lower(), what, f"from {old}" if old else "") if w)
    return _uses(0.85, f"{{s}} {said} to {{v}}.")(m, subject)


# What a place is not: a name with a version ("PostgreSQL 16", "Python 3.12", "v2"), or a phrase whose
# head noun is a product's or a technology's ("the Enterprise plan", "a new framework") or a group's of
# people ("the Payments team").
_VERSIONED = re.compile(r"(?:^|\s)v?\d+(?:\.\d+)*(?:\s+lts)?$|\bv?\d+\.\d+", re.IGNORECASE)
_TECHNOLOGY_HEADS = lexicon.words("technology_heads.txt")
_GROUP_HEADS = lexicon.words("group_heads.txt")


def _not_a_place(value: str) -> bool:
    words = value.lower().split()
    return (
        _tool(value)[0] != "uses"
        or bool(_VERSIONED.search(value) and not value[:1].isdigit())
        or (bool(words) and (words[-1] in _TECHNOLOGY_HEADS or words[-1] in _GROUP_HEADS))
    )


def _moved_to(m: re.Match[str], subject: str) -> list[Found]:
    """ "We moved to X" names where the speaker lives, unless X is a product or a version: then the
    migration rule below reads it ("We moved to PostgreSQL 16" is the database)."""
    value = _clean_value(m.group("v"), max_words=4)
    if not value or _not_a_place(value):
        return []
    # The statement keeps the move: it tells the change ("moved to 3 Harbour Row" after "my address is ...").
    return [Found("location", value, FactCategory.CONTACT_INFO, 0.75, f"{subject} moved to {value}.")]


def _names_a_host(value: str) -> bool:
    """Where something runs is named: a known tool, or a name ("Hetzner", "Fly.io"); "on hold" or "on
    track" says a state, "on Fridays" a time."""
    typed = predicates.value_kind(value)
    return _tool(value)[0] != "uses" or (typed is not None and typed.kind == "name")


def _runs_on_attribute(where: str) -> tuple[str, str]:
    attribute, _cardinality = _tool(where)
    return ("runs_on" if attribute == "uses" else attribute), where


def _runs_on(m: re.Match[str], subject: str) -> list[Found]:
    what = _clean_value(m.group("what"), max_words=4)
    where = _clean_value(m.group("v"), max_words=4)
    out: list[Found] = []
    if what:
        attribute, cardinality = _tool(what)
        out.append(
            Found(
                attribute,
                what,
                FactCategory.TECHNICAL_ENVIRONMENT,
                0.75,
                f"{subject} runs {what}.",
                cardinality=cardinality,
            )
        )
    if where:
        attribute, cardinality = _tool(where)
        if attribute == "uses":
            attribute, cardinality = "runs_on", Cardinality.SINGLE
        out.append(
            Found(
                attribute,
                where,
                FactCategory.TECHNICAL_ENVIRONMENT,
                0.75,
                f"{subject} runs {what or 'their systems'} on {where}.",
                cardinality=cardinality,
            )
        )
    return out


def _our_thing(m: re.Match[str], subject: str) -> list[Found]:
    thing = m.group("thing").lower()
    value = _clean_value(m.group("v"), max_words=4)
    if not value:
        return []
    attribute = {
        "db": "database",
        "database": "database",
        "cloud": "cloud_provider",
        "cloud provider": "cloud_provider",
        "os": "operating_system",
        "operating system": "operating_system",
        "ci": "ci",
        "editor": "editor",
        "employer": "employer",
        "framework": "web_framework",
        "backend framework": "web_framework",
        "web framework": "web_framework",
        "api framework": "web_framework",
    }.get(thing, "uses")
    if attribute == "employer":
        # "My employer is Acme Robotics" names it; "my employer is great" describes it.
        return _employer_named(value, subject) if m.group("det").lower() != "the" else []
    # "the database is slow" describes it; only "the database is <a known database>" names it.
    if m.group("det").lower() == "the" and _tool(value)[0] != attribute:
        return []
    return [
        Found(
            attribute,
            value,
            FactCategory.TECHNICAL_ENVIRONMENT,
            0.8,
            f"{subject}'s {thing} is {value}.",
            cardinality=Cardinality.MULTI if attribute == "uses" else Cardinality.SINGLE,
        )
    ]


def _favourite(m: re.Match[str], subject: str) -> list[Found]:
    # "colour" and "color" are one slot.
    what = "_".join(
        predicates.one_spelling(w) for w in re.sub(r"[^a-z0-9]+", "_", m.group("what").lower()).split("_") if w
    )
    value = _clean_value(m.group("v"), max_words=6)
    if not value or not what:
        return []
    return [
        Found(
            f"favorite_{what}",
            value,
            FactCategory.PREFERENCES,
            0.8,
            f"{subject}'s favourite {m.group('what').lower()} is {value}.",
            cardinality=Cardinality.SINGLE,
        )
    ]


def _plan(m: re.Match[str], subject: str) -> list[Found]:
    value = _clean_value(m.group("v"), max_words=10, keep_time=True)
    if not value:
        return []
    when = re.search(_DATE, value, re.IGNORECASE)
    statement = f"{subject} plans to {value}."
    return [
        Found(
            "plans",
            value,
            FactCategory.BUSINESS_CONTEXT if when else FactCategory.OTHER,
            0.65,
            statement,
            cardinality=Cardinality.MULTI,
        )
    ]


def _issue(template: str, confidence: float = 0.7) -> Callable[[re.Match[str], str], list[Found]]:
    def build(m: re.Match[str], subject: str) -> list[Found]:
        value = _clean_value(m.group("v"), max_words=10)
        if not value:
            return []
        return [
            Found(
                "known_issues",
                value,
                FactCategory.KNOWN_ISSUES,
                confidence,
                template.format(s=subject, v=value),
                cardinality=Cardinality.MULTI,
            )
        ]

    return build


# A phone number: at least seven digits, with the separators people write.
_PHONE_VALUE = re.compile(r"(?<![\w.+])(?P<v>\+?\(?\d[\d\s().-]{5,18}\d)(?![\w])")
# The words that make a number in the sentence a phone number. "number" counts only after a word that
# makes it one ("my number", "new number", "changed numbers"), not after another noun ("order number").
_PHONE_CUE = re.compile(
    r"\b(?:(?:(?:my|our|the|new|current|old|phone|mobile|cell|contact|changed|switched)\s+)+numbers?"
    r"|(?:cell\s+|mobile\s+)?phone|mobile|cell|sim(?:\s+card)?|(?:my|our)\s+(?:\w+\s+)?contact(?:\s+(?:details|info))?"
    r"|(?:contact|call|reach|text|ring|whatsapp)\s+me)\b",
    re.IGNORECASE,
)
_OWN_CUE = re.compile(r"^(?:my|our)\b|\bme$", re.IGNORECASE)
# Before a cue: whose number it is when it is not the speaker's ("my sister's number", "their phone").
# Contractions of "is" ("it's", "here's") are not possessives.
_OTHERS_BEFORE = re.compile(
    r"(?:\b(?!(?:it|that|here|there|what|he|she|who|let)'s)\w+'s|\b(?:his|her|their|your|its)|"
    + _SOMEONE_ELSES_WORDS
    + r")\s+(?:\w+\s+)?$",
    re.IGNORECASE,
)
_OLD_NUMBER = re.compile(r"\b(?:old|previous|former)\b", re.IGNORECASE)
_NEW_NUMBER = re.compile(r"\b(?:new|now|current)\b", re.IGNORECASE)


def _phone(m: re.Match[str], subject: str) -> list[Found]:
    """A phone number in a sentence that says it is the speaker's: the cue nearest before the number
    ("reach me at", "my new number is", "update my contact:"), or after it when none comes before
    ("use ... from now on; the old number is gone"). Someone else's number, a number with another noun
    ("order number"), and the value the sentence marks as the old one ("..., not 555-0134") are not."""
    sentence, start = m.string, m.start("v")
    before = [c for c in _PHONE_CUE.finditer(sentence, 0, start)]
    cue = before[-1] if before else _PHONE_CUE.search(sentence, m.end("v"))
    if cue is None:
        return []
    if not _OWN_CUE.search(cue.group(0)) and _OTHERS_BEFORE.search(sentence[: cue.start()]):
        return []
    if _OLD_VALUE_CUE.search(sentence[:start]):
        return []
    if before and _OLD_NUMBER.search(cue.group(0)) and not _NEW_NUMBER.search(sentence[cue.end() : start]):
        return []
    value = _clean_value(m.group("v"), max_words=8, literal=True)
    if sum(ch.isdigit() for ch in value) < 7:
        return []
    return [Found("phone", value, FactCategory.CONTACT_INFO, 0.8, f"{subject}'s phone number is {value}.")]


# The head nouns of occupations (data/occupations.txt): "I'm a <...> <head>" names a job only when the phrase
# ends in one.
OCCUPATIONS = lexicon.words("occupations.txt")
_TITLE = r"(?P<v>(?:[\w-]+ ){0,3}[\w-]+)"
_TITLE_END = r"(?= now\b| these days\b| at\b| for\b| in\b| by trade\b|\s*[,.;!]|\s*$)"


def _occupation(m: re.Match[str], subject: str) -> list[Found]:
    """A job title when the phrase's head noun is an occupation's ("a senior data analyst", "UX
    designer"), not any "I'm a <noun>" ("a big fan", "a morning person")."""
    value = _clean_value(m.group("v"), max_words=4)
    if not value or value.split()[-1].lower() not in OCCUPATIONS:
        return []
    return [Found("job_title", value, FactCategory.BUSINESS_CONTEXT, 0.7, f"{subject} works as {value}.")]


# The states a named project or product is in: a closed vocabulary, so that "Atlas is great" says nothing.
_STATUS = rf"(?P<v>{STATE_PHRASES})"
_NAMED = r"(?P<thing>(?-i:[A-Z][\w-]+(?: [A-Z][\w-]+)?))"


def _status(m: re.Match[str], subject: str) -> list[Found]:
    thing, value = m.group("thing"), m.group("v").lower()
    if thing.lower() in {"it", "this", "that", "update", "status", "the", "our", "my"}:
        return []
    # A capital that only starts the sentence ("Dinner is done") is no name: it takes a kind of thing
    # ("the Atlas project", "Atlas, my main project,") or a position inside the sentence.
    groups = m.groupdict()
    if "kind" in groups:
        named = bool(groups["kind"]) or bool(re.search(r"\b(?:project|app|product|release)\b", groups["appos"] or ""))
        if not named and not m.string[: m.start("thing")].strip(" \t\"'(").lower().removesuffix("the").strip():
            return []
    return [
        Found(
            "status",
            value,
            FactCategory.BUSINESS_CONTEXT,
            0.7,
            f"{thing} is {value}.",
            cardinality=Cardinality.SINGLE,
            entity=thing,
        )
    ]


def _issue_with_subject(m: re.Match[str], subject: str) -> list[Found]:
    thing = _clean_value(m.group("thing"), max_words=4)
    if not thing:
        return []
    value = f"{thing} {m.group('v').strip().lower()}"
    return [
        Found(
            "known_issues",
            value,
            FactCategory.KNOWN_ISSUES,
            0.7,
            f"{subject} reports: {value}.",
            cardinality=Cardinality.MULTI,
        )
    ]


# The people a speaker has one of at a time: "my manager is X" then "my new manager is Y" is an update.
# Several words name one role (data/roles.txt); the section is the attribute.
_ROLES = lexicon.sections("roles.txt")
ROLE_ATTRIBUTES = {word: attribute for attribute, words in _ROLES.items() for word in words}
_ROLE = r"(?P<role>" + "|".join(sorted(map(re.escape, ROLE_ATTRIBUTES), key=len, reverse=True)) + r")"
# A person's name: capitalised words (a particle may sit between: "Ana de Souza").
_PERSON = r"(?P<v>(?-i:[A-Z][\w'-]+(?:\s+(?:(?:de|da|van|von|del|la|le|bin|al)\s+)?[A-Z][\w'-]+){0,2}))"
_PERSON_END = (
    r"(?=\s*(?:\.(?!\w)|[,;!?)]|\s(?:now|since|from|as|and|but|because|who|after|is|was|has|had|will|says|said)\b|$))"
)


def _role(m: re.Match[str], subject: str, default: str = "manager") -> list[Found]:
    """A person the speaker has one of (manager, partner, doctor...): single-valued, so that a new one
    replaces the old."""
    value = _clean_value(m.group("v"), max_words=4)
    words = m.groupdict().get("role") or default
    attribute = ROLE_ATTRIBUTES.get(words.lower())
    if not value or attribute is None or value.lower() in _NOT_A_PERSON:
        return []
    statement = (
        f"{value} reviews {subject}'s code." if attribute == "reviewer" else f"{subject}'s {words.lower()} is {value}."
    )
    return [
        Found(
            attribute,
            value,
            FactCategory.BUSINESS_CONTEXT if attribute in {"manager", "mentor", "reviewer"} else FactCategory.OTHER,
            0.8,
            statement,
            cardinality=Cardinality.SINGLE,
        )
    ]


_NOT_A_PERSON = frozenset({"i", "we", "he", "she", "they", "it", "this", "that", "the", "my", "our", "a", "an"})

# A time zone is a typed value: an abbreviation, an offset, a region's zone or an IANA name.
TIME_ZONES = (
    r"(?P<v>(?-i:(?:UTC|GMT)\s?[+-−]\s?\d{1,2}(?::?\d\d)?|UTC|GMT|Z|"
    r"[ECWM]ES?T|[ECWM]ET|BST|IST|JST|KST|SGT|HKT|AE[SD]T|AC[SD]T|AW[SD]T|NZ[SD]T|[PMCEAH][SD]T|AKST|AKDT|"
    r"(?:US |U\.S\. )?(?:Eastern|Pacific|Central|Mountain)(?: (?:Standard |Daylight )?Time)?|"
    r"[A-Z][a-z]+/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?))"
    r"(?![\w/])"
)


def _timezone(m: re.Match[str], subject: str) -> list[Found]:
    value = m.group("v")
    return [
        Found(
            "timezone",
            value,
            FactCategory.CONTACT_INFO,
            0.8,
            f"{subject}'s time zone is {value}.",
            cardinality=Cardinality.SINGLE,
        )
    ]


def _due(m: re.Match[str], subject: str) -> list[Found]:
    """The date a named event of the speaker's is due on; a later date for the same event replaces it."""
    what = (m.group("what") or m.group("what2") or m.group("what3")).lower()
    value = _clean_value(m.group("v"), max_words=5, keep_time=True, literal=True)
    if not value:
        return []
    return [
        Found(
            f"{re.sub(r'[^a-z]+', '_', what)}_date",
            value,
            FactCategory.BUSINESS_CONTEXT,
            0.8,
            f"{subject}'s {what} is due {value}.",
            cardinality=Cardinality.SINGLE,
        )
    ]


# "pytest for tests", "uv for packaging": a preference for a purpose. The purpose names the slot, so
# that a new choice for the same purpose replaces the old; its word's stem keys it (test, tests, testing).
_PURPOSE = (
    r"(?P<purpose>(?:the |my |our |all )?[a-z][a-z-]+"
    r"(?: (?!(?:from|now|instead|going|too|on|in|at|with|and|or|but|then|please)\b)[a-z][a-z-]+)?)"
)


def _purpose_slot(purpose: str) -> str:
    words = [w for w in re.findall(r"[a-z]+", purpose.lower()) if w not in {"the", "my", "our", "all"}]
    # The singular of a plural noun, so that "diagrams" and "diagram" are one purpose; the words are
    # otherwise kept as said ("packaging", "linting").
    singular = [re.sub(r"(?<=[^s])s$", "", w) if len(w) > 3 else w for w in words]
    return "_".join(singular)


def _prefers_for(m: re.Match[str], subject: str) -> list[Found]:
    value = _clean_value(m.group("v"), max_words=4)
    purpose = m.group("purpose").strip()
    slot = _purpose_slot(purpose)
    if not value or not slot or _LEANING.search(value) or _LEANING.search(purpose):
        return []
    return [
        Found(
            f"prefers_for_{slot}",
            value,
            FactCategory.PREFERENCES,
            0.75,
            f"{subject} prefers {value} for {purpose}.",
            cardinality=Cardinality.SINGLE,
        )
    ]


# How the speaker wants answers written: a preference whose phrase is headed by a kind of answer
# ("short answers with the code first", "bullet points only", "detailed explanations before any code").
# One style at a time: a new one replaces the old.
_ANSWER_KINDS = r"(?:answers?|replies|reply|responses?|explanations?|bullet points|bullets|summaries)"
_ANSWER_STYLE = re.compile(rf"^(?:[a-z-]+ ){{0,2}}{_ANSWER_KINDS}\b", re.IGNORECASE)


def _answer_style(m: re.Match[str], subject: str) -> list[Found]:
    # A style is said of answers in general: "the answer to question 3" is one answer.
    if re.match(r"(?:the|this|that|your|an?) ", m.group("v"), re.IGNORECASE):
        return []
    value = _clean_value(m.group("v"), max_words=10, literal=True)
    if not value or not _ANSWER_STYLE.match(value) or _LEANING.search(value):
        return []
    return [
        Found(
            "answer_style",
            value,
            FactCategory.PREFERENCES,
            0.8,
            f"{subject} wants {value}.",
            cardinality=Cardinality.SINGLE,
        )
    ]


RULES: list[Rule] = [
    # --- contact details
    (
        "email",
        _p(r"(?P<v>[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,})"),
        _simple("email", FactCategory.CONTACT_INFO, 0.85, "{s}'s email address is {v}.", words=1, literal=True),
    ),
    (
        "contact_preference",
        _p(r"\b(?:be contacted|contact me|reach me|reached) (?:by|via|over|through) " + _V + _END),
        _simple("contact_preference", FactCategory.PREFERENCES, 0.75, "{s} prefers to be contacted by {v}.", words=3),
    ),
    ("phone", _PHONE_VALUE, _phone),
    (
        "name",
        _p(r"\bmy name is " + r"(?P<v>(?-i:[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+){0,2}))"),
        _simple("name", FactCategory.CONTACT_INFO, 0.85, "{s}'s name is {v}.", words=3),
    ),
    (
        "preferred_name",
        _p(r"\b(?:please )?call me " + r"(?P<v>(?-i:[A-Z][\w'-]+))" + _END),
        _simple("preferred_name", FactCategory.PREFERENCES, 0.8, "{s} likes to be called {v}.", words=2),
    ),
    (
        "location",
        _p(r"\b(?:i|we)(?:'m| am|'re| are)? (?:live|living|based|located) in " + _V + _END),
        _simple("location", FactCategory.CONTACT_INFO, 0.75, "{s} lives in {v}.", words=4),
    ),
    (
        "moved_to",
        _p(r"\b(?:i|we) (?:just |recently )?(?:moved|relocated) to " + _V + _END),
        _moved_to,
    ),
    (
        "timezone",
        _p(r"\b(?:my|our) time ?zone is " + _V + _END),
        _simple("timezone", FactCategory.CONTACT_INFO, 0.8, "{s}'s time zone is {v}.", words=3),
    ),
    (
        # "I'm in the CET time zone", "I'm on UTC now", "my working hours are in US Eastern", "my time
        # zone changed from CET to JST", "schedule things in IST for me": the value is a zone's name.
        "timezone_typed",
        _p(
            r"(?:\b(?:i|we)(?:'m|'re| am| are)(?: now| currently)? (?:in|on|using)(?: the)?|"
            r"\b(?:my|our) (?:working hours|hours|time ?zone)(?: are| is| changed| moved)?(?: now)?(?: from [^,.;]{1,30}?)?"
            r" (?:in|to|on|is)(?: the)?|\bschedule (?:things|meetings|calls|everything) (?:in|for)(?: the)?)\s+"
            + TIME_ZONES
        ),
        _timezone,
    ),
    (
        # "My manager is Priya Raman", "I have a new manager, Jonas Berg", "Idris is my boss now".
        "role_mine",
        _p(r"\bmy (?:new |current )?" + _ROLE + r"(?: is| has been)?(?: now)?,?\s+" + _PERSON + _PERSON_END),
        _role,
    ),
    ("role_new", _p(r"\bi have a new " + _ROLE + r"(?: now)?[,:]?\s+" + _PERSON + _PERSON_END), _role),
    (
        "role_named",
        _p(r"(?<![\w'])" + _PERSON + r" (?:is|has been) (?:now )?my (?:new )?" + _ROLE + r"\b"),
        _role,
    ),
    (
        # "Sam reviews my pull requests (now)", "My teammate Ines reviews my code".
        "reviews_mine",
        _p(
            r"(?:\bmy (?:teammate|colleague|coworker|co-worker) )?(?<![\w'])"
            + _PERSON
            + r" (?:now |usually |always )?(?:reviews|does the reviews? (?:of|for)) my (?:pull requests|prs|code|merge requests|changes)\b"
        ),
        partial(_role, default="reviewer"),
    ),
    (
        "reports_to",
        _p(r"\bi(?:'m| am)? (?:now |still )?report(?:s|ing)? (?:directly )?to\s+" + _PERSON + _PERSON_END),
        _role,
    ),
    (
        "employer",
        _p(
            r"\bi(?: (?:now |still )?work|(?:'m| am) (?:now )?working| (?:just |recently )?started (?:a new job|a job|working|work))"
            r" (?:at|for) " + _V + _END
        ),
        _employer,
    ),
    (
        # "I left Globex and joined Acme Robotics": a change of job, said with both employers.
        "employer_joined",
        _p(r"\bi (?:just |recently )?left [^.,;!?]{1,60}? (?:and|to) (?:join|joined) " + _V + _END),
        _employer,
    ),
    (
        "job_title",
        _p(r"\bi(?:'m| am) (?:a|an|the) (?P<v>[a-z][\w -]{2,40}?) (?:at|for|in) "),
        _simple("job_title", FactCategory.BUSINESS_CONTEXT, 0.65, "{s} works as {v}.", words=4),
    ),
    (
        # "I'm a nurse", "I work as a UX designer", "my new role is sales lead", "I changed careers from
        # nurse to pharmacist": the title's head must be an occupation's (OCCUPATIONS).
        "occupation",
        _p(
            r"(?:\bi(?:'m| am)(?: now| currently)? (?:a|an)\b|\bi (?:now )?work as (?:a|an)?|"
            r"\bmy (?:new |current )?(?:job title|job|title|role|position) is(?: now)? (?:a |an )?|"
            r"\b(?:changed careers|switched careers|moved) from [^,.;]{1,40}? to (?:a |an |being (?:a |an )?)?|"
            r"\bpromoted to (?:a |an )?)\s*" + _TITLE + _TITLE_END
        ),
        _occupation,
    ),
    (
        # A named project's state: "The Atlas project is now on hold", "Update on Atlas: it is launched",
        # "Atlas moved from in testing to launched", "Status change: Atlas is in review".
        "status",
        _p(
            r"\b(?:the |our |my )?" + _NAMED + r"(?P<kind> project| app| product| release)?(?P<appos>, [^,]{1,40},)?"
            r" (?:is|has been|was just)(?: now| currently| still| officially)? " + _STATUS + r"\b"
        ),
        _status,
    ),
    ("status_update", _p(r"\bupdate on " + _NAMED + r": (?:it|the project) is (?:now )?" + _STATUS + r"\b"), _status),
    (
        "status_moved",
        _p(
            r"\b"
            + _NAMED
            + r"(?: project)? (?:moved|went|changed) from "
            + _STATUS.replace("(?P<v>", "(?:")
            + r" to "
            + _STATUS
            + r"\b"
        ),
        _status,
    ),
    # --- preferences
    (
        "diet",
        _p(
            r"\bi(?:'m| am) (?:a )?(?P<v>vegetarian|vegan|pescatarian|gluten[- ]free|lactose[- ]intolerant|halal|kosher)\b"
        ),
        _simple("diet", FactCategory.PREFERENCES, 0.8, "{s} is {v}.", words=2),
    ),
    (
        "answer_style",
        _p(
            r"(?:\bi(?:'d| would)? (?:really |much |strongly )?(?:prefer|like|want)|^(?:[\w' ]{1,20}[:,] )?"
            r"(?:please |just )?give me(?: from now on)?) (?P<v>[^.;!?]{3,80}?)(?:,? (?:from now on|please))?"
            r"(?=\s*(?:\.(?!\w)|[;!?]|$))"
        ),
        _answer_style,
    ),
    (
        # "I prefer pytest for tests", "I've come around to uv for packaging", "use ruff for linting from
        # now on": a choice for a purpose, single-valued per purpose.
        "prefers_for",
        _p(
            r"(?:\bi(?:'d| would| really| much| strongly)? prefer|\bi(?:'ve| have) (?:come around|switched|moved) to|"
            r"^(?:please |just |so |ok,? |okay,? )?use|\bi (?:always|now) use)"
            r" (?P<v>(?:[^.,;!?]|\.(?=\w)){1,40}?) for "
            + _PURPOSE
            + r"(?=\s*(?:\.(?!\w)|[,;!?]|\s(?:from now on|now|instead|going forward|too)\b|$))"
        ),
        _prefers_for,
    ),
    (
        "prefer",
        _p(
            r"\bi(?:'d| would)? (?:really |much |strongly )?prefer "
            + _V
            + r"(?:\s+(?:over|to|rather than)\s+[^.,;!?]+)?"
            + _END
        ),
        _simple("prefers", FactCategory.PREFERENCES, 0.75, "{s} prefers {v}.", cardinality=Cardinality.MULTI),
    ),
    (
        "reply_language",
        _p(
            r"\b(?:reply|respond|answer|write|talk)(?: to me)? in (?P<v>(?-i:[A-Z][a-z]+))(?:\s+(?:from now on|only|please))?"
            + _END
        ),
        _simple("preferred_language", FactCategory.PREFERENCES, 0.8, "{s} wants answers in {v}.", words=1),
    ),
    (
        "favourite",
        _p(r"\bmy fav(?:ou?rite)? (?P<what>[a-z]+(?: [a-z]+)?) is " + _V + _END),
        _favourite,
    ),
    (
        "dislike",
        _p(r"\bi (?:really )?(?:hate|dislike|can't stand|cannot stand|don't like|do not like) " + _V + _END),
        _simple("dislikes", FactCategory.PREFERENCES, 0.7, "{s} dislikes {v}.", cardinality=Cardinality.MULTI),
    ),
    (
        "like",
        _p(r"(?<!n't )(?<!not )\bi (?:really )?(?:like|love|enjoy|adore) " + _LIST + _LIST_END),
        _each("likes", FactCategory.PREFERENCES, 0.65, "{s} likes {v}."),
    ),
    (
        "always_never",
        _p(r"\bplease (?P<v>(?:always|never) [^.,;!?]{3,80}?)" + _END),
        _simple(
            "instructions", FactCategory.PREFERENCES, 0.8, "{s} asks: {v}.", cardinality=Cardinality.MULTI, words=12
        ),
    ),
    # --- technical environment
    (
        "migrated",
        _p(
            r"\b(?:i|we)(?:'ve| have)? (?:just |recently |finally )?(?P<verb>migrated|moved|switched|upgraded|changed)"
            r"(?: (?:over|everything|(?P<what>our \w+|the \w+)))?(?: from (?P<old>(?:[^.,;!?]|\.(?=\d))+?))? to "
            + _V
            + _END
        ),
        _migrated,
    ),
    (
        "our_thing",
        _p(
            r"\b(?P<det>our|my|the) (?:main |primary |new |current )?"
            r"(?P<thing>database|db|cloud provider|cloud|os|operating system|ci|editor|employer|"
            r"(?:backend |web |api )?framework)"
            r" is (?:now |still |currently )?" + _V + _END
        ),
        _our_thing,
    ),
    (
        "hosted_on",
        _p(
            r"\b(?:our|my) (?:\w+ ){0,2}(?:is|are|runs|lives) (?:still |now |currently )?(?:on|hosted on|running on) "
            + _V
            + _END
        ),
        lambda m, s: [
            Found(
                *_runs_on_attribute(v),
                FactCategory.TECHNICAL_ENVIRONMENT,
                0.7,
                f"{s} runs on {v}.",
                cardinality=Cardinality.SINGLE,
            )
            for v in [_clean_value(m.group("v"), max_words=4)]
            if v and _names_a_host(v)
        ],
    ),
    (
        "runs_on",
        _p(
            r"\b(?:i|we)(?:'re| are)? (?:run|running|host|hosting|deploy|deploying) (?P<what>[^.,;!?]{1,40}?) on "
            + _V
            + _END
        ),
        _runs_on,
    ),
    (
        "uses",
        _p(
            r"\b(?:i|we)(?:'re|'m| are| am)? (?:use|using|rely on|relying on|work with|build with|built with|deploy with|deploy using) "
            + _LIST
            + _LIST_END
        ),
        _uses(0.7, "{s} uses {v}."),
    ),
    (
        "on_version",
        _p(
            r"\b(?:i|we)(?:'re|'m| are| am) (?:still )?on (?P<v>(?-i:[A-Z][\w.+-]*)(?: [\w.+-]+)?\s+v?\d+(?:\.\d+)*)(?:\s+(?:locally|in production|at work))?"
            + _END
        ),
        _uses(0.75, "{s} is on {v}."),
    ),
    # --- known issues
    (
        "getting_error",
        _p(
            r"\b(?:i|we)(?:'re|'m| are| am|'ve| have)? (?:been )?(?:getting|seeing|hitting|receiving|got) "
            r"(?P<v>[^.;!?]{0,60}?(?:error|exception|timeout|crash|failure|500|404|403)[^.;!?]{0,30}?)" + _END
        ),
        _issue("{s} is getting {v}."),
    ),
    (
        "keeps_failing",
        _p(
            r"\b(?P<thing>(?:the |our |my )?[\w.-]+(?: [\w.-]+)?) (?P<v>keeps (?:crashing|failing|timing out|freezing|"
            r"disconnecting|hanging)|(?:is|was) (?:broken|down|crashing|failing)|(?:doesn't|does not|won't|will not) "
            r"(?:work|start|load|connect|sync|build))(?:\s+(?:again|anymore|any more|today|since \w+|all the time|every \w+))*"
            + _END
        ),
        _issue_with_subject,
    ),
    (
        "trouble_with",
        _p(r"\b(?:having|have|had) (?:some |a lot of )?(?:trouble|issues|problems) (?:with )?" + _V + _END),
        _issue("{s} has trouble with {v}.", 0.65),
    ),
    (
        "bug_in",
        _p(r"\bthere(?:'s| is) a bug (?:in|with) " + _V + _END),
        _issue("{s} reports a bug in {v}."),
    ),
    # --- plans and dates
    (
        "birthday",
        _p(r"\bmy birthday is (?:on )?(?P<v>" + _DATE + r")"),
        _simple("birthday", FactCategory.OTHER, 0.85, "{s}'s birthday is {v}.", words=5),
    ),
    (
        "deadline",
        _p(
            r"\b(?:our |my |the )?(?P<what>deadline|launch|release|go-live|due date|renewal)(?: date)? is "
            r"(?P<v>" + _DATE + r")"
        ),
        lambda m, s: (
            [
                Found(
                    f"{re.sub(r'[^a-z]+', '_', m.group('what').lower())}_date",
                    _clean_value(m.group("v"), max_words=5),
                    FactCategory.BUSINESS_CONTEXT,
                    0.8,
                    f"{s}'s {m.group('what').lower()} is {_clean_value(m.group('v'), max_words=5)}.",
                    cardinality=Cardinality.SINGLE,
                )
            ]
            if _clean_value(m.group("v"), max_words=5)
            else []
        ),
    ),
    (
        # "The release is due on March 14", "the release deadline moved to April 2", "they pushed the
        # launch from May 5 to May 19", "we have to ship the release by June 1".
        "due",
        _p(
            r"\b(?:(?:the|our|my) (?P<what>release|launch|go-live|demo|migration|submission|delivery|rollout)"
            r"(?: deadline| date)?(?: is| was)?(?: now)? (?:due|moved|pushed(?: back)?|postponed|delayed|set|scheduled|"
            r"planned|rescheduled|brought forward)"
            r"|(?:pushed|moved|postponed|delayed|rescheduled) (?:the|our) (?P<what2>release|launch|go-live|demo|"
            r"migration|submission|delivery|rollout)(?: deadline| date)?(?: back)?(?: from [^,.;]{1,30}?)?"
            r"|(?:have|need|got) to (?:ship|deliver|launch|submit) (?:the|our) (?P<what3>release|launch|demo|"
            r"submission|delivery|rollout))"
            r"(?: (?:from [^,.;]{1,30}? )?(?:to|on|for|by|until))? (?P<v>" + _DATE + r")"
        ),
        _due,
    ),
    (
        "plan",
        _p(r"\b(?:i|we)(?:'m|'re| am| are)? (?:planning|plan|going|intend|intending|scheduled|hoping) to " + _V + _END),
        _plan,
    ),
]

_NEGATED_USE = re.compile(r"\b(?:don't|do not|no longer|never|stopped|not) (?:use|using|run|running)\b", re.IGNORECASE)


def sentences(text: str) -> Iterator[str]:
    for line in lines_outside_code(text):
        yield from (as_stated(as_typed_formally(part.strip())) for part in _SENTENCE.split(line) if part.strip())


def extract_from_text(text: str, subject: str) -> list[Found]:
    """Every fact the patterns find in one message, in order, without duplicates."""
    found: list[Found] = []
    seen: set[tuple[str, str]] = set()
    for sentence in sentences(text):
        if _QUESTION_OR_HYPOTHETICAL.search(sentence):
            continue
        hedged = bool(_HEDGE.search(sentence))
        claimed: list[tuple[int, int]] = []
        for name, pattern, build in RULES:
            if name in {"uses", "runs_on", "on_version"} and _NEGATED_USE.search(sentence):
                continue
            for match in pattern.finditer(sentence):
                # What a rule claims is its value, so "contacted by phone, my number is ..." yields both.
                span = match.span("v") if "v" in match.groupdict() else match.span()
                # A span already explained by an earlier, more specific rule is not read twice.
                if any(span[0] < end and start < span[1] for start, end in claimed):
                    continue
                facts = build(match, subject)
                if facts:
                    claimed.append(span)
                for fact in facts:
                    key = (fact.attribute, fact.value.lower())
                    if key in seen:
                        continue
                    seen.add(key)
                    found.append(
                        dataclasses.replace(fact, confidence=round(fact.confidence - 0.15, 2)) if hedged else fact
                    )
    return found


_LEANING = re.compile(
    r"\b(?:it|them|these|those|this|that|there|he|him|she|they|i|me|my|we|us|our|you|your)\b", re.IGNORECASE
)


_TOOL_MENTION = re.compile(
    r"(?<![\w.])(?P<name>"
    + "|".join(re.escape(n) for n in sorted(TOOL_ATTRIBUTES, key=len, reverse=True))
    + r")(?P<edition>\s+(?:"
    + _EDITION.pattern
    + r"))?(?!\w|\.\w|-\w)",
    re.IGNORECASE,
)
# A lead-in before the statement: "Honestly, ...", "For context, ...", "Just so you know, ...".
_LEAD_IN = re.compile(r"^[\w' ]{1,30},\s+")
_OWN_START = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've|we'd|my|our)\b", re.IGNORECASE)
# A sentence about the speaker's systems without a pronoun, in the speaker's own turn: "Production is on
# AWS", "CI moved to GitLab CI", "Everything runs on Python 3.12 now", "The pipelines are on Buildkite".
_OWN_SYSTEMS = re.compile(
    r"^(?:production|prod|staging|everything|ci|(?:the|all(?: the)?|all of the) (?:[\w-]+ )?(?:app|apps|backend|"
    r"frontend|services?|pipelines?|ci|builds?|infrastructure|infra|servers?|codebase|stack|api|site|website|"
    r"clusters?|database|db|deployments?|tests?))\b",
    re.IGNORECASE,
)
# Before a mention: another person's ("Casey's team", "my colleague", "my manager uses ...").
_SOMEONE_ELSES = re.compile(r"\w's\b|" + _SOMEONE_ELSES_WORDS, re.IGNORECASE)
_DENIED = re.compile(r"\b(?:not|never|no longer|anymore|\w+n't)\b", re.IGNORECASE)
# Words that mark the value after them as the old one: "from A to B", "replaced A with B", "B instead of
# A", "no longer A", "left A behind".
_OLD_VALUE_CUE = re.compile(
    r"\b(?:from|replaced|replacing|instead of|rather than|no longer|not|left|leaving|dropped|ditched)"
    r"\s+(?:the |our |my )?$",
    re.IGNORECASE,
)
_SLOT_NAMES = {
    "ci": "CI",
    "operating_system": "operating system",
    "cloud_provider": "cloud provider",
    "web_framework": "web framework",
}


# "our reporting database is ...", "my gaming laptop runs ...": a word before the thing's noun, then its verb.
_OWN_THING = re.compile(
    r"^(?:my|our)\s+(?P<before>(?:[a-z][\w-]*\s+){1,2})[a-z][\w-]*\s+(?:is|are|runs?|uses?|has)\b", re.I
)
_DEFAULT_THINGS = lexicon.words("default_things.txt")


def _another_thing(clause: str) -> bool:
    """The clause is said of a thing of the speaker's that a word before its noun names as another one
    than the thing they mean by the noun alone (data/default_things.txt lists the words that do not)."""
    m = _OWN_THING.match(clause)
    return m is not None and any(w.lower() not in _DEFAULT_THINGS for w in m.group("before").split())


def tool_slots(sentence: str, speaker: str) -> list[Found]:
    """The single-valued slots (database, cloud, OS, CI, editor, orchestration) that the speaker's own
    first-person statement fills with a known tool, however the sentence is built; where it names an
    old and a new value of one slot, the grammar says which is current. Someone else's tool, a denied
    one and a question fill nothing."""
    clause = _LEAD_IN.sub("", sentence.strip())
    own = _OWN_START.match(clause) or _OWN_SYSTEMS.match(clause)
    if not own or _QUESTION_OR_HYPOTHETICAL.search(clause) or _another_thing(clause):
        return []
    by_slot: dict[str, list[re.Match[str]]] = {}
    for m in _TOOL_MENTION.finditer(clause):
        name = m.group("name")
        if name.lower() in PROPER_ONLY and not name[:1].isupper():
            continue
        by_slot.setdefault(TOOL_ATTRIBUTES[name.lower()][0], []).append(m)
    out = []
    for slot, mentions in by_slot.items():
        current = [m for m in mentions if not _OLD_VALUE_CUE.search(clause[: m.start()])]
        if len(current) != 1 or _SOMEONE_ELSES.search(clause[: current[0].start()]):
            continue
        if len(mentions) == 1 and _DENIED.search(clause):
            continue
        value = _clean_value(current[0].group(0), max_words=4)
        if value:
            label = _SLOT_NAMES.get(slot, slot)
            out.append(
                Found(
                    slot,
                    value,
                    FactCategory.TECHNICAL_ENVIRONMENT,
                    0.75,
                    f"{speaker}'s {label} is {value}.",
                    cardinality=Cardinality.SINGLE,
                )
            )
    return out


def with_tool_slots(facts: list[Found], slots: list[Found]) -> list[Found]:
    """The sentence's facts with its tool slots: a slot's value replaces what the other rules made of
    the same slot, and an `about` that restates the tool."""
    if not slots:
        return facts
    filled = {f.attribute for f in slots}
    named = [f.value.lower() for f in slots]
    kept = [
        f
        for f in facts
        if f.attribute not in filled and not (f.attribute == "about" and any(n in f.value.lower() for n in named))
    ]
    return kept + slots


# A value said before the copula, the speaker's thing after it: "Pho has become my favourite food",
# "Padel is my favourite sport now". The value is a name or a word or two in lower case.
_INVERTED = re.compile(
    r"^(?P<value>[A-Z][\w'’.+#&-]*(?: [A-Z0-9][\w'’.+#&-]*){0,3}|[a-z][\w-]*(?: [a-z][\w-]*)?)"
    r" (?P<verb>is|are|has become|have become|became)(?P<now> now)? (?P<owner>my|our)"
    r" (?P<thing>[a-z][\w-]*(?: [a-z][\w-]*){0,2}?)"
    rf"(?P<tail>,? (?:{alternation(predicates.section('change.txt', 'adverbs'))}))?\s*[.!]?$"
)


# A phrase that says the value holds now, between the speaker's thing and its verb: "My favourite coffee
# these days is a cortado" is said as "My favourite coffee is a cortado these days".
_NOW_AFTER_THING = re.compile(
    rf"^(?P<thing>(?:my|our) [a-z][\w -]*?),? (?P<now>{alternation(predicates.section('change.txt', 'adverbs'))}),?"
    r" (?P<rest>(?:is|are|has|have|takes|lasts|costs) .+?)\s*[.!]?$",
    re.IGNORECASE,
)


_NOW_FIRST = re.compile(
    rf"^(?P<now>{alternation(predicates.section('change.txt', 'adverbs'))}),? (?P<rest>[A-Za-z][\w'’.+#&-]*(?: [\w'’.+#&-]+){{0,3}}"
    r" (?:is|are|has become|have become|became) (?:my|our) .+)$",
    re.IGNORECASE,
)


def uninverted(sentence: str) -> str:
    """The sentence said in its plain order: a phrase that says "now" after the value
    (`_NOW_AFTER_THING`), and the speaker's thing first when the value was said first ("Pho has become my
    favourite food" -> "My favourite food is now Pho."): every reader reads a thing of the speaker's
    from where the speaker's words open the clause. Not when the first word is a word of grammar or a
    pronoun ("This is my car", "He is my brother")."""
    if moved := _NOW_AFTER_THING.match(sentence.strip()):
        sentence = f"{moved.group('thing')} {moved.group('rest')} {moved.group('now')}."
    if led := _NOW_FIRST.match(sentence.strip()):  # "These days Arrival is my favourite film"
        sentence = f"{led.group('rest')[0].upper()}{led.group('rest')[1:].rstrip(' .!')} {led.group('now').lower()}."
    m = _INVERTED.match(sentence.strip())
    if m is None or any(w.lower() in predicates.function_words() for w in m.group("value").split()):
        return sentence
    now = " now" if m.group("now") or m.group("tail") or "bec" in m.group("verb") else ""
    value, thing = m.group("value"), f"{m.group('owner').capitalize()} {m.group('thing')}"
    # "now" before a name ("is now Lior Katz"), after a word in lower case ("is sushi now", not "now sushi")
    return f"{thing} is{now} {value}." if value[0].isupper() else f"{thing} is {value}{now}."


def extract_with_disclosures(text: str, speaker: str, said_at: datetime) -> list[Found]:
    """The patterns' facts, sentence by sentence; a sentence no pattern explains is read as
    self-disclosure (consolidation.extractors.first_person)."""
    found: list[Found] = []
    seen: set[tuple[str, str]] = set()
    for sentence in map(uninverted, pointed_back(list(sentences(text)))):
        parsed: list[tuple[str, str]] = []
        # A pattern's value is copied as said: one that leans on context ("keep working on it") or
        # still speaks in the first or second person is not a fact about the speaker.
        # A typed value (a zone, a number, an address) is read whole: "US Eastern" leans on no one.
        # A pattern's value that is no value ("uses three-week sprints": a tool in lower case) leaves the
        # sentence to the other readers, as a sentence no pattern explains.
        # ... kept only where what they read is a typed value ("switched to three-week sprints") or a
        # state ("switched to oat milk").
        patterned = [
            f
            for f in extract_from_text(sentence, speaker)
            if f.attribute in LITERAL_ATTRIBUTES or not _LEANING.search(f.value)
        ]
        facts = [f for f in patterned if value_is_complete(f.attribute, f.value)]
        typed_only = bool(patterned) and not facts
        if not facts and not _QUESTION_OR_HYPOTHETICAL.search(sentence):
            facts = [
                Found(d.attribute, d.value, d.category, d.confidence, d.statement, cardinality=d.cardinality)
                for d in constraints(sentence, name=speaker, said_at=said_at)
                or disclose(sentence, name=speaker, said_at=said_at)
            ] or [
                Found("about", value, FactCategory.OTHER, 0.6, statement, cardinality=Cardinality.MULTI)
                for value, statement in changed_things(sentence, speaker=speaker, said_at=said_at)
            ]
            # What the patterns do not explain, or read only as an event, the parse reads: the value
            # the speaker states of a thing of theirs now (consolidation.extractors.reading); a value
            # the other readers found too is said by the parse's clause alone.
            parsed = _parsed(sentence, speaker, said_at)
            if all(_event_or_clause(f) for f in facts):
                facts = [
                    Found("about", value, FactCategory.OTHER, 0.6, statement, cardinality=Cardinality.MULTI)
                    for value, statement in parsed
                ] or facts
            else:
                clauses = {value.lower(): statement for value, statement in parsed}
                facts = [dataclasses.replace(f, statement=clauses.get(f.value.lower(), f.statement)) for f in facts]
        elif facts and not _QUESTION_OR_HYPOTHETICAL.search(sentence):
            # A clause the patterns did not read ("I'm 34 and I work as a nurse": the job title is the
            # patterns'): the parse's typed values that no fact of theirs names.
            parsed = _parsed(sentence, speaker, said_at)
            named = " ".join(f"{f.value} {f.statement}".lower() for f in facts)
            facts += [
                Found("about", v, FactCategory.OTHER, 0.6, st, cardinality=Cardinality.MULTI)
                for v, st in parsed
                if predicates.value_kind(v) is not None and v.lower() not in named
            ]
        facts = durable_only(with_tool_slots(facts, tool_slots(sentence, speaker)), sentence=sentence, speaker=speaker)
        if not facts and parsed:
            # What the other readers read whole failed the fact tests ("adopted a third dog, so now X has
            # three dogs" names the speaker twice): the parse's clause says the state alone.
            facts = durable_only(
                [Found("about", v, FactCategory.OTHER, 0.6, st, cardinality=Cardinality.MULTI) for v, st in parsed],
                sentence=sentence,
                speaker=speaker,
            )
        if facts and (left := [v for v, version, _ in replacements(sentence, speaker) if version is None]):
            facts = [f for f in facts if not _holds_only_left(f.value, left)]
        facts = typed_facts(facts, sentence=sentence, speaker=speaker, said_at=said_at)
        if typed_only:
            facts = [
                f
                for f in facts
                if predicates.value_kind(f.value)
                or predicates.headed_kind(f.value)
                or (f.attribute == "about" and predicates.term_kind(f.value))
            ]
        # A statement typed down to a value a slot of the same sentence holds restates the slot.
        slotted = {f.value.lower() for f in facts if f.cardinality == Cardinality.SINGLE}
        facts = [f for f in facts if not (f.attribute == "about" and f.value.lower() in slotted)]
        for fact in facts:
            key = (fact.attribute, fact.value.lower())
            if key not in seen:
                seen.add(key)
                found.append(fact)
    return found


def _parsed(sentence: str, speaker: str, said_at: datetime) -> list[tuple[str, str]]:
    """The parse's (value, statement) pairs whose clause passes the tests every fact passes
    (fact_filters): "is using something like X" or "is listening on port 8080" is no fact. While the
    reader is off (settings.ENGRAM["PARSE_READER"]), only the typed values the parse reads."""
    typed_only = not settings.ENGRAM["PARSE_READER"]
    out = []
    for value, statement in reading.facts(sentence, speaker=speaker, said_at=said_at, typed_only=typed_only):
        said = re.sub(r"^'s\s+", "", statement[len(speaker) :].strip()) if statement.startswith(speaker) else statement
        # The statement keeps "these days" or "now" (it tells the value is new); what is tested is the state.
        said = " ".join(without_now(said, phrases_only=True).split())
        clause = Found("about", said.rstrip(" ."), FactCategory.OTHER, 0.6, statement)
        if durable_only([clause], sentence=sentence, speaker=speaker):
            out.append((value, statement))
    return out


def _event_or_clause(fact: Found) -> bool:
    """A fact that holds no value of a state: an event, a plan, or a clause with no typed value in it."""
    if fact.attribute in predicates.EVENT_ATTRIBUTES - {"constraints"}:
        return True
    return fact.attribute == "about" and len(fact.value.split()) > 2 and predicates.comparable_kind(fact.value) is None


def _holds_only_left(value: str, left: Sequence[str]) -> bool:
    """A statement of leaving a value is no fact of holding it: "we left Kotlin 1.9 behind" gives no
    fact that names Kotlin 1.9 and nothing else ("switched from Vim to Emacs" names both and stays)."""
    for name in left:
        found = re.search(rf"(?<![\w.]){re.escape(name)}(?![\w]|\.\d)", value, re.IGNORECASE)
        if found and not _NAMED_TOKEN.search(value[: found.start()] + " " + value[found.end() :]):
            return True
    return False


_NAMED_TOKEN = re.compile(r"(?<![\w.])(?:(?-i:[A-Z])[\w.+-]*|\d[\w.]*)")


def durable_only(facts: list[Found], *, sentence: str, speaker: str) -> list[Found]:
    """The facts of one sentence that are facts (consolidation.extractors.fact_filters): complete values,
    durable statements about the speaker, no opinions, agreements or passing activities."""
    return [
        f
        for f in facts
        if value_is_complete(f.attribute, f.value)
        and statement_is_durable(
            attribute=f.attribute, value=f.value, statement=f.statement, sentence=sentence, speaker=speaker
        )
    ]


# What a statement marks as the value it leaves: "from A to B" (with a verb of change), "replaced A with
# B", "B instead of / rather than A", "no longer A", "..., not A", "left A behind", "since A left".
_CHANGE_VERB = re.compile(
    r"\b(?:mov|migrat|switch|upgrad|chang|went|go|push|replac|reinstall|transferr|shift)\w*\b", re.IGNORECASE
)
# A phrase of up to 40 characters; a dot inside a word ("3.12", "Fly.io") does not end it.
_PHRASE = r"(?:[^,;!?.]|\.(?=\w)){1,40}"
_LEFT_VALUE = (
    re.compile(rf"\bfrom (?:the |our |my )?(?P<old>{_PHRASE}?) to ", re.IGNORECASE),
    re.compile(rf"\breplaced (?:the |our |my )?(?P<old>{_PHRASE}?) with ", re.IGNORECASE),
    re.compile(
        rf"\b(?:instead of|rather than|no longer|, not) (?:the |our |my |on |using |with )?(?P<old>{_PHRASE})",
        re.IGNORECASE,
    ),
    re.compile(rf"\bleft (?:the |our |my )?(?P<old>{_PHRASE}?) behind\b", re.IGNORECASE),
    re.compile(r"\bsince (?P<old>(?-i:[A-Z][\w-]+(?: [A-Z][\w-]+)?)) left\b"),
)
# Another person's doing or thing ("my sister moved", "Dana's team", "their database"); "it's" is no one's.
_ANOTHER_PERSON = re.compile(
    r"\b(?!(?:it|that|here|there|what|he|she|who|let)'s)\w+'s\b|\b(?:his|her|their|they|he|she)\b|"
    + _SOMEONE_ELSES_WORDS,
    re.IGNORECASE,
)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|we|we're|we've|my|our|me|us)\b", re.IGNORECASE)
# A name with a version: "Django 5.0", "Python 3.12", "Node 20".
_VERSIONED = re.compile(
    rf"(?<![\w.])(?!(?i:{MONTHS})\b)(?P<name>(?-i:[A-Z][\w+#-]*)) (?P<ver>v?\d+(?:\.\d+){{0,2}})(?![\w.]*\d)"
)


def replacements(sentence: str, speaker: str) -> list[tuple[str, str | None, frozenset[str]]]:
    """The values the speaker's own statement says they have left, each with the words of what it is
    about: (value, None, context) for a value named as the old one ("not unittest"), (name, version,
    context) for a name said with a new version after a verb of change ("we migrated the web app to
    Django 5.0"), so that older facts naming another version of it are expired. Someone else's
    statement, a question and a hypothesis leave nothing."""
    changed = bool(_CHANGE_VERB.search(sentence))
    own = _FIRST_PERSON.search(sentence) or _OWN_SYSTEMS.match(_LEAD_IN.sub("", sentence.strip()))
    if _QUESTION_OR_HYPOTHETICAL.search(sentence) or not (changed or own):
        return []
    if _ANOTHER_PERSON.search(sentence):
        return []
    named: list[tuple[str, str | None, int, int]] = []
    for pattern in _LEFT_VALUE:
        if pattern is _LEFT_VALUE[0] and not changed:
            continue
        for m in pattern.finditer(sentence):
            value = _clean_value(m.group("old"), max_words=4, literal=True)
            if (
                value
                and not is_fragment(value)
                and (value[:1].isupper() or any(c.isdigit() for c in value) or value.lower() in TOOL_ATTRIBUTES)
            ):
                named.append((value, None, m.start("old"), m.end("old")))
    if changed or re.search(r"\bnow\b", sentence, re.IGNORECASE):
        for m in _VERSIONED.finditer(sentence):
            if not any(start <= m.start() < end for _, _, start, end in named):
                named.append((m.group("name"), m.group("ver"), m.start(), m.end()))
    if not named:
        return []
    spans = [(start, end) for _, _, start, end in named]
    rest = "".join(ch if not any(a <= i < b for a, b in spans) else " " for i, ch in enumerate(sentence))
    context = frozenset(terms(rest)) - {speaker.lower()}
    return [(value, version, context) for value, version, _, _ in named]


class RuleBasedExtractor:
    name = "rules"

    def extract(self, *, tenant: Tenant, subject: str, episodes: Sequence[Episode]) -> ExtractionResult:
        result = ExtractionResult()
        for episode in extractable(episodes):
            speaker = speaker_of(episode.role, subject) if episode.kind == "message" else None
            if speaker is None:
                continue
            for sentence in sentences(episode.content):
                for value, version, context in replacements(sentence, speaker):
                    result.replacements.append(
                        Replacement(subject, value, context, episode.occurred_at, episode.id, version=version)
                    )
                for value, statement in latent.readings(uninverted(sentence), speaker=speaker):
                    result.updates_only.append(
                        FactCandidate(
                            subject=subject,
                            entity=speaker,
                            attribute="about",
                            value=value,
                            statement=statement,
                            category=FactCategory.OTHER,
                            confidence=0.6,
                            source_episode_ids=[episode.id],
                            observed_at=episode.occurred_at,
                            cardinality=Cardinality.MULTI,
                        )
                    )
            for found in extract_with_disclosures(episode.content, speaker, episode.occurred_at):
                result.candidates.append(
                    FactCandidate(
                        subject=subject,
                        entity=found.entity or speaker,
                        attribute=found.attribute,
                        value=found.value,
                        statement=found.statement,
                        category=found.category,
                        confidence=found.confidence,
                        source_episode_ids=[episode.id],
                        observed_at=episode.occurred_at,
                        cardinality=found.cardinality,
                    )
                )
        return result

    def summarise(self, *, tenant: Tenant, subject: str, episodes: Sequence[Episode]) -> SummaryResult:
        return SummaryResult(text=extractive_summary(episodes))
