"""Self-disclosure: what a speaker says about themselves, rewritten as a fact about them.

A first-person declarative clause ("I went to a support group yesterday", "My kids love the beach",
"We're planning a trip next month") becomes a third-person statement with the speaker's name and
relative dates resolved against when it was said ("Caroline went to a support group on 7 May
2023."). Only grammar is used: pronouns, auxiliaries, tense and date words; no names, topics or
phrases of any dataset. A clause is kept only when it says something about the speaker: questions,
conditionals, clauses addressed to the listener ("you"), small talk ("I'm so happy for you", "I
agree"), promises ("I'll keep that in mind") and clauses without content words are dropped, and so
is any value `is_fragment` rejects.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable
from datetime import datetime, timedelta

from core import lexicon
from semantic.models import Cardinality, FactCategory
from semantic.predicates import function_words, headed_kind, section, term_kind, typed_spans, value_kind
from semantic.validation import is_fragment

from . import lexicon as data_lexicon

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "a couple of": 2}
_NUMBERS.update({"a few": 3, "few": 3, "several": 3, "couple of": 2})


def _day(when: datetime) -> str:
    return f"{when.day} {when:%B %Y}"


def _month(when: datetime, delta: int) -> datetime:
    month = when.month - 1 + delta
    return when.replace(day=1, year=when.year + month // 12, month=month % 12 + 1)


def resolve_dates(text: str, now: datetime) -> str:
    """Relative date words replaced by the dates they meant when said at `now`."""

    def weekday(m: re.Match[str]) -> str:
        target = _WEEKDAYS.index(m.group(2).lower())
        back = (now.weekday() - target) % 7 or 7
        return f"on {_day(now - timedelta(days=back))}"

    def ago(m: re.Match[str]) -> str:
        word = m.group(1).lower()
        count = int(word) if word.isdigit() else _NUMBERS.get(word, 1)
        unit = m.group(2).lower().rstrip("s")
        if unit == "year":
            return f"in {now.year - count}"
        if unit == "month":
            return f"in {_month(now, -count):%B %Y}"
        days = count * (7 if unit == "week" else 1)
        return f"around {_day(now - timedelta(days=days))}"

    rules: list[tuple[str, Callable[[re.Match[str]], str]]] = [
        (r"\b(last|this past) (monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", weekday),
        (
            r"\b(\d+|an?|one|two|three|four|five|six|a few|a couple of|couple of|few|several) (days?|weeks?|months?|years?) ago\b",
            ago,
        ),
        (r"\byesterday\b", lambda m: f"on {_day(now - timedelta(days=1))}"),
        (r"\btoday\b", lambda m: f"on {_day(now)}"),
        (r"\btonight\b", lambda m: f"on the night of {_day(now)}"),
        (r"\btomorrow\b", lambda m: f"on {_day(now + timedelta(days=1))}"),
        (r"\blast (week|weekend)\b", lambda m: f"the {m.group(1)} before {_day(now)}"),
        (r"\bnext (week|weekend)\b", lambda m: f"the {m.group(1)} after {_day(now)}"),
        (r"\blast month\b", lambda m: f"in {_month(now, -1):%B %Y}"),
        (r"\bthis month\b", lambda m: f"in {now:%B %Y}"),
        (r"\bnext month\b", lambda m: f"in {_month(now, 1):%B %Y}"),
        (r"\blast year\b", lambda m: f"in {now.year - 1}"),
        (r"\bthis year\b", lambda m: f"in {now.year}"),
        (r"\bnext year\b", lambda m: f"in {now.year + 1}"),
    ]
    for pattern, replace in rules:
        text = re.sub(pattern, replace, text, flags=re.IGNORECASE)
    # A preposition of its own before the day takes no other ("as of yesterday": "as of 8 November 2026").
    return re.sub(r"\b(as of|since|from|starting|until|till|after|before) (?:on|in) (?=\d|[A-Z])", r"\1 ", text)


# --- first person to third person

_IRREGULAR = {"am": "is", "are": "is", "have": "has", "do": "does", "go": "goes", "was": "was", "were": "was"}
_MODAL = frozenset("will would can could should shall may might must did didn't was wasn't had".split())
_CONTRACTION = {"'m": "is", "'ve": "has", "'d": "would", "'ll": "will", "'re": "is"}
_ADVERB = frozenset(
    "really just also still always never recently finally actually definitely totally absolutely "
    "usually often sometimes even already currently truly honestly both all each kind sort of now only mostly "
    "mainly rarely barely hardly normally generally typically almost nearly".split()
)


_IRREGULAR_PAST = frozenset(
    "went got took made saw had did met began ran won found gave wrote bought sang felt left built drew came "
    "became brought caught taught lost spent thought told said knew heard kept slept sent sat stood understood "
    "wore chose drove flew fell forgot grew hung held led lit meant paid quit rode rose sold shot shut sought "
    "swam threw woke broke spoke stole fought dug fed hid bit shook sank stuck swore tore won't can't don't "
    "didn't couldn't wouldn't shouldn't haven't hasn't isn't aren't".split()
)


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low in _MODAL or low in _IRREGULAR_PAST or (low.endswith("ed") and not low.endswith("eed")) or not low.isalpha():
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


_SLANG = {"gonna": "going to", "wanna": "want to", "gotta": "have to", "kinda": "kind of", "sorta": "sort of"}
# The speaker typed informally: "i", "im", "ive" for "I", "I'm", "I've" (no English word is spelt so).
_INFORMAL_I = {"i": "I", "im": "I'm", "ive": "I've", "i'm": "I'm", "i've": "I've", "i'd": "I'd", "i'll": "I'll"}


def as_typed_formally(sentence: str) -> str:
    """The sentence with the speaker's "I" written as "I" however it was typed ("i turned 35", "im 35
    now"), so that every reader finds the speaker where it looks for "I"."""
    return re.sub(
        r"(?<![\w'’.-])(?:i|im|ive|i'm|i've|i'd|i'll)(?![\w'’-]|\.\w)", lambda m: _INFORMAL_I[m.group(0)], sentence
    )


