"""Facts that are facts: the tests every offline candidate passes before it leaves the extractor.

A fact is a durable statement the subject makes about themselves or their world. By grammar and
shape only (no words of any dataset):
- an opinion or an agreement is not one: a cognition verb with a clause ("thinks a hybrid approach
  makes sense"), an evaluation of an idea ("sounds good", "makes sense", "will help"), agreement
  ("agrees", "on the same page");
- a statement that leans on the conversation is not one: a demonstrative pointing at something said
  ("this solution", "that idea"), the inclusive "we" of speaker and listener ("we're both", "each
  other"), or a speaker named twice after the pronouns were replaced ("Sam thinks Sam will ..."):
  when the rules cannot be sure who is meant, the statement is dropped;
- a passing activity is not one: a progressive other than a lasting one ("is trying to understand",
  "is editing"; kept: working, living, studying, learning, building ...), deliberation ("thinking
  about", "considering"), an immediate step ("going to try that now");
- a value is a complete noun phrase or a typed value: not introduced by a comparison or a hedge
  ("like Flask-Login", "something like"), not an evaluation ("best practices"), not ending in a manner
  adverb ("debugger correctly"), not a gerund ("listening"), no code or possessive stub ("'s
  `index.html` template"); a generic `uses` names something (a capitalised or versioned name, or a
  known tool).
"""

from __future__ import annotations

import re
from datetime import datetime

from core import lexicon as core_lexicon
from semantic.models import Cardinality, FactCategory
from semantic.predicates import (
    EVENT_ATTRIBUTES,
    current_value,
    for_one_occasion,
    hedges,
    how_often,
    renames,
    says_now,
    section,
    tells_the_past,
    value_kind,
)

from . import lexicon
from .first_person import (
    Disclosure,
    goal_aimed,
    habit_held,
    manner_held,
    resolve_dates,
    state_held,
    third_person,
    without_now,
)

