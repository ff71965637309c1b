"""Entities and topics of a text, at write time and for tagging queries: cheap, deterministic, no model.

The default extractor finds
- proper nouns (runs of capitalised words, sentence openers such as "The" or "Thanks" left out),
- ids such as order or ticket numbers ("order #12345" -> "order-12345", "INC-0042" -> "inc-0042"),
- the tenant's own entity dictionary (case-insensitive whole-word matches) and topic dictionary
  (topic -> keywords), and #hashtags as topics.
Another extractor can be plugged in by dotted path in ENGRAM["ENTITY_EXTRACTOR"] (any class with the
`extract` method of `Extractor`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from tenants.models import Tenant, TenantSettings

MAX_ENTITY_CHARS = 200
MAX_TOPIC_CHARS = 100
MAX_EXTRACTED = 32

_SPACE = re.compile(r"\s+")


def normalise_terms(values: Iterable[str], *, max_chars: int) -> list[str]:
    """Lower-case, trimmed, inner whitespace collapsed, empty ones dropped, deduplicated in order."""
    out: list[str] = []
    seen: set[str] = set()
    for value in values:
        term = _SPACE.sub(" ", value.strip().lower())[:max_chars].strip()
        if term and term not in seen:
            seen.add(term)
            out.append(term)
    return out


class Extractor(Protocol):
    def extract(self, text: str, config: TenantSettings) -> tuple[list[str], list[str]]:
        """(entities, topics), already normalised."""
        ...


# Words that open sentences or stand capitalised without naming anything.
_NOT_NAMES = frozenset(
    """
    a about after again all also am an and any are as at be because been before being both but by can
    could did do does doing done each even ever every few for from had has have having he her here hers
    him his how however i if in into is it its just let like may maybe me might mine more most much must
    my never no nor not now of off oh ok okay on once only or other our ours out over own please quite
    really same she should since so some still such sure than thank thanks that the their theirs them
    then there these they this those though through thus to too under until up us very was we well were
    what whatever when where whether which while who whom whose why will with would yes yet you your
    yours hey hi hello wow yeah yep nope great good nice awesome cool sorry right anyway also besides
    today tomorrow yesterday tonight everyone everything something nothing anything someone anyone
    monday tuesday wednesday thursday friday saturday sunday see look check lets let's tell find got get
    make take give try keep go going come know think thought want need love loved hope glad happy had
    said say says feel felt guess wish sounds sound looks seems definitely absolutely totally honestly
    actually probably congrats congratulations agreed exactly wait listen remember btw lol omg
    """.split()
)
_ID_KEYWORDS = (
    "order|ticket|invoice|case|incident|issue|account|booking|reservation|shipment|tracking|"
    "request|refund|payment|transaction|claim|policy|pr|bug"
)
_NOT_NAMES = _NOT_NAMES | frozenset(_ID_KEYWORDS.split("|"))
_MONTHS = frozenset("january february march april may june july august september october november december".split())

_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’&.-]*[\w]?(?:\s+(?:of\s+|de\s+|van\s+)?[A-Z][\w'’&.-]*[\w]?)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;\"“(\n]\s*)$")
_KEYWORD_ID = re.compile(rf"\b({_ID_KEYWORDS})\s*(?:number|no\.?|id)?\s*[#:]?\s*(\d[\d-]{{2,}})\b", re.I)
_CODE_ID = re.compile(r"\b([A-Z]{2,10})-(\d{2,})\b")
_HASH_ID = re.compile(r"(?<![\w&])#(\d{3,})\b")
_HASHTAG = re.compile(r"(?<![\w&])#([A-Za-z][\w-]{1,60})")
_POSSESSIVE = re.compile(r"['’]s$")


def _proper_nouns(text: str) -> list[str]:
    return [name for name, _ in _proper_nouns_placed(text)]


def _proper_nouns_placed(text: str) -> Iterator[tuple[str, bool]]:
    """Each proper noun of the text, and whether it opens a sentence (where any word is capitalised)."""
    for match in _CAPITALISED_RUN.finditer(text):
        words = [_POSSESSIVE.sub("", w).strip(".-'’") for w in match.group(0).split()]
        at_start = bool(_SENTENCE_START.search(text[: match.start()]))
        # Drop function words at either end of the run ("The Hague" keeps "Hague"; "Thanks Mel" keeps "Mel").
        while words and words[0].lower() in _NOT_NAMES:
            words.pop(0)
            at_start = False
        while words and words[-1].lower() in _NOT_NAMES:
            words.pop()
        if not words:
            continue
        if len(words) == 1:
            word = words[0]
            if len(word) < 2 or word.lower() in _MONTHS or word.isdigit():
                continue
            if at_start and match.group(0).split()[0] == word and word.lower() in _NOT_NAMES:
                continue
        yield " ".join(words), at_start


@lru_cache(maxsize=256)
def _dictionary_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    cleaned = sorted({t.strip() for t in terms if t.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    return re.compile(r"(?<!\w)(" + "|".join(re.escape(t) for t in cleaned) + r")(?!\w)", re.I)


@lru_cache(maxsize=256)
def _topic_lookup(items: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    keyword_topic: dict[str, str] = {}
    for topic, keywords in items:
        for keyword in (topic, *keywords):
            if keyword.strip():
                keyword_topic.setdefault(keyword.strip().lower(), topic)
    return _dictionary_pattern(tuple(keyword_topic)), keyword_topic


def _topic_items(dictionary: Mapping[str, Sequence[str]]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(sorted((str(k), tuple(str(v) for v in vs)) for k, vs in dictionary.items()))


class RuleExtractor:
    def extract(self, text: str, config: TenantSettings) -> tuple[list[str], list[str]]:
        if not text:
            return [], []
        entities: list[str] = []
        dictionary = _dictionary_pattern(tuple(config.entity_dictionary))
        if dictionary is not None:
            entities.extend(m.group(1) for m in dictionary.finditer(text))
        numbered: set[str] = set()
        for m in _KEYWORD_ID.finditer(text):
            numbered.add(m.group(2))
            entities.append(f"{m.group(1).lower()}-{m.group(2)}")
        entities.extend(f"{m.group(1)}-{m.group(2)}" for m in _CODE_ID.finditer(text))
        entities.extend(f"#{m.group(1)}" for m in _HASH_ID.finditer(text) if m.group(1) not in numbered)
        entities.extend(_proper_nouns(text))

        topics: list[str] = []
        pattern, keyword_topic = _topic_lookup(_topic_items(config.topic_dictionary))
        if pattern is not None:
            topics.extend(keyword_topic[m.group(1).lower()] for m in pattern.finditer(text))
        topics.extend(m.group(1) for m in _HASHTAG.finditer(text))
        return (
            normalise_terms(entities, max_chars=MAX_ENTITY_CHARS)[:MAX_EXTRACTED],
            normalise_terms(topics, max_chars=MAX_TOPIC_CHARS)[:MAX_EXTRACTED],
        )


@lru_cache(maxsize=1)
def get_extractor() -> Extractor:
    path = settings.ENGRAM.get("ENTITY_EXTRACTOR") or "episodic.extraction.RuleExtractor"
    extractor: Extractor = import_string(path)()
    return extractor


def extract_entities_topics(*, tenant: Tenant, text: str) -> tuple[list[str], list[str]]:
    return extract_with_config(text=text, config=tenant.config)


def extract_with_config(*, text: str, config: TenantSettings) -> tuple[list[str], list[str]]:
    """The same, with the tenant's settings already parsed (batch writes parse them once)."""
    return get_extractor().extract(text, config)