_OBJECT = {"me": None, "us": None, "my": "their", "our": "their", "mine": "'s", "ours": "'s"}
_OBJECT.update({"myself": "themselves", "ourselves": "themselves"})


def third_person(clause: str, name: str) -> str:
    """The clause with its first-person subjects, objects and possessives replaced by the speaker,
    and the verb after each subject made to agree ("I love" -> "Caroline loves")."""
    text = clause.replace("’", "'")
    for slang, plain in _SLANG.items():
        text = re.sub(rf"\b{slang}\b", plain, text, flags=re.IGNORECASE)
    # "My husband and I want ...": the speaker leads and the verb stays plural.
    text = re.sub(r"^(?:my|our) (\w+(?: \w+)?) and I\b", rf"{name} and their \1", text, flags=re.IGNORECASE)
    tokens = text.split()
    out: list[str] = []
    named = False
    agree = False
    for token in tokens:
        m = re.fullmatch(r"(?P<word>[A-Za-z']+)(?P<punct>[^A-Za-z']*)", token)
        if not m:
            out.append(token)
            continue
        word, punct = m.group("word"), m.group("punct")
        low = word.lower()
        subject = re.fullmatch(r"(i|we)('m|'ve|'d|'ll|'re)?", low)
        if subject and (low != "we" or word in {"we", "We"}) and (word[0] == "I" or low.startswith("we")):
            if subject.group(2):
                out.append(f"{name} {_CONTRACTION[subject.group(2)]}{punct}")
            else:
                out.append(name + punct)
                agree = not punct
            named = True
            continue
        if low in _OBJECT:
            replacement = _OBJECT[low]
            if replacement is None:
                out.append(name + punct)
            elif replacement == "'s" or (replacement == "their" and not named):
                out.append(f"{name}'s{punct}")
            else:
                out.append(replacement + punct)
            named = True
            continue
        if agree:
            if low in _ADVERB:
                out.append(token)
                continue
            out.append(_third_person(word) + punct)
            agree = False
            continue
        out.append(token)
    return " ".join(out)


# --- which clauses disclose something

_FIRST_PERSON_START = re.compile(
    r"^(?:i|i'm|i've|i'd|i'll|we|we're|we've|we'd|we'll|my|our)\b(?:\s+\w+){0,3}", re.IGNORECASE
)
_LEADING_NOISE = re.compile(
    r"^(?:(?:oh|wow|yeah|yes|yep|no|nope|well|hey|hi|hello|haha|lol|thanks|thank you|aw+|ah|um|so|and|but|"
    r"honestly|actually|sure|ok|okay|totally|absolutely|definitely|right|cool|great|nice|awesome|plus|also|"
    r"btw|anyway|by the way|you know|gosh|omg|man|dude|true|agreed|exactly|indeed)\b[\s,!.-]*)+",
    re.IGNORECASE,
)
_ADDRESSED = re.compile(r"\b(?:you|your|you're|you've|yours|yourself|u|ur)\b", re.IGNORECASE)
_NOT_DECLARATIVE = re.compile(
    r"\?|^\s*(?:if|unless|whether|when|what|which|how|why|who|where)\b|\b(?:if|unless) (?:i|we)\b|"
    r"^\s*(?:i|we) (?:wonder|wish|bet|guess|suppose|mean|agree|know|see|hear|understand|get it|remember when)\b|"
    r"^\s*(?:i|we)(?:'d| would) (?:love|like) to (?:hear|see|know)\b",
    re.IGNORECASE,
)
# Feelings about the conversation itself, not news about the speaker.
_SMALL_TALK = re.compile(
    r"^\s*(?:i|we)(?:'m| am|'re| are) (?:so |really |very |just |totally )*(?:glad|happy|sorry|thrilled|"
    r"stoked|proud|grateful|thankful|here|sure|with|all for|excited for|happy for)\b(?! to (?!hear|see))|"
    r"^\s*(?:i|we) (?:totally |really |definitely )*(?:hope|appreciate|love that|think so|feel you|hear you)\b|"
    r"^\s*(?:i|we) can(?:'t| not|not) wait\b",
    re.IGNORECASE,
)
# A simple future in the first person is a promise or a prediction made to the listener ("I'll keep
# that in mind", "we'll have a great time"), not news about the speaker; a plan is told as one ("I'm
# going to", "we're planning"). Kept: a lasting attitude ("I'll always remember ...") and an
# activity already scheduled ("we'll be discussing ...").
_PROMISE = re.compile(r"^\s*(?:i|we)(?:'ll| will)\b(?! (?:\w+ )?(?:always|be \w+ing)\b)", re.IGNORECASE)
# A clause that leans on what was said before ("I loved it", "we went there") or that denies
# something: neither stands alone as a fact.
_ANAPHORIC = re.compile(
    r"\b(?:it|them|these|those|there|he|him|she|they|that one|this one)\b|\b(?:that|this)$", re.IGNORECASE
)
_NEGATED = re.compile(r"\b(?:not|never|no longer|\w+n't)\b", re.IGNORECASE)
# A value set against the one left, after the clause ("I'm 35 now, not 34"): the clause is not denied.
_CONTRAST = re.compile(r",\s*(?:but\s+)?not\s+(?:the\s+|an?\s+)?[^\s,;]+(?:\s+[^\s,;]+){0,2}\s*$", re.IGNORECASE)
_HEDGE = re.compile(r"\b(?:i think|i guess|maybe|probably|might|not sure|kind of|sort of)\b", re.IGNORECASE)
_STOP = frozenset(
    "i me my we us our you your it its this that the a an and or but so to of in on at for with from by "
    "is are was were be been am do does did have has had will would can could just really very so too "
    "about what which who how when there here not no yes all some any more most much many lot lots "
    "like get got go going gone make made thing things stuff something feel felt way also even still".split()
)
# "..., and it was so powerful", "..., which was fun": a remark on what came before, not the fact.
_TRAILING_COMMENT = re.compile(
    r",?\s+(?:(?:and|but|so|which|as)\s+(?:it|that|this|they|those|these)(?:'s|'re| was| is| were| are| has| had)?"
    r"|which (?:is|was|has been))\b.*$",
    re.IGNORECASE,
)
_CLAUSE_SPLIT = re.compile(r"\s*(?:;|:(?!\d)|\s[-–—]\s|,\s*(?=(?:and |but |so )?(?:i|we|my|our)\b))\s*", re.IGNORECASE)
_BRACKETED = re.compile(r"\s*\[[^\]]*\]\s*")
# A subject the speaker left out: "Gonna continue my studies", "Been painting a lot".
_ELIDED = re.compile(
    r"^(?:(?P<going>gonna|going to|planning (?:to|on)|hoping to|trying to|thinking (?:of|about)|looking forward to|"
    r"working on|off to)|(?P<been>been|just got|just finished|just started)|"
    r"(?P<changed>(?:just |finally |recently )?(?:switched|moved|upgraded|downgraded|changed|migrated|replaced|renamed|"
    r"turned|relocated|swapped|started|joined)))\b",
    re.IGNORECASE,
)
# A subject left out before a verb in the past that tells what the speaker did to a thing of their own,
# as a diary is written ("Had my 35th birthday last weekend", "Finally sold our old car"): a past form
# that is not also the base form an order to the listener takes ("Set my alarm", "Read my notes":
# change.txt [past as the base form]), then "my" or "our".
_ELIDED_PAST = re.compile(
    r"^(?:(?:just|finally|recently|already)\s+)?(?P<verb>[a-z]+)\s+(?:my|our)\b",
    re.IGNORECASE,
)