_BECOME = re.compile(
    rf"^(?:has |have |had )?(?:{core_lexicon.alternation(section('change.txt', 'becoming'))})\s+(?:[a-z]+ly\s+)?[a-z]",
    re.IGNORECASE,
)
_OPINION = re.compile(
    r"\b(?:think|thinks|thought|believe|believes|believed|guess|guesses|suppose|supposes|reckon|reckons|assume|"
    r"assumes|agree|agrees|agreed|disagree|disagrees|concur|concurs|feels? (?:like|that)|"
    r"(?:sounds?|sounded|seems?|seemed|looks?|looked)(?: \w+)? (?:good|great|fine|right|perfect|reasonable|"
    r"interesting|helpful|useful|like|better|worse|easier|cleaner)|makes? (?:\w+ )?sense|made (?:\w+ )?sense|"
    r"(?:will|would|should|could|might|can|'ll) (?:\w+ )?help|helps? (?:a lot|me|us)|same page|go with|"
    r"on board with|fine with|ok with|okay with)\b",
    re.IGNORECASE,
)
_SPEECH = core_lexicon.alternation(lexicon.sections("clause_verbs.txt").get("speech", ()))
# Reported speech: a verb of saying that governs a clause ("jokes that my ...", "says I'm ...") or a
# quotation on either side of it ("'I live in Narnia,' I joked").
_REPORTED = re.compile(
    rf"\b(?:{_SPEECH})\b,?\s+(?:\w+\s+){{0,2}}?(?:that\b|(?:i|i'm|i've|we|we're|my|our|me|us)\b)"
    rf"|[\"”]\s*,?\s*(?:\w+\s+){{1,2}}?(?:{_SPEECH})\b|\b(?:{_SPEECH})\b\s*,?\s*[\"“]",
    re.IGNORECASE,
)
_TIME_NOUN = (
    r"(?:year|month|week|weekend|morning|afternoon|evening|night|quarter|time|summer|winter|spring|fall|autumn)"
)
_DEICTIC = re.compile(rf"\b(?:this|that|these|those)\b(?!\s+{_TIME_NOUN}\b)", re.IGNORECASE)
_INCLUSIVE_WE = re.compile(
    r"\b(?:we|we're|we've|we'll|we'd|us|let's)\b.*\b(?:both|each other|one another|together|all of us)\b|"
    r"\b(?:both|all) (?:of us|agree)\b",
    re.IGNORECASE,
)
_LASTING = (
    r"work|liv|stud|learn|build|develop|run|rais|train|teach|prepar|sav|renovat|writ|volunteer|"
    r"mov|relocat|migrat|switch|planning|hoping|going|looking forward|using|playing|practis|practic"
)
_LASTING_VERB = re.compile(rf"(?:{_LASTING})", re.IGNORECASE)
_PROGRESSIVE = re.compile(rf"^(?:is|are|am) (?:\w+ly )?(?!(?:{_LASTING})\w*\b)\w+ing\b", re.IGNORECASE)
_DELIBERATION = re.compile(
    r"\b(?:thinking (?:about|of)|considering|wondering|deciding|not sure|undecided|trying to (?:understand|figure|decide|"
    r"learn how|get))\b",
    re.IGNORECASE,
)
_HEDGED_THING = re.compile(r"\b(?:something|stuff|anything|some kind of|kind of|sort of) like\b", re.IGNORECASE)
# A passing mood or a reply to "how are you": not news about the speaker's life.
_MOOD = re.compile(
    r"^(?:is|am|are|feels?|felt|was|has been|have been)(?: (?:so|super|really|very|completely|totally|a bit|"
    r"kind of|kinda|pretty|quite|just|still|all|doing))* "
    rf"(?:{core_lexicon.alternation(lexicon.sections('moment.txt').get('mood', ()))})"
    r"\b(?!\s+(?:at|as|in|with|for|about|of)\s+\w)",
    re.IGNORECASE,
)
# States that hold only while they are said ("asleep", "in a meeting"): "these days" makes none of them lasting.
_NO_STATE = frozenset({"", *lexicon.sections("moment.txt").get("of the moment", ())})
_SPEAKERS_STATE = re.compile(r"(?:is|are|am|was|were|has|have)\b", re.IGNORECASE)
_TRANSIENT = re.compile(r"\b(?:at the moment|right now|for now|these days|thanks|thank you)\b", re.IGNORECASE)
# An indefinite pronoun names nothing ("accomplished something"), a generic "we" speaks for everyone.
_VAGUE = re.compile(
    r"\b(?:something|anything|stuff|a difference|a good (?:time|week|day)|some (?:\w+ )?(?:people|things|places|events))\b",
    re.IGNORECASE,
)
# A wish, an obligation or an ability in the moment ("would love to join", "should get", "can only
# imagine"), or a person named only by a pronoun ("his skills", "her style"): not a fact about the speaker.
_MODAL_OR_PRONOUN = re.compile(
    r"^(?:would|should|could|can|might|may|is off to|are off to)\b|\b(?:his|her|hers|him|he|she)\b", re.IGNORECASE
)
_GENERIC_WE = re.compile(
    r"^\W*(?:\w+[,!]?\s+)?(?:we|we're|we've)\s+(?:all|can|could|should|gotta|got to|have to|need to|must)\b|"
    r"\bwe(?:'re| are)? all\b",
    re.IGNORECASE,
)
_IMMEDIATE = re.compile(
    r"\b(?:right now|now|right away|in a (?:minute|moment|sec|second)|first)\s*[.!]?$", re.IGNORECASE
)
_MOMENT = core_lexicon.alternation(lexicon.sections("moment.txt").get("of the moment", ()))
_DEGREE = core_lexicon.alternation(lexicon.sections("moment.txt").get("degree", ()))
# A state said with "now" that holds now, not a step of the moment: a copula with its complement ("is
# engaged now", "'s loft conversion is complete now"), or a habit in the present ("drinks green tea
# instead of coffee now"). Not a progressive ("is charging my phone now"), an obligation or a wish ("has
# to run now"), a state of the moment ("is ready now": data/moment.txt) or a place of the moment named
# without a name ("is at the dentist now").
_STATE_NOW = re.compile(
    rf"^(?:(?:[a-z][\w'-]*\s+){{0,3}}?(?:is|are|am)\s+(?:(?:{_DEGREE}|\w+ly)\s+)*+"
    rf"(?!\w+ing\b|(?:{_MOMENT})\b|at (?:the|a|an|my|our)\b)"
    r"|(?!(?:has|have|had|needs|wants|gets|goes|got|is)\b)[a-z]+s\s+(?!to\s+[a-z]+\s+now\b))",
    re.IGNORECASE,
)
# Values
_VALUE_LEAD = re.compile(
    r"^(?:['`’\"(\[-]|like\b|something\b|some kind|kind of|sort of|such as|similar|e\.g\.|etc\b|"
    r"(?:the |a |an )?(?:best|good|better|proper|correct|right|nice|great|bad|worse|worst)\b)",
    re.IGNORECASE,
)
_NOT_ADVERB = frozenset("only daily weekly monthly yearly hourly early family italy july assembly supply reply".split())
_ADVERB_TAIL = re.compile(r"\b([a-z]{3,}ly)$")
_GERUND_HEAD = re.compile(r"^[a-z]+ing\b")
_NAMED = re.compile(r"[A-Z]|\d")
# Pattern values free of the speaker's words; these attributes take typed values or fixed templates.
LITERAL_ATTRIBUTES = frozenset({"email", "phone", "birthday", "name", "preferred_name", "timezone"})
_CLAUSE_ATTRIBUTES = frozenset(
    {"about", "experiences", "plans", "preferences", "relations", "possessions", "constraints"}
)