# --- co-reference: two names of one entity in one turn ---------------------------------------------------

_NAME_WORD = r"[A-Z][\w'’&-]*"
_NAME = rf"{_NAME_WORD}(?:[ \t]+{_NAME_WORD}){{0,3}}"
_AKA = r"aka|a\.k\.a\.|also\s+known\s+as|nicknamed|also\s+called"
# "Melanie (Mel)", "Amazon Web Services (AWS)", "Robert (aka Bob)", "Bob (short for Robert)".
_PARENTHESIS = re.compile(rf"({_NAME})\s*\(\s*(?:({_AKA}|short\s+for)\s+)?({_NAME})\s*\)")
# "Robert, aka Bob", "Robert, who goes by Bob": (entity, alias).
_ALSO_KNOWN = re.compile(rf"({_NAME}),?\s+(?:{_AKA}|(?:who\s+)?goes\s+by)\s+({_NAME})")
# "Mel, short for Melanie", "Mel is short for Melanie": (alias, entity).
_SHORT_FOR = re.compile(rf"({_NAME}),?\s+(?:is\s+)?short\s+for\s+({_NAME})")
# "Christopher, or Chris for short": (entity, alias).
_FOR_SHORT = re.compile(rf"({_NAME}),?\s+(?:or\s+)?({_NAME})\s+for\s+short\b")
# "call me Mel", "I go by Mel": an alias of the speaker.
_CALL_ME = re.compile(rf"\b(?:[Cc]all\s+me|calls\s+me|I\s+go\s+by)\s+({_NAME})")
_ACRONYM = re.compile(r"[A-Z]{2,8}")
_ACRONYM_SKIPS = frozenset({"of", "and", "the", "for", "&"})
# A short name and the name it begins: "Mel" for "Melanie", not "Mela".
SHORT_NAME_MIN = 3
SHORT_NAME_MARGIN = 2