def _elided_past(clause: str) -> bool:
    m = _ELIDED_PAST.match(clause)
    if m is None:
        return False
    verb = m.group("verb").lower()
    if verb in section("change.txt", "past as the base form"):
        return False
    return verb in _IRREGULAR_PAST or (len(verb) > 4 and verb.endswith("ed") and not verb.endswith("eed"))


# ... unless the subject left out is a dummy "it": "Been a while since we talked", "Gonna be a big change".
_DUMMY_IT = re.compile(r"^(?:been|(?:gonna|going to) be)\s+(?:a|an|the|ages|quite|such)\b", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Disclosure:
    attribute: str
    value: str
    category: str
    confidence: float
    statement: str
    cardinality: str = Cardinality.MULTI


_PLAN = re.compile(
    r"^(?:i|we)(?:'m| am|'re| are)? (?:\w+ )?(?:planning|plan|going|gonna|hoping|hope|intend|intending|"
    r"want|wanna|need|aim|aiming|thinking of|thinking about|looking forward|about)\b(?: to)?|^(?:i|we)(?:'ll| will)\b|"
    r"^(?:i|we) (?:\w+ )?(?:need|have) to\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"^(?:i|we) (?:\w+ )?(?:love|like|enjoy|adore|prefer|hate|dislike)\b|^(?:my|our) fav(?:ou?rite)?\b|"
    r"^(?:i|we)(?:'m| am|'re| are) (?:\w+ )?(?:into|a fan of|passionate about|obsessed with)\b",
    re.IGNORECASE,
)
_POSSESSION = re.compile(r"^(?:i|we)(?:'ve| have)? (?:got|have|own|bought|adopted|received)\b", re.IGNORECASE)
_RELATION = re.compile(
    r"^(?:my|our) (?:\w+ )?(?:husband|wife|partner|kids?|children|son|daughter|mom|mother|dad|father|parents|"
    r"brother|sister|siblings|family|friends?|boyfriend|girlfriend|grandma|grandpa|dog|cat|pets?|team|boss)\b",
    re.IGNORECASE,
)
_WORK = re.compile(
    r"\b(?:work|jobs?|careers?|compan(?:y|ies)|business|boss|colleagues?|clients?|office|projects?)\b", re.IGNORECASE
)
_PAST = re.compile(
    r"^(?:i|we) (?:\w+ )?(?:\w+ed|went|got|took|made|saw|had|did|met|began|ran|won|found|gave|read|wrote|"
    r"bought|sang|felt|left|built|drew|came|became|brought|caught|taught|lost|spent|tried|"
    + "|".join(w for w in sorted(_IRREGULAR_PAST) if "'" not in w)
    + r")\b|"
    r"^(?:i|we)(?:'ve| have) (?:\w+ )?\w+(?:ed|en|ne|wn|ht|ung|ot)\b",
    re.IGNORECASE,
)


def _classify(clause: str) -> tuple[str, str, float]:
    if _PLAN.match(clause):
        return "plans", FactCategory.BUSINESS_CONTEXT if _WORK.search(clause) else FactCategory.OTHER, 0.6
    if _PREFERENCE.match(clause):
        return "preferences", FactCategory.PREFERENCES, 0.65
    if _RELATION.match(clause):
        return "relations", FactCategory.OTHER, 0.6
    if _POSSESSION.match(clause):
        return "possessions", FactCategory.OTHER, 0.6
    if _PAST.match(clause):
        return "experiences", FactCategory.BUSINESS_CONTEXT if _WORK.search(clause) else FactCategory.OTHER, 0.65
    return "about", FactCategory.BUSINESS_CONTEXT if _WORK.search(clause) else FactCategory.OTHER, 0.55


MIN_CONTENT_WORDS = 3
# "I just turned 40", "we've moved to Leeds": the subject, at most one adverb, then a verb of change
# (semantic/data/change.txt, [verbs]).
_TOLD_CHANGE = re.compile(
    rf"^(?:i|we)(?:'ve| have)?\s+(?:[a-z]+ly\s+|just\s+|now\s+)?(?:{lexicon.alternation(section('change.txt', 'verbs'))})\b",
    re.IGNORECASE,
)

# "I went vegan", "we've gone freelance": a verb of becoming (change.txt, [becoming]) then the state it
# reaches, a word or two; not an activity ("went fishing").
_BECAME = re.compile(
    rf"^(?:i|we)(?:'ve| have)?\s+(?:[a-z]+ly\s+|just\s+|now\s+)?(?:{lexicon.alternation(section('change.txt', 'becoming'))})"
    r"\s+(?:a\s+|an\s+)?(?P<state>[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?)\b",
    re.IGNORECASE,
)


def _became(clause: str) -> bool:
    m = _BECAME.match(clause)
    if m is None:
        return False
    state = m.group("state").lower()
    trips = section("change.txt", "not a state become")
    return not state.split()[0].endswith("ing") and state.split()[0] not in trips and term_kind(state) is not None


def without_now(clause: str, *, phrases_only: bool = False) -> str:
    """The clause without the adverbs that say it holds now ("these days", "at the moment": change.txt,
    [adverbs]): "these" there points back at nothing. `phrases_only`: only those of more than one word,
    which a parse reads as a circumstance ("now" stays)."""
    adverbs = section("change.txt", "adverbs")
    said = lexicon.alternation(tuple(a for a in adverbs if " " in a) if phrases_only else adverbs)
    return re.sub(rf"\b(?:{said})\b", " ", clause, flags=re.IGNORECASE)


# A clause that says a thing of the speaker's (or the speaker) is in a state: the thing's words, a
# copula, a passive's or a perfect's auxiliary or a verb of change with "to" (change.txt [verbs]), the
# words that say it holds now, then the state. A past copula or "got" only before a participle ("was
# approved", "got rejected"): "was great" tells the past, "got a new tank" a possession.
_HELD = (
    r"^(?:(?P<thing>(?:[\w'’-]+\s+){{0,3}}[\w'’-]+)\s+)?"
    r"(?:(?:is|are|has been|have been|became|has become|have become)|(?P<past>was|were|got|gets)"
    r"|(?P<changed>(?:has |have )?(?:{verbs})\s+(?:to|into)))\s+"
    r"(?:(?:{before}|(?P<adverb>[a-z]+ly))\s+)*(?:(?:a|an|the)\s+)?(?:(?P<modifier>[a-z]+ly)\s+)?"
    r"(?P<state>[a-z][\w'’ -]*?)(?:,?\s+(?:{now}|again))?$"
)


_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "its", "their"})