def lasting_activity(verb: str) -> bool:
    """A progressive that tells a lasting state ("working", "living", "studying"), not one of the moment."""
    return bool(_LASTING_VERB.match(verb))


def value_is_complete(attribute: str, value: str) -> bool:
    if attribute in LITERAL_ATTRIBUTES or attribute.endswith("_date"):
        return True
    if "`" in value or _VALUE_LEAD.match(value):
        return False
    # A typed value ("May 19", "Envoy", "9:15") is no clause: the tests of a clause's words do not apply.
    if attribute in _CLAUSE_ATTRIBUTES and value_kind(value) is None:
        return True
    tail = _ADVERB_TAIL.search(value)
    if tail and tail.group(1) not in _NOT_ADVERB:
        return False
    # A title's head is its last word ("marketing manager", "nursing assistant"), never a gerund.
    if _GERUND_HEAD.match(value) and len(value.split()) <= 2 and attribute != "job_title":
        return False
    # A known tool in lower case fills its own attribute (database, editor, ...), never `uses`.
    return not (attribute == "uses" and not _NAMED.search(value))


def statement_is_durable(*, attribute: str, value: str, statement: str, sentence: str, speaker: str) -> bool:
    """False for an opinion, an agreement, a statement leaning on the conversation, a passing
    activity, or a statement where the speaker's pronouns did not resolve to one person."""
    if _OPINION.search(sentence) or _INCLUSIVE_WE.search(sentence) or _REPORTED.search(sentence):
        return False
    if len(re.findall(rf"(?<!\w){re.escape(speaker)}(?!\w)", statement)) > 1:
        return False
    # A state read out of a sentence that says it holds for one occasion, or that the statement's
    # reduction took a hypothesis or the past away from ("considered Zoho but stayed with ...", "back
    # then ..."): the sentence states no value held now.
    if attribute not in EVENT_ATTRIBUTES and (
        for_one_occasion(sentence)
        or (hedges(sentence) and not hedges(statement))
        or (tells_the_past(sentence) and not tells_the_past(statement) and not says_now(sentence))
    ):
        return False
    # A typed value ("May 19", "Envoy", "9:15") is no clause: the tests of a clause's words do not apply.
    if attribute in _CLAUSE_ATTRIBUTES and value_kind(value) is None:
        # "now" at the end of a state with a typed value tells the change ("uses Bitwarden now"), not
        # an action of the moment ("heading out now").
        immediate = (
            _IMMEDIATE.search(value)
            and current_value(value, subject=speaker) is None
            and not (_STATE_NOW.match(value) and re.search(r"\bnow\s*[.!]?$", value, re.IGNORECASE))
            and not habit_held(value)
            # ... and so does a way of getting somewhere ("walks to work now")
            and not manner_held(value)
            and not goal_aimed(value)[0]
            # a state become holds from now on ("has gone fully vegan now")
            and not _BECOME.match(value)
        )
        # "these days" or "at the moment" after a state with a typed value tells that it holds now ("rides
        # a Cannondale these days"), as "now" does; without one, a passing state ("is busy these days").
        held = value
        now_said = " ".join(without_now(value).split())
        # ... and so does a way of getting somewhere ("gets to the office by bus these days"), and a state a thing
        # of the speaker's is in ("sport is polo these days"; a mood is none: `state_held`), not the speaker's
        # own ("is sleepy these days" may pass with the day)
        if (
            (_STATE_NOW.match(now_said) and (current_value(now_said, subject=speaker) is not None or habit_held(value)))
            or manner_held(value)
            or (now_said != value and not _SPEAKERS_STATE.match(value) and state_held(now_said) not in _NO_STATE)
        ):
            held = now_said
        if _DEICTIC.search(held) or _DELIBERATION.search(value) or immediate:
            return False
        if _MOOD.match(value) or _TRANSIENT.search(held) or _VAGUE.search(value):
            return False
        if attribute != "constraints" and _MODAL_OR_PRONOUN.search(value):
            return False
        if attribute != "constraints" and _GENERIC_WE.search(sentence):
            return False
        if _HEDGED_THING.search(value):
            return False
        if (
            attribute in {"about", "experiences"}
            and _PROGRESSIVE.match(value)
            # a thing being renamed has its new name from now on ("are renaming the repo to beacon")
            and not renames(value)
            # ... and one said with how often is a habit ("is sleeping 8 hours a night now")
            and not how_often(value)
            and not habit_held(value)
            and not goal_aimed(value)[0]
        ):
            return False
    return True