def _name(raw: str) -> str | None:
    """A name as written, function words trimmed at either end ("Hey Mel" -> "Mel"), or None."""
    words = [_POSSESSIVE.sub("", w).strip(".-'’") for w in raw.split()]
    while words and words[0].lower() in _NOT_NAMES:
        words.pop(0)
    while words and words[-1].lower() in _NOT_NAMES:
        words.pop()
    if not words or not all(w[:1].isupper() for w in words):
        return None
    name = " ".join(words)
    if len(name) < 2 or name.lower() in _MONTHS:
        return None
    return name


def _begins(short: str, full: str, *, margin: int) -> bool:
    """`short` is one word that begins the first word of `full`, which is at least `margin` longer."""
    first = full.split()[0].casefold()
    return " " not in short and first.startswith(short.casefold()) and len(first) >= len(short) + margin


def _initials(short: str, full: str) -> bool:
    words = [w for w in full.split() if w.casefold() not in _ACRONYM_SKIPS]
    return bool(_ACRONYM.fullmatch(short)) and len(words) >= 2 and "".join(w[0] for w in words).upper() == short


def _in_parenthesis(outer: str, marker: str | None, inner: str) -> tuple[str, str] | None:
    if marker:
        return (outer, inner) if marker.casefold().startswith("short") else (inner, outer)
    for short, full in ((inner, outer), (outer, inner)):
        if _begins(short, full, margin=1) or _initials(short, full):
            return short, full
    return None


def coreferences(text: str, *, speaker: str | None = None, speakers: Iterable[str] = ()) -> list[tuple[str, str]]:
    """The (alias, entity) pairs one turn shows, as written, for consolidation to learn (episodic.aliases).

    Conservative on purpose: only what the turn states ("Melanie (Mel)", "Amazon Web Services (AWS)",
    "Robert, aka Bob", "Mel, short for Melanie", "Christopher, or Chris for short", "call me Mel" by
    `speaker`), and a one-word name written in the middle of a sentence ("Thanks, Mel!") that begins
    exactly one longer name: the name of another of the conversation's `speakers`, or a name of two or
    more words in the same turn ("Alexander Smith ... Alex"). A capitalised word that opens a sentence
    is never taken for a short name ("Car trouble again" is not about Caroline)."""
    if not text:
        return []
    pairs: list[tuple[str, str]] = []

    def add(alias_raw: str | None, entity_raw: str | None) -> None:
        alias, entity = _name(alias_raw or ""), _name(entity_raw or "")
        if alias and entity and alias.casefold() != entity.casefold() and (alias, entity) not in pairs:
            pairs.append((alias, entity))

    for m in _PARENTHESIS.finditer(text):
        outer, inner = _name(m.group(1)), _name(m.group(3))
        if outer and inner and (pair := _in_parenthesis(outer, m.group(2), inner)) is not None:
            add(*pair)
    for m in _ALSO_KNOWN.finditer(text):
        add(m.group(2), m.group(1))
    for m in _SHORT_FOR.finditer(text):
        add(m.group(1), m.group(2))
    for m in _FOR_SHORT.finditer(text):
        add(m.group(2), m.group(1))
    if speaker:
        for m in _CALL_ME.finditer(text):
            add(m.group(1), speaker)

    others = {s.strip() for s in speakers if s and s.strip() and s.strip() != (speaker or "").strip()}
    firsts = {s.split()[0].casefold() for s in [*others, *([speaker] if speaker else [])]}
    placed = list(_proper_nouns_placed(text))
    longer = others | {name for name, _ in placed if len(name.split()) >= 2}
    for name, at_start in placed:
        if at_start or " " in name or len(name) < SHORT_NAME_MIN or name.casefold() in firsts:
            continue
        fits = {full for full in longer if _begins(name, full, margin=SHORT_NAME_MARGIN)}
        if len(fits) == 1:
            add(name, fits.pop())
    return pairs