@functools.cache
def _held() -> re.Pattern[str]:
    verbs = lexicon.alternation(section("change.txt", "verbs"))
    # ... and the words that said when, moved after the clause (`after_the_clause`: "Nowadays my drink is
    # kombucha"), but "this week" and its kind, which say for how long (change.txt [one occasion])
    when = (w for w in section("change.txt", "time of the statement") if not w.startswith("this "))
    now = lexicon.alternation((*(w for w in section("change.txt", "adverbs") if " " in w), "now", *when))
    before = lexicon.alternation(data_lexicon.sections("moment.txt")["before a state"])
    return re.compile(_HELD.format(verbs=verbs, now=now, before=before), re.I)


def state_held(value: str) -> str:
    """The state a clause says a thing holds ("visa application is pending": "pending"; "goal is now
    a half marathon": "half marathon"; "favourite colour changed to green": "green"; "is single
    again": "single"), or "". The state is a word or a few without a typed value
    (`predicates.term_kind`), not a mood or an evaluation (fact_filters), not a verb in -ing."""
    m = _held().match(value.strip(" ."))
    if m is None:
        return ""
    state, thing = m.group("state"), (m.group("thing") or "").lower().split()
    words = state.lower().split()
    moment = data_lexicon.sections("moment.txt")
    grammar = function_words()
    if (
        term_kind(state) is None
        # the thing is a noun phrase ("online clothes store"), not a clause ("fought hard and got ...")
        or any(w in grammar and w not in _POSSESSIVES for w in thing)
        # a word of degree or in -ly in the state grades it ("so tired"); a mood is passing ("is tired")
        or any(
            w in moment.get("graded", ()) or w in moment.get("degree", ()) or w in moment.get("mood", ()) for w in words
        )
        or any(w.endswith("ly") for w in words)
        # an adverb before the state says how or since when ("happily married", "currently single"),
        # unless it grades it ("totally hooked"); so does one after the article ("a fully vegan diet"
        # is a vegan diet, "a really nice flat" an evaluation)
        or (m.group("adverb") or "").lower() in {*moment.get("graded", ()), *moment.get("degree", ())}
        or (m.group("modifier") or "").lower() in {*moment.get("graded", ()), *moment.get("degree", ())}
        # an activity in progress ("is working", "livin' the dream"), whose object is someone's; after a verb
        # of change with "to" an activity is named ("switched to cycling")
        or (
            re.search(r"(?:ing|in')$", words[0])
            and words[0] not in moment.get("states in -ing", ())
            and not (m.group("changed") and len(words) == 1)
        )
        or any(w in _POSSESSIVES for w in words)
        or (m.group("past") and not re.search(r"(?:ed|en)$", words[-1]))
    ):
        return ""
    return state