# --- constraints: "we can't use paid services", "our app must run on Windows 10"

_CONSTRAINT = re.compile(
    r"^(?P<who>i|we|(?:my|our) (?:\w+ ){0,2}?\w+) (?P<modal>can't|cannot|can not|must not|mustn't|must|"
    r"(?:am|are|is|'m|'re) not allowed to|aren't allowed to|isn't allowed to|may not|are required to|"
    r"(?:am|is|are|'m|'re) required to)\s+(?P<rest>\w.+)$",
    re.IGNORECASE,
)
_TECHNICAL = re.compile(
    r"\b(?:run|deploy|use|install|host|support|store|database|server|cloud|api|app|service|windows|linux|mac|"
    r"version|browser|python|java|node)\w*\b",
    re.IGNORECASE,
)


def constraints(sentence: str, *, name: str, said_at: datetime) -> list[Disclosure]:
    """What the speaker must or cannot do (or what their things must do), as they said it."""
    clause = re.sub(r"^(?:so|and|but|also|well|unfortunately|sadly|basically)[, ]+", "", sentence.strip(), flags=re.I)
    clause = clause.replace("’", "'").rstrip(" .!")
    clause = re.sub(r"^(I|we)('m|'re)\b", lambda m: m.group(1) + {"'m": " am", "'re": " are"}[m.group(2)], clause)
    m = _CONSTRAINT.match(clause)
    if (
        not m
        or "?" in sentence
        or re.match(r"(?:wait|believe|stop|help)\b", m.group("rest"), re.IGNORECASE)
        or _DEICTIC.search(m.group("rest"))
        or re.search(r"\b(?:you|your)\b", clause, re.I)
    ):
        return []
    rest_words = re.findall(r"[A-Za-z0-9][\w.+-]*", m.group("rest"))
    if len(rest_words) < 3:
        return []
    statement = resolve_dates(third_person(clause, name), said_at)
    value = statement[len(name) :].strip() if statement.startswith(name) else statement
    value = re.sub(r"^'s\s+", "", value)
    category = FactCategory.TECHNICAL_ENVIRONMENT if _TECHNICAL.search(clause) else FactCategory.OTHER
    return [Disclosure("constraints", value, category, 0.7, statement + ".", cardinality=Cardinality.MULTI)]