# A habit said in the present with its object ("drinks oat milk", "usually takes the bus to work", "follows a
# keto diet"), and what may follow the object: a circumstance (a preposition's phrase), the words that say
# it holds now, and the value it replaced ("instead of tea"). A progressive is a habit only where it
# names what it replaced ("is drinking almond milk rather than oat milk now", "has been ordering a flat
# white instead of a latte"); a habit begun holds now ("has started drinking tea").
_HABIT = (
    r"^(?:(?P<adverb>[a-z]+ly|{adverbs})\s+)?(?:(?:is|are|has been|have been)\s+(?P<progressive>[a-z]+ing)"
    r"|(?:has |have )(?:started|begun)\s+(?P<begun>[a-z]+ing)|(?P<verb>[a-z]+s))\s+"
    r"(?:(?:a|an|the|some)\s+)?(?P<object>[a-zA-Z][\w'’-]*(?:\s+[a-z][\w'’-]*){{0,2}}?)"
    r"(?:\s+(?:to|into|for|at|in|on|with|before|after|every|most|each)(?:\s+[^,\s]+){{1,4}}?)?(?:,?\s+(?:{now}))?"
    r"(?P<left>,?\s+(?:{left})\s+.+)?$"
)


@functools.cache
def _habit_pattern(template: str) -> re.Pattern[str]:
    """A habit's pattern with the words that say it holds now, what it replaced and how often."""
    now = lexicon.alternation(section("change.txt", "adverbs"))
    left = lexicon.alternation(section("change.txt", "after the new value"))
    adverbs = lexicon.alternation(data_lexicon.sections("moment.txt")["habit adverbs"])
    return re.compile(template.format(now=now, left=left, adverbs=adverbs), re.I)


def _habit() -> re.Pattern[str]:
    return _habit_pattern(_HABIT)


def habit_held(value: str) -> str:
    """The object of a habit said in the present ("drinks oat milk": "oat milk"; "drinks coffee instead of
    tea these days": "coffee"; "follows a keto diet": "keto diet"), or "": a verb in the third person
    (not one of moment.txt [no habit]), then a thing of a word or a few (`predicates.term_kind`), not a
    pronoun, a mood, a grade or an activity."""
    m = _habit().match(value.strip(" ."))
    if m is None or (m.group("progressive") and not m.group("left")):
        return ""
    verb = (m.group("verb") or m.group("progressive") or m.group("begun") or "").lower()
    thing = m.group("object")
    words = thing.lower().split()
    moment = data_lexicon.sections("moment.txt")
    grammar = function_words()
    if (
        verb in moment.get("no habit", ())
        # "does" names an activity only bare ("does yoga", "does pilates"), not a task ("does the dishes")
        or (
            verb in moment.get("activity named bare", ()) and re.search(rf"\b{verb}\s+(?:a|an|the|some)\s", value, re.I)
        )
        or verb.endswith("ss")
        or (term_kind(thing) is None and headed_kind(thing) is None)
        or any(w in grammar or w in _POSSESSIVES for w in words)
        or any(w in moment.get("graded", ()) or w in moment.get("mood", ()) for w in words)
        or re.search(r"(?:ing|in')$", words[0])
        or words[0] in moment.get("no object", ())
    ):
        return ""
    return thing


# A way of getting somewhere said with an intransitive verb: "drives to work every day", "commutes by
# train", "cycles to the office now instead of driving". The value is the means after "by"/"on", else the
# verb itself as an activity ("driving"): what "instead of driving" names as left.
_MANNER = (
    r"^(?:(?:[a-z]+ly|{adverbs})\s+)?(?P<verb>[a-z]+s)\s+"
    r"(?:(?:to|into)\s+(?:(?:the|my|their|our)\s+)?[a-z]+(?:\s+[a-z]+)?(?=\s+(?:by|on)\s|\s*$|,|\s+(?:every|each|most|daily|{now}|{left})\b))?"
    r"(?:\s*(?:by|on)\s+(?:(?:the|a|their|my)\s+)?(?P<means>[a-z]+(?:-[a-z]+)?))?"
    r"(?:\s+(?:every|each|most)\s+[a-z]+|\s+daily)?(?:,?\s+(?:{now}))?(?:,?\s+(?:{left})\s+.+)?$"
)


def _gerund(third_person: str) -> str:
    """ "drives" -> "driving", "runs" -> "running", "catches" -> "catching"."""
    verb = third_person.lower()
    if verb.endswith("ies"):
        base = verb[:-3] + "y"
    elif re.search(r"(?:s|sh|ch|x|z|o)es$", verb):
        base = verb[:-2]
    else:
        base = verb[:-1]
    if base.endswith("ie"):
        return base[:-2] + "ying"
    if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        return base[:-1] + "ing"
    if re.fullmatch(r"[^aeiou]*[aeiou][^aeiouwxy]", base):  # one syllable ending in a short vowel and a consonant
        return base + base[-1] + "ing"
    return base + "ing"


def manner_held(value: str) -> str:
    """The way a habit of getting somewhere is done ("commutes by train": "train"; "drives to work every
    day": "driving"), or "": a verb in the third person, then where to, by what, how often, "now" and what it
    replaced. A verb that only says where one goes (moment.txt [no habit]: "goes", "gets") names no way."""
    m = _habit_pattern(_MANNER).match(value.strip(" ."))
    if m is None or m.group(0).strip() == m.group("verb"):
        return ""
    if m.group("means"):
        means = m.group("means").lower()
        return "" if means in function_words() else means
    verb = m.group("verb").lower()
    told_where = re.search(r"\b(?:to|into)\b", value, re.I)
    if verb in data_lexicon.sections("moment.txt").get("no habit", ()) or verb.endswith("ss") or not told_where:
        return ""
    return _gerund(verb)


@functools.cache
def _aimed() -> re.Pattern[str]:
    aiming = lexicon.alternation(section("change.txt", "aiming"))
    now = lexicon.alternation(section("change.txt", "adverbs"))
    return re.compile(
        rf"^(?:is|are|am)\s+(?:(?:now|currently|still)\s+)?(?:{aiming})\s+(?:for|at|towards?)\s+"
        rf"(?P<goal>.+?)(?:,?\s+(?P<now>{now}))?$",
        re.I,
    )


def goal_aimed(value: str) -> tuple[str, str]:
    """(the goal's value, the goal as said) for a goal the speaker says they aim at now ("is aiming for
    12,000 steps a day now": ("12,000 steps", "12,000 steps a day")), or ("", ""): a verb of change.txt
    [aiming], then a typed value or a thing of a word or a few."""
    m = _aimed().match(value.strip(" ."))
    if m is None:
        return "", ""
    goal = m.group("goal")
    spans = typed_spans(goal)
    if spans:
        return spans[0].text, goal
    thing = re.sub(r"^(?:a|an|the)\s+", "", goal, flags=re.I)
    if term_kind(thing) is None or any(w in function_words() for w in thing.lower().split()):
        return "", ""
    return thing, goal


@functools.cache
def _milestone() -> re.Pattern[str]:
    nouns = lexicon.alternation(section("change.txt", "ordinal reached"))
    return re.compile(rf"(?:^|\s)(?:their|my|our)\s+(?P<count>\d{{1,3}})(?:st|nd|rd|th)\s+(?:{nouns})\b", re.I)


def milestone_reached(value: str) -> str:
    """The count of years an ordinal of the speaker's own yearly milestone says they reached
    ("celebrated their 30th birthday": "30"), or ""."""
    m = _milestone().search(value)
    return m.group("count") if m else ""


# A question said after a statement and a comma ("I just turned 35, should I change my plan?"): where a
# sentence splits, so that the statement is read (rules.sentences).
QUESTION_AFTER_COMMA = (
    r",\s+(?=(?:should|shall|does|do|did|can|could|would|will|is|are|what|how|which|where|when|why|any)\b"
    r"[^.!?]*\?\s*$)"
)

# "it" opening a clause that states a value ("it's Muse now", "but now it is at 10"), said after a clause
# that names a thing of the speaker's without saying what it is now: a question ("My favourite band?"),
# the past or a denial ("My rent used to be $900", "Pizza is no longer my favourite food").
_IT_STATES = re.compile(
    r"(?:^|[,;:]\s*|\s[-–—]\s*|\s+(?=(?:and|but|so)\s))(?:(?:and|but|so)\s+)?(?P<now>now,?\s+)?(?P<it>it|that)(?:'s|’s|\s+is|\s+has\s+become|\s+became)"
    r"\s+(?P<rest>(?!been\b|not\b|gonna\b|going\b)(?:[^,;.!?]|[,.](?=\d))+?)\s*(?P<end>[.!]?)\s*$",
    re.IGNORECASE,
)
_THING_OF_THEIRS = re.compile(
    r"\b(?:my|our)\s+(?P<thing>(?:[a-z][\w-]*\s+){0,3}?[a-z][\w-]*)"
    r"(?=\s*(?:[?,;:]|$)|\s+(?:is|was|are|were|isn't|wasn't|used|has|had|no)\b)",
    re.IGNORECASE,
)


def _a_value(said: str) -> bool:
    """What "it" is said to be is a value: a typed value or a state of a word or a few, with the
    preposition, naming word and adverb of now that go with it ("at 10:30", "called Beacon", "Muse now");
    not a remark ("a relief to have their support")."""
    naming = lexicon.alternation(section("change.txt", "naming"))
    said = re.sub(rf"^(?:now\s+)?(?:at|on|in|from|{naming})\s+|\s+now$", "", said.strip(), flags=re.I)
    typed = value_kind(said)
    return (typed is not None and typed.text == said) or (len(said.split()) <= 3 and term_kind(said) is not None)


def _no_value_now(clause: str) -> bool:
    """The clause names a thing without saying what it is now: a question, the past, a denial."""
    return clause.rstrip().endswith("?") or bool(
        re.search(r"\b(?:was|were|used to|no longer|anymore|any more|not|\w+n't)\b", clause, re.I)
    )


def pointed_back(sentences: list[str]) -> list[str]:
    """The sentences of one message, with "it" read as the thing of the speaker's it points back to
    where the clause before names that thing and says no value of it now ("My favourite band? It's Muse
    now." -> "My favourite band is Muse now."; "My rent used to be $900, but now it's $1,100." -> the
    sentence, then "My rent is $1,100 now."): the clause is then read as any statement of a thing of
    theirs, by every reader."""
    out: list[str] = []
    for sentence in sentences:
        m = _IT_STATES.search(sentence)
        before = sentence[: m.start()].strip() if m else ""
        if m is None:
            out.append(sentence)
            continue
        context = before or (out[-1] if out else "")
        # The thing's words end before an adverb of time ("my favourite food anymore").
        things = list(
            _THING_OF_THEIRS.finditer(re.sub(r"\s+(?:anymore|any more|now|again|either)\b", "", context, flags=re.I))
        )
        if not things or not _no_value_now(context) or not _a_value(m.group("rest")):
            out.append(sentence)
            continue
        now = " now" if m.group("now") and not re.search(r"\bnow\b", m.group("rest"), re.I) else ""
        thing = things[0].group(0)
        resolved = f"{thing[0].upper()}{thing[1:]} is {m.group('rest')}{now}{m.group('end') or '.'}"
        # The sentence stays as it was said (what its readers made of it before), the clause is added.
        out += [sentence, resolved] if before else [resolved]
    return out


@functools.cache
def _asked() -> re.Pattern[str]:
    verbs = lexicon.alternation(section("change.txt", "asked to change"))
    return re.compile(
        rf"^(?:(?:please|pls|can you|could you|would you|kindly)\s+)*(?:{verbs})\s+(?P<thing>(?:my|our)\s+[\w' -]+?)"
        r"\s+(?:from\s+[^,;]+?\s+)?to\s+(?P<value>[^;!?]+?)(?:,?\s+please)?\s*[.!?]*$",
        re.IGNORECASE,
    )


@functools.cache
def _told_to_listener() -> re.Pattern[str]:
    opens = lexicon.alternation(section("change.txt", "told to the listener"))
    return re.compile(rf"^(?:{opens})\b[\s,:;-]*(?P<clause>(?:I|I'm|I've|I'd|we|we're|we've|my|our)\b.*)$", re.I)


def _a_value_to_keep(said: str) -> bool:
    """What a request asks to record is a value: the whole of what follows "to" a typed value ("35", "the
    Owls") or a state of a word or two ("the beacon app"); "Can you change my function to return a list?"
    asks for work, not for a value to be kept."""
    said = re.sub(r"^(?:the|a|an)\s+", "", said.strip(), flags=re.I)
    typed = value_kind(said)
    if typed is not None:
        return typed.text == said
    words = said.split()
    return len(words) <= 2 and term_kind(said) is not None and not any(w.lower() in function_words() for w in words)


@functools.cache
def _rather() -> re.Pattern[str]:
    verbs = lexicon.alternation(section("change.txt", "had rather"))
    return re.compile(
        rf"^(?P<who>I|we)(?:'d|\s+would)\s+(?:much\s+|really\s+)?rather\s+(?P<verb>{verbs})\s+(?P<value>[^,;!?]+?)"
        rf"\s+than\s+(?:(?:{verbs})\s+)?(?P<left>[^,;!?]+?)\s*[.!]*$",
        re.IGNORECASE,
    )


def _preferred(sentence: str) -> str:
    """A preference said as what the speaker had rather take than another ("I'd rather have tea than
    coffee") as the statement it makes, "I prefer tea to coffee": a verb of taking or using
    (change.txt [had rather]), then two values, the one taken and the one left; "", where either is
    no value ("I'd rather stay in than go out")."""
    m = _rather().match(sentence.strip())
    if m is None or not (_a_value_to_keep(m.group("value")) and _a_value_to_keep(m.group("left"))):
        return ""
    return f"{m.group('who')} prefer {m.group('value').strip()} to {m.group('left').strip()}."


def as_stated(sentence: str) -> str:
    """A request to record a value said as the statement it asks for ("Please update my age to 35." ->
    "My age is now 35."), a value the speaker had rather take than another as their preference ("I'd
    rather have tea than coffee." -> "I prefer tea to coffee."), and a clause told to the listener to keep in mind said alone ("Just so you
    know, I'm 35 now." -> "I'm 35 now."): what the speaker says of themselves is in both."""
    if (
        (m := _asked().match(sentence.strip()))
        and _a_value_to_keep(m.group("value"))
        and len(m.group("thing").split()) <= 4
    ):
        thing = m.group("thing")
        return f"{thing[0].upper()}{thing[1:]} is now {m.group('value').strip()}."
    if preferred := _preferred(sentence):
        return preferred
    if m := _told_to_listener().match(sentence.strip()):
        clause = m.group("clause")
        return clause[0].upper() + clause[1:]
    return sentence


MAX_WORDS = 40
# The speaker, a copula, then one word ("I'm single", "I am 34", "we're now engaged").
_BARE_STATE = re.compile(r"(?:i|we)(?:'m| am|'re| are)\s+(?:now\s+)?(?P<held>[\w'-]+)", re.IGNORECASE)


@functools.cache
def _lead_in() -> re.Pattern[str]:
    opens = lexicon.alternation(
        (*section("change.txt", "from then on"), *section("change.txt", "circumstance of time"))
    )
    when = lexicon.alternation(
        (*section("change.txt", "time of the statement"), *data_lexicon.sections("moment.txt")["opens a clause now"])
    )
    first = r"(?:i|i'm|i've|i'd|we|we're|we've|we'd|my|our)\b"
    return re.compile(
        rf"^(?P<lead>(?:{opens})(?:\s+(?!{first}|(?:and|or|but)\b)[\w'’:-]+){{1,4}}?|(?:{when})),?\s+(?P<rest>{first}.*)$",
        re.IGNORECASE,
    )


def after_the_clause(clause: str) -> str:
    """A circumstance of time said before the speaker ("As of yesterday I'm 50", "Since the move, my
    commute is 15 minutes") read after the clause, where a circumstance of time stands and is read."""
    m = _lead_in().match(clause.strip())
    if m is None:
        return clause
    rest = m.group("rest").rstrip()
    end = re.search(r"[.!]+$", rest)
    tail = end.group(0) if end else ""
    return f"{rest[: len(rest) - len(tail)]} {m.group('lead')[0].lower()}{m.group('lead')[1:]}{tail}"


# A clause joined by "and", "but" or "so" whose own subject is the speaker ("I turned 35 on Saturday and we
# had a party", "My birthday was Sunday and I'm now 35"); not a subject shared with someone ("my wife and
# I are ...": a possessive's noun or a name before it). A word that says it holds now may stand before the
# subject ("I quit squash and now I play badminton"), or before a verb that shares the first clause's
# subject ("I quit my job at Stripe and now work at Plaid").
@functools.cache
def _now_opens() -> str:
    return lexicon.alternation(data_lexicon.sections("moment.txt")["opens a clause now"])


@functools.cache
def _joined_at() -> re.Pattern[str]:
    now = _now_opens()
    return re.compile(
        rf"\s+(?:and|but|so)\s+(?=(?:(?:{now}),?\s+)?"
        r"(?:i'm|i've|i'd|we're|we've|we'd|i am|we are|i (?!are\b)[a-z]+|we (?!are\b)[a-z]+)\b"
        rf"|(?:{now})\s+(?!(?:i|we)\b)[a-z]+\b)",
        re.IGNORECASE,
    )


@functools.cache
def _shares_subject() -> re.Pattern[str]:
    return re.compile(rf"^(?:{_now_opens()})\s+(?!(?:i|we)\b)[a-z]+\b", re.IGNORECASE)


_SHARED_SUBJECT = re.compile(r"(?:^|\s)(?:(?i:my|our|his|her|their|your)\s+[\w'-]+|[A-Z][\w'-]*)$")


def _joined(part: str) -> list[str]:
    pieces = _joined_at().split(part)
    out = [pieces[0]]
    subject = re.match(r"(?:i|we)\b", pieces[0], re.IGNORECASE)
    for piece in pieces[1:]:
        if len(out[-1].split()) < 2 or (len(out[-1].split()) <= 3 and _SHARED_SUBJECT.search(out[-1])):
            out[-1] = out[-1] + " and " + piece
        elif _shares_subject().match(piece):
            if subject is None:
                out[-1] = out[-1] + " and " + piece
            else:
                out.append(f"{subject.group(0)} {piece}")
        else:
            out.append(piece)
    return out


@functools.cache
def _asserted() -> re.Pattern[str]:
    opens = lexicon.alternation(section("change.txt", "asserted clause"))
    return re.compile(
        rf"^(?:{opens})\s+(?P<clause>(?:i|i'm|i've|we|we're|we've|my|our)\b[^,]+)(?:,\s*(?P<main>.+))?$", re.I
    )


def _asserted_first(part: str) -> list[str]:
    """A clause opened by words that assert it ("Now that I'm 35, ...", "Since I turned 35, I've ..."):
    read on its own, before the clause it leads to."""
    m = _asserted().match(part)
    # Without the comma, where a clause of "my ..." ends is not seen ("Since my divorce I live alone").
    if m is None or (not m.group("main") and m.group("clause").lower().startswith(("my", "our"))):
        return [part]
    return [m.group("clause"), *([m.group("main")] if m.group("main") else [])]


def _clauses(sentence: str) -> list[str]:
    parts = [p.strip(" ,") for p in _CLAUSE_SPLIT.split(sentence) if p and p.strip(" ,")]
    parts = [piece for part in parts for joined in _joined(part) for piece in _asserted_first(joined)]
    out: list[str] = []
    for part in parts:
        part = _LEADING_NOISE.sub("", part).strip(" ,")
        part = re.sub(r"^(?:and|but|so|because|cause|'cause)\s+", "", part, flags=re.IGNORECASE)
        part = after_the_clause(part)
        if part:
            out.append(part)
    return out


def disclose(sentence: str, *, name: str, said_at: datetime) -> list[Disclosure]:
    """The facts one sentence discloses about its speaker `name`, said at `said_at`."""
    sentence = _BRACKETED.sub(" ", sentence).strip()
    if not sentence or sentence.rstrip().endswith("?"):
        return []
    hedged = bool(_HEDGE.search(sentence))
    found: list[Disclosure] = []
    for clause in _clauses(sentence):
        clause = clause.replace("’", "'").rstrip(" .!")
        elided = _ELIDED.match(clause)
        if elided and _DUMMY_IT.match(clause):
            continue
        if elided is None and _elided_past(clause):
            clause = "I " + clause[0].lower() + clause[1:]
        if elided:
            prefix = "I'm " if elided.group("going") else "I've " if elided.group(0).lower() == "been" else "I "
            clause = prefix + re.sub(r"^gonna\b", "going to", clause[0].lower() + clause[1:], flags=re.IGNORECASE)
        if not _FIRST_PERSON_START.match(clause) or _ADDRESSED.search(clause):
            continue
        if _NOT_DECLARATIVE.search(clause) or _SMALL_TALK.search(clause) or _PROMISE.search(clause):
            continue
        clause = _TRAILING_COMMENT.sub("", clause)
        if _ANAPHORIC.search(without_now(clause)) or _NEGATED.search(_CONTRAST.sub("", clause)):
            continue
        words = clause.split()
        content = [w for w in re.findall(r"[a-z][a-z'-]+", clause.lower()) if w not in _STOP and len(w) > 2]
        # A typed value is content of its own, however it is written ("42", "9:15", "€1,350", "Rotterdam").
        content += [t.text for t in typed_spans(clause)]
        # A change told with its value needs fewer words ("I just turned 40").
        # ... and so does one whose subject is followed by a verb of change ("I just turned 40").
        changed = (elided and elided.group("changed")) or _TOLD_CHANGE.match(clause) or _became(clause)
        needed = MIN_CONTENT_WORDS - 1 if changed else MIN_CONTENT_WORDS
        # A count with the noun it counts says what it is of ("I have 2 roommates"), and a state or a
        # number said of the speaker with the copula alone is the whole statement ("I'm single", "I'm
        # 34"): the value is the content.
        if any(t.kind == "count" and t.unit for t in typed_spans(clause)):
            needed -= 1
        # ... and so does a habit with its object, a way of getting somewhere or a thing of the speaker's in a
        # state ("I play squash", "I commute by tram", "My ticket has been resolved"): what is held is content.
        held = third_person(clause, name)
        held = held[len(name) :].strip() if held.startswith(name) else ""
        if held and (habit_held(held) or manner_held(held) or state_held(held)):
            needed -= 1
        if (bare := _BARE_STATE.fullmatch(" ".join(without_now(clause).split()))) and (
            state_held(f"is {bare.group('held')}") or re.fullmatch(r"\d{1,3}", bare.group("held"))
        ):
            needed = 1
        if len(content) < needed or len(words) > MAX_WORDS:
            continue
        attribute, category, confidence = _classify(clause)
        statement = resolve_dates(third_person(clause, name), said_at)
        value = statement[len(name) :].strip() if statement.startswith(name) else statement
        value = re.sub(r"^'s\s+", "", value)
        if is_fragment(value, predicate=True):
            continue
        if hedged:
            confidence -= 0.15
        found.append(Disclosure(attribute, value, category, round(confidence, 2), statement.rstrip(" .") + "."))
    return found
