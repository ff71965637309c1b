"""A syntactic reading of what the speaker says about their own things (issue 42).

The patterns of rules.py read the phrasings the team wrote them for; this module reads any predicate
from a dependency parse (spaCy's English pipeline, en_core_web_sm 3.8.0; docs/consolidation.md says
where the model comes from). For each clause the parse gives:

- its subject: the speaker ("I", "we"), a thing of theirs ("my commute", "our standup", "the
  renovation"), or, when a name is said to be a thing of theirs ("Dana Kim became my manager"), that
  thing, the name being its value;
- its predicate (the verb and the words that lead to the value) and its value: the typed value the
  clause holds in its complement (semantic.predicates.current_value: a name, a count, a date, an
  amount, with the grammar of change saying which is current), or else the complement's head word
  or phrase ("pescatarian", "engaged", "approved");
- whether it states anything at all: a question, a condition or a subordinate clause, a modal or a
  future, a negation, another person's subject or value, an attitude towards a clause ("thinking about
  moving"), an addition and a past narrative are read from the parse (mood, dependency, tense,
  person) and state nothing about the speaker now.

The reading is deterministic: one model file, run on the CPU, no network; the worker loads it once.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from datetime import datetime
from typing import TYPE_CHECKING

from core import lexicon as core_lexicon
from semantic import predicates

from . import lexicon
from .fact_filters import lasting_activity
from .first_person import third_person
from .parsing import parse, with_head_noun
from .typed import HEAD_WORDS, NAMED_KINDS, left_by_leaving, recurring, tells_the_past

if TYPE_CHECKING:
    from spacy.tokens import Doc, Token

_CLAUSE_VERBS = lexicon.sections("clause_verbs.txt")
# Verbs whose clause or infinitive is the speaker's attitude to a value, not the value held.
ATTITUDE = frozenset(_CLAUSE_VERBS.get("attitude", ()))
# Verbs whose infinitive or gerund states the value held: "started using", "got promoted".
ASPECT = frozenset(_CLAUSE_VERBS.get("aspect", ()))
# Verbs of appearance: "looks tidy", "feel calm" say an impression, not a value held.
PERCEPTION = frozenset(_CLAUSE_VERBS.get("perception", ()))
_GRADED = frozenset(lexicon.sections("moment.txt").get("graded", ()))
# How someone feels ("is excited", "feel relieved"): a mood, not a value held.
_MOOD = frozenset(lexicon.sections("moment.txt").get("mood", ()))
# What a value's head may be: a thing, a name, a number, a state (an adjective or a participle).
_VALUE_POS = frozenset({"NOUN", "PROPN", "NUM", "ADJ"})
_PEOPLE = predicates.PEOPLE
_SPEAKER = frozenset({"i", "we"})
_OWN = frozenset({"my", "our", "mine", "ours"})
_COMPLEMENT = frozenset({"attr", "acomp", "dobj", "oprd", "prep", "xcomp", "npadvmod", "advmod", "ccomp", "dative"})
_VALUE_HEAD = frozenset({"attr", "acomp", "dobj", "oprd", "pobj", "xcomp"})
_DROP_IN_VALUE = frozenset({"det", "poss", "punct", "cc", "prep", "case", "aux", "neg", "advmod"})
MAX_VALUE_WORDS = 4


def _said_of(head: Token, tokens: list[Token], value: str) -> str:
    """The clause without the circumstances that do not hold its value ("at the council", "this
    morning", "last month"): what the statement says of the thing, and nothing else. A phrase that
    says which thing it is ("my rent for the studio", "my flight to Tokyo": a preposition of a noun) is
    no circumstance."""
    low = value.lower()
    # The words of the value, where the clause says it: a value said across phrases ("Monday to
    # Friday", "8:30 to 4:30") keeps each of them.
    text = "".join(t.text_with_ws for t in tokens)
    at = text.lower().find(low) if low else -1
    offset = tokens[0].idx if tokens else 0
    in_value = {t.i for t in tokens if at <= t.idx - offset < at + len(low)} if at >= 0 else set[int]()
    dropped = {
        t.i
        for c in tokens
        if c is not head
        and c.dep_ in {"npadvmod", "prep", "tmod"}
        and not (c.dep_ == "prep" and c.head.pos_ in {"NOUN", "PROPN"} and c.head.dep_ in {"nsubj", "nsubjpass"})
        # a name goes on after its preposition ("Lord of the Rings", "House of Blues")
        and not (c.dep_ == "prep" and c.head.pos_ == "PROPN" and c.i == c.head.i + 1)
        and low not in "".join(x.text_with_ws for x in c.subtree).lower()
        and not any(x.i in in_value for x in c.subtree)
        # what stands between the verb and its value says what the value is of ("I go to the gym on
        # Mondays", "I'm in the office on Fridays"): no circumstance
        and not (in_value and c.i > head.i and max(x.i for x in c.subtree) < min(in_value))
        # "these days", "at the moment": it holds now, which is the grammar of change, not a circumstance
        and not predicates.says_now("".join(x.text_with_ws for x in c.subtree))
        and not _value_of(c, in_value)
        for t in c.subtree
    }
    kept = [t for t in tokens if t.i not in dropped]
    return "".join(t.text_with_ws for t in kept).strip(" ,") if kept else ""


def _value_of(prep: Token, in_value: set[int]) -> bool:
    """Whether a preposition's phrase right after the value says what the value is of ("is at A2 in French",
    "is a 1600 in chess"): its noun named bare, no article or possessive, and no time ("in March", "on
    Fridays": circumstances)."""
    if prep.dep_ != "prep" or not in_value or prep.i != max(in_value) + 1:
        return False
    said = list(prep.subtree)
    nouns = [t for t in said if t.dep_ == "pobj"]
    text = "".join(t.text_with_ws for t in said)
    return (
        len(said) == 2
        and bool(nouns)
        and nouns[0].pos_ in {"NOUN", "PROPN"}
        and not any(t.kind in {"date", "time", "frequency"} for t in predicates.typed_spans(text))
    )


@dataclasses.dataclass(frozen=True)
class Statement:
    """One clause in which the speaker states a value of theirs."""

    clause: str  # the clause as said
    subject: str  # "I", "my commute", "my manager"
    predicate: str  # the verb's lemma and the words that lead to the value: "take", "be", "move to"
    value: str  # the typed value, or the complement's head phrase
    typed: bool  # the value is a typed value (semantic.predicates)
    said: str = ""  # the clause without the circumstances that do not hold the value


def _is_question(doc: Doc) -> bool:
    if doc.text.rstrip().endswith("?"):
        return True
    first = next((t for t in doc if not t.is_punct), None)
    if first is None:
        return False
    if first.tag_ in {"WDT", "WP", "WP$", "WRB"} and first.head.dep_ == "ROOT":
        return True
    # Said by inversion without its mark ("Are my hands stiff after a day"): a verb opens the sentence
    # before the subject of the clause it heads.
    clause = first if first.dep_ == "ROOT" else first.head
    subject = _subject(clause) if first.pos_ == "AUX" else None
    return subject is not None and subject.i > first.i


def _clause_heads(doc: Doc) -> list[Token]:
    """The clauses the sentence asserts: its root, and verbs joined to it that have a subject of their
    own ("..., so I'm single now") or share the root's with a word that says the value is new ("I left
    Stripe and now work at Plaid"); subordinate clauses ("if", "when", "because") assert nothing."""
    heads: list[Token] = []
    for token in doc:
        if token.dep_ == "ROOT" or (
            token.dep_ in {"conj", "parataxis", "ccomp"}
            and token.head.dep_ == "ROOT"
            and (
                any(c.dep_ in {"nsubj", "nsubjpass"} for c in token.children)
                or (
                    token.dep_ == "conj"
                    and any(c.dep_ == "advmod" and predicates.says_now(c.text) for c in token.children)
                )
            )
            and not (token.dep_ == "ccomp" and token.head.lemma_ in ATTITUDE)
        ):
            heads.append(token)
    return heads


def _subject(head: Token) -> Token | None:
    for child in head.children:
        if child.dep_ in {"nsubj", "nsubjpass", "expl"}:
            return child
    if head.dep_ == "conj":
        return _subject(head.head)
    return None


def _owner(noun: Token) -> str | None:
    """Whose thing `noun` is: "own" for my/our, "other" for anyone else's, None when unsaid."""
    for child in noun.children:
        if child.dep_ == "poss":
            return "own" if child.lower_ in _OWN else "other"
    return None


def _span_text(tokens: list[Token]) -> str:
    if not tokens:
        return ""
    doc = tokens[0].doc
    return doc[min(t.i for t in tokens) : max(t.i for t in tokens) + 1].text


def _head_phrase(token: Token) -> str:
    """The complement's phrase without its determiners, possessives, prepositions or modifiers
    of manner: "a data analyst" -> "data analyst", "fully vegan" -> "vegan"."""
    if token.dep_ == "prep":
        token = next((c for c in token.children if c.dep_ in {"pobj", "pcomp"}), token)
    keep = [
        t
        for t in token.subtree
        if t.i <= token.i and t.dep_ not in _DROP_IN_VALUE and not t.is_punct and t.tag_ not in {"PRP$", "DT"}
    ]
    # Contiguous words ending at the head ("plant-based" is one), modifiers before it, nothing after.
    run: list[Token] = []
    for t in reversed(keep):
        if run and not all(x.tag_ == "HYPH" for x in t.doc[t.i + 1 : run[0].i]):
            break
        run.insert(0, t)
    return _span_text(run)


def _bare_state(prep: Token) -> bool:
    """A preposition whose object is one bare common noun ("in progress", "on hold")."""
    objects = [c for c in prep.children if c.dep_ == "pobj"]
    return (
        len(objects) == 1
        and objects[0].tag_ == "NN"
        and not any(c.dep_ in {"det", "poss", "amod", "compound", "nummod"} for c in objects[0].children)
    )


def _holds_typed(token: Token, speaker: str) -> bool:
    """The phrase of `token` names a typed value ("for Friday", "at 10am")."""
    return bool(predicates.typed_spans(_span_text(list(token.subtree)), subject=speaker))


def _opens(subject: Token, head: Token | None = None) -> bool:
    """The subject opens its sentence, or the clause joined to it ("..., so the team is 10 people
    now"): before it stand at most a lead-in ("By the way, ...", "Update: ..."), adverbs, or
    circumstances ("Since March, ...", "Next week ..."); not a log line's words."""
    start = head.left_edge.i if head is not None and head.dep_ != "ROOT" else 0
    before = [t for t in subject.doc[start : subject.left_edge.i] if not t.is_space and not t.is_punct]
    if not before or subject.doc[subject.left_edge.i - 1].text in {",", ":"}:
        return True
    lead = {"advmod", "intj", "cc", "prep", "npadvmod", "advcl", "mark", "tmod"}
    return all(any(a.dep_ in lead for a in (t, *t.ancestors) if a.i < subject.left_edge.i) for t in before)


def _denied_speaker(token: Token) -> bool:
    """ "..., not us", "not mine": the clause says the thing is not the speaker's."""
    if token.lower_ not in {"us", "me", "mine", "ours", "we", "i"}:
        return False
    before = token.doc[token.i - 1] if token.i > 0 else None
    return any(c.dep_ == "neg" for c in token.children) or (before is not None and before.lower_ == "not")


def _negated(head: Token) -> bool:
    return any(c.dep_ == "neg" or c.lower_ in {"never", "no"} for c in head.children) or any(
        c.dep_ == "det" and c.lower_ == "no" for t in head.children for c in t.children
    )


def _states(head: Token, speaker: str) -> bool:
    """Whether the clause headed by `head` states something now, by its grammar."""
    if head.dep_ in {"advcl", "relcl", "acl"} or any(c.dep_ == "mark" for c in head.children):
        return False
    if _negated(head):
        return False
    aux = [c for c in head.children if c.dep_ in {"aux", "auxpass"}]
    if any(a.tag_ == "MD" for a in aux):  # would, could, might, will, 'll, should, can, must
        return False
    # "I did take Seraphim to the park": the past said with emphasis, an event.
    if any(a.lemma_ == "do" and a.tag_ == "VBD" for a in aux):
        return False
    # "going to", "used to": a plan or the past.
    if (
        head.lemma_ in {"go", "use"}
        and head.tag_ in {"VBG", "VBD", "VBN"}
        and any(c.dep_ == "xcomp" for c in head.children)
    ):
        return False
    if head.lemma_ in ATTITUDE:
        return False
    # A past copula tells a past state ("I was single then"); a past change ("moved", "got") tells
    # the state it made.
    return not (
        head.lemma_ == "be"
        and head.tag_ == "VBD"
        and not any(c.dep_ == "acomp" and c.tag_ == "VBN" for c in head.children)
    )


def _graded(head: Token, value: Token) -> bool:
    """An adjective or a participle said with a degree ("is incredibly lush", "so friendly") or
    compared ("way calmer"): an evaluation, not a state held."""
    if value.tag_ in {"JJR", "JJS"}:
        return True
    return any(c.dep_ == "advmod" and c.i < value.i and c.lower_ in _GRADED for t in {head, value} for c in t.children)


def _names_a_value(head: Token, value: Token) -> bool:
    """Whether the complement's head can be a value: a thing or a state, not an action ("keeps
    forgetting", "knows how to open"), an adverb, an evaluation or an impression ("looks tidy")."""
    # A participle is a state: "got approved", "is pending" (a present one only after the copula).
    if value.pos_ not in _VALUE_POS and not (value.tag_ == "VBN" or (value.tag_ == "VBG" and value.dep_ == "acomp")):
        return False
    return not (
        (value.pos_ == "ADJ" or value.tag_ == "VBN")
        and (head.lemma_ in PERCEPTION or value.lower_ in _MOOD or _graded(head, value))
    )


def _complements(head: Token) -> list[Token]:
    out = [c for c in head.children if c.dep_ in _COMPLEMENT and c.i > head.i]
    # "started using Obsidian", "got promoted": the value is read in the verb it governs.
    for c in list(out):
        if c.dep_ == "xcomp" and head.lemma_ in ASPECT:
            out.extend(x for x in c.children if x.dep_ in _COMPLEMENT and x.i > c.i)
    return out


def _own_thing_in(tokens: list[Token]) -> Token | None:
    """A thing of the speaker's named in the complement: "my manager" in "Dana became my manager"."""
    for t in tokens:
        for x in t.subtree:
            if x.pos_ in {"NOUN", "PROPN"} and _owner(x) == "own":
                return x
    return None


_POINTED_BACK = frozenset({"it", "this", "that", "them", "these", "those"})
_OWN_CLAUSE = frozenset({"xcomp", "ccomp", "advcl", "relcl", "acl", "pcomp"})


def _addressed(clause: str, start: int, end: int) -> bool:
    """A name set off by a comma at the clause's edge is said to the listener ("I get it, Jon.", "Jon,
    great news ..."), not a value."""
    before, after = clause[:start].rstrip(), clause[end:].strip(" .!")
    return (before.endswith(",") and not after) or (not before and clause[end:].lstrip().startswith(","))


def _another_complement(complements: list[Token], span: predicates.Typed, *, offset: int) -> bool:
    """Whether the clause completes its verb with a thing other than `span`: how often a habit is done
    ("drinks coffee every morning", "commutes by train every day") is then no value of it."""
    for c in complements:
        words = list(c.subtree)
        start, end = words[0].idx - offset, words[-1].idx + len(words[-1]) - offset
        if start < span.end and span.start < end:
            continue
        if c.dep_ in _VALUE_HEAD or (c.dep_ == "prep" and any(x.dep_ == "pobj" for x in c.children)):
            return True
    return False


@functools.cache
def _since() -> re.Pattern[str]:
    opens = (
        *predicates.section("change.txt", "from then on"),
        *predicates.section("change.txt", "circumstance of time"),
    )
    return re.compile(rf"(?:{core_lexicon.alternation(opens)})\b", re.IGNORECASE)


def _since_when(clause: str, span: predicates.Typed) -> bool:
    """Whether the typed value says since when the clause holds ("has been dairy-free since March")."""
    held = predicates.without_when(clause)
    return span.start >= len(held) and bool(_since().match(clause[len(held) :].strip()))


def _bare_object(complements: list[Token]) -> bool:
    """Whether the verb's object is named bare, as an activity is ("plays squash", "does yoga")."""
    return any(
        c.dep_ == "dobj" and c.pos_ == "NOUN" and not any(x.dep_ in {"det", "poss"} for x in c.children)
        for c in complements
    )


def _tokens_of(tokens: list[Token], start: int, end: int) -> list[Token]:
    return [t for t in tokens if start <= t.idx < end]


def _names_the_thing(named: list[Token], head: Token) -> bool:
    """Whether a typed value is what the complement names: not a name that only says which thing the
    complement's noun is ("the Lisbon vibe": a modifier of a common noun), nor the object of a feeling
    or a quality ("sorry about Max", "excited about Lisbon": reached through an adjective)."""
    if not named:
        return False
    last = max(named, key=lambda t: t.i)
    if last.dep_ in {"compound", "amod", "nmod"} and last.head.pos_ == "NOUN" and last.head not in named:
        return False
    between = [last, *(a for a in last.ancestors if a.i != head.i and head in a.ancestors)]
    # ... nor a value inside a clause of its own ("know to save more often", "blessed to travel to Bali",
    # "a piece called Finding Freedom"), unless the verb says the value is held ("started using Obsidian").
    if any(a.dep_ in _OWN_CLAUSE and not (a.dep_ == "xcomp" and a.head.lemma_ in ASPECT) for a in between):
        return False
    return not any(a.pos_ == "ADJ" and a.dep_ in {"acomp", "amod"} for a in between)


def clause_bounds(head: Token, first: int, speaker: str) -> tuple[int, int]:
    """The token span of the clause `head` asserts, whose subject (or, without one, whose verb) is at
    `first`: the clause is its subject, its verb and what completes it; what stands before the subject
    ("Birthday weekend, so ...", "Finally, ..."), clauses joined to it and subordinate clauses are not.
    An adverb of change before the subject stays ("so now I have three kids"): it says the value is new."""
    doc = head.doc
    cut = {
        c.i
        for c in head.children
        if c.dep_ in {"conj", "cc", "advcl", "parataxis", "mark", "punct"}
        or (
            c.i < first
            and c.dep_ not in {"aux", "auxpass", "neg", "nsubj", "nsubjpass"}
            and not (c.dep_ == "advmod" and predicates.says_change(c.text, subject=speaker))
        )
    }
    tokens = [t for t in head.subtree if not any(a.i in cut for a in (t, *t.ancestors) if a.i != head.i)]
    start = min(t.i for t in tokens)
    end = max(t.i for t in tokens) + 1
    while end > start and doc[end - 1].is_punct and not doc[end - 1].is_quote and not doc[end - 1].is_right_punct:
        end -= 1
    # ... nor a predeterminer ("All our infrastructure"): it says how much of the thing, not which
    while start < end and (doc[start].is_punct or doc[start].dep_ in {"cc", "intj"} or doc[start].tag_ == "PDT"):
        start += 1
    return start, end


def read_clause(head: Token, speaker: str) -> Statement | None:
    subject = _subject(head)
    if subject is None or subject.dep_ == "expl" or not _states(head, speaker):
        return None
    # A subject after its verb is no statement of it ("Here are my hands after a day", "So are my kids"),
    # nor a name set off by a comma, said to the listener ("Hey John, great news - I'm ...").
    nxt = subject.doc[subject.i + 1] if subject.i + 1 < len(subject.doc) else None
    if subject.i > head.i or (subject.pos_ == "PROPN" and nxt is not None and nxt.text == ","):
        return None
    doc = head.doc
    start, end = clause_bounds(head, subject.i, speaker)
    clause = doc[start:end].text
    tokens = list(doc[start:end])
    complements = _complements(head)
    # "My loan got approved", "the renovation is finished": the participle is the state.
    passive = head.tag_ == "VBN" and any(c.dep_ == "auxpass" for c in head.children)
    if not complements and not passive:
        return None
    low = subject.lower_
    own_subject = low in _SPEAKER or (subject.pos_ in {"NOUN", "PROPN"} and _owner(subject) == "own")
    # "the renovation", or a thing named bare ("Billing moved to Paddle"): in the speaker's own turn,
    # a thing of theirs.
    # It opens the clause (a log line's noun deep in the sentence is none), and a bare one is written in
    # lower case (a capital is as likely a name: "Casey works at ...").
    the_thing = (
        subject.pos_ == "NOUN"
        and _opens(subject, head)
        and (
            any(c.dep_ == "det" and c.lower_ == "the" for c in subject.children)
            or (not any(c.dep_ in {"det", "poss"} for c in subject.children) and subject.text.islower())
        )
    )
    # "Coach cut my swim practice to 60 minutes": a change someone makes to a thing of the speaker's.
    changed_own = next(
        (
            c
            for c in complements
            if c.dep_ == "dobj" and _owner(c) == "own" and predicates.says_change(clause, subject=speaker)
        ),
        None,
    )
    said_by = subject
    if changed_own is not None and not own_subject:
        subject, own_subject, the_thing = changed_own, True, False
        complements = [c for c in complements if c is not changed_own]
    # "Dana became my manager", "Tacos are my favourite food": the subject names what the speaker's
    # thing is; "Hyperion replaced Dune as my favourite book" says so with a change.
    named_as_own = None
    if not own_subject and subject.pos_ in {"PROPN", "NOUN"} and not the_thing:
        if head.lemma_ in {"be", "become"}:
            named_as_own = _own_thing_in(complements)
        elif predicates.says_change(head.text, subject=speaker):
            named_as_own = _own_thing_in([c for c in complements if c.dep_ == "prep" and c.lower_ == "as"])
    if not (own_subject or the_thing or named_as_own is not None):
        return None
    # A simple past that tells no change is an event ("I went to a pottery class"), not a state.
    # So is a perfect one ("I've been to Oslo"), unless it tells a change or ends in a state ("I've
    # gone vegan").
    perfect = any(c.dep_ == "aux" and c.lemma_ == "have" for c in head.children)
    if (
        (head.tag_ == "VBD" or (perfect and not any(c.dep_ == "acomp" for c in complements)))
        and not passive
        and not predicates.says_change(clause, subject=speaker)
    ):
        return None
    # "We went up to the Rocky Mountains": the speaker's going somewhere is a trip; a thing's ("rent went
    # up") or a state's ("went vegan") is a change.
    if (
        head.lemma_ == "go"
        and head.tag_ in {"VBD", "VBN"}
        and subject.lower_ in _SPEAKER
        and not any(c.dep_ == "acomp" for c in complements)
    ):
        return None
    if subject.lemma_.lower() in _PEOPLE or subject.lower_ in _PEOPLE:
        return None
    if the_thing and subject.tag_ == "NNPS":
        return None
    text_checks = clause
    if (
        predicates.hedges(text_checks)
        or predicates.adds(text_checks)
        or tells_the_past(text_checks, None)
        # "They raised my rent to ...": someone unnamed changed the speaker's thing; still theirs
        or (
            re.search(r"\b(?:you|your|he|she|his|her|him|they|their|them)\b", clause, re.I)
            and not (subject is changed_own and said_by.lower_ == "they")
        )
        or any(_denied_speaker(t) for t in tokens)
    ):
        return None
    for c in complements:
        for t in c.subtree:
            if t.dep_ == "poss" and t.lower_ not in _OWN and t.head.i >= c.i:
                return None
    if named_as_own is not None:
        name = _span_text([t for t in subject.subtree if t.dep_ not in {"det", "punct"}])
        thing = _span_text([t for t in named_as_own.subtree if t.i <= named_as_own.i])
        # A common noun whose capital only opens the sentence ("Pets are the best for ...") is no name.
        a_name = bool(predicates.value_kind(name)) and not (subject.left_edge.i == 0 and subject.pos_ == "NOUN")
        return Statement(clause, thing, head.lemma_, name, a_name)
    # "My loan got approved by the bank", "... approved at the council": a phrase after the participle
    # that holds no typed value and leads nowhere ("to", "into") is a circumstance of the state.
    if passive and not any(
        c.dep_ in _VALUE_HEAD or (c.dep_ == "prep" and (c.lower_ in {"to", "into"} or _holds_typed(c, speaker)))
        for c in complements
    ):
        if _graded(head, head) or head.lower_ in _MOOD:
            return None
        thing = _span_text([t for t in subject.subtree if t.i <= subject.i])
        # a particle belongs to its participle: "wrapped up", "signed off"
        state = " ".join([head.text, *(c.text for c in head.children if c.dep_ == "prt")])
        return Statement(clause, thing, "be", state, False, _said_of(head, tokens, state))
    # The value lies in the complement: a name in the subject ("my 1:1 with Dana") is none. Where the
    # only complement was the speaker's thing itself ("the landlord raised my rent"), no value is said.
    if not complements:
        return None
    # "holds it for 30 seconds", "working on it": the clause leans on a thing said before.
    if any(t.lower_ in _POINTED_BACK and t.dep_ in {"dobj", "pobj", "attr"} for c in complements for t in c.subtree):
        return None
    region_start = min(t.i for c in complements for t in c.subtree)
    region_char = doc[region_start].idx - doc[start].idx
    typed = [
        t
        for t in predicates.typed_spans(clause, subject=speaker)
        if t.start >= region_char
        and t.text.lower() not in _SPEAKER
        and not _addressed(clause, t.start, t.end)
        # how often, or since when, a thing the clause completes its verb with is held is no value of it
        # ("drinks coffee every morning", "has been dairy-free since March"); a day said as recurring, of an
        # activity named bare ("plays squash every Thursday"), not of a particular thing ("picks up my
        # daughter on Mondays": when is the value)
        and not (
            (t.kind == "frequency" or _since_when(clause, t) or (recurring(clause, t) and _bare_object(complements)))
            and _another_complement(complements, t, offset=doc[start].idx)
        )
    ]
    predicate = " ".join([head.lemma_, *(c.lower_ for c in head.children if c.dep_ == "prt")])
    thing = "I" if low in _SPEAKER else _span_text([t for t in subject.subtree if start <= t.i <= subject.i])
    if typed:
        current = predicates.current_value(clause, subject=speaker)
        held = (
            current
            if current is not None and (current.start, current.end) in {(t.start, t.end) for t in typed}
            else None
        )
        if held is None:
            left = {(t.start, t.end) for t in predicates.left_values(clause, subject=speaker)}
            held = next((t for t in typed if (t.start, t.end) not in left), None)
        # what a verb of leaving leaves is no value held ("quit my job at Fernwood Analytics")
        if held is None or left_by_leaving(clause, held):
            return None
        named = _tokens_of(tokens, held.start + doc[start].idx, held.end + doc[start].idx)
        value = (
            clause[held.start : with_head_noun(clause, held.start, held.end, most=HEAD_WORDS)]
            if held.kind in NAMED_KINDS
            else held.text
        )
        return Statement(clause, thing, predicate, value, _names_the_thing(named, head), _said_of(head, tokens, value))
    # "changed the default branch to main": with a verb of change, the value follows "to" or "into".
    towards = [c for c in complements if c.dep_ == "prep" and c.lower_ in {"to", "into"}]
    main = (towards[0] if towards and predicates.says_change(clause, subject=speaker) else None) or next(
        (c for c in complements if c.dep_ in _VALUE_HEAD or c.dep_ == "prep"), None
    )
    if main is None:
        return None
    # "is looking for a place", "is having a blast": an activity in progress, unless a lasting one.
    if head.tag_ == "VBG" and any(c.dep_ == "aux" and c.lemma_ == "be" for c in head.children):
        if not lasting_activity(head.lower_):
            return None
    value_head = next((c for c in main.children if c.dep_ in {"pobj", "pcomp"}), main) if main.dep_ == "prep" else main
    if not _names_a_value(head, value_head):
        return None
    phrase = _head_phrase(main)
    # "is in progress", "is on hold", "are on track": a copula with a preposition and a bare noun says
    # a state, the preposition part of it; "is in the office" names a place, the noun its value.
    if main.dep_ == "prep" and head.lemma_ == "be" and _bare_state(main):
        phrase = f"{main.lower_} {phrase}"
    words = phrase.split()
    if not words or len(words) > MAX_VALUE_WORDS or all(w.lower() in predicates.function_words() for w in words):
        return None
    if any(t.tag_ in {"PRP", "DT", "WDT", "WP"} for t in main.subtree if t.text in words):
        return None
    if main.dep_ == "prep":
        predicate = f"{predicate} {main.lower_}"
    return Statement(clause, thing, predicate, phrase, False, _said_of(head, tokens, phrase))


def statements(sentence: str, *, speaker: str) -> list[Statement]:
    """The clauses of `sentence` in which the speaker states a value of theirs (module docstring)."""
    text = sentence.strip()
    if not text or len(text) > 300:
        return []
    doc = parse(text)
    if _is_question(doc):
        return []
    out = []
    for head in _clause_heads(doc):
        found = read_clause(head, speaker)
        if found is not None:
            out.append(found)
    return out


def facts(sentence: str, *, speaker: str, said_at: datetime | None, typed_only: bool = False) -> list[tuple[str, str]]:
    """(value, statement) for each clause of `sentence` that states a value of the speaker's, the
    statement said of the speaker in the third person; with `typed_only`, only the clauses whose value is
    a typed value the complement names (a name, a version, a count, a date, a time, an amount)."""
    out = []
    for found in statements(sentence, speaker=speaker):
        if tells_the_past(found.clause, said_at) or (typed_only and not found.typed):
            continue
        said = found.said or found.clause
        if found.subject == "I" and not re.search(r"(?<![\w'’])(?:I|[Ww]e)(?!\w)", said):
            # a verb that shares the speaker with the clause it is joined to ("... and now work at Plaid")
            said = f"I {said[0].lower()}{said[1:]}"
        elif found.subject != "I" and not found.subject.lower().startswith(("my ", "our ")):
            # A thing of the speaker's named with "the" or bare: said as theirs.
            thing = re.sub(r"^the\s+", "", said, flags=re.I)
            said = f"{speaker}'s {thing[0].lower() + thing[1:]}"
        opened = said if said.startswith(speaker) else said[0].upper() + said[1:]
        statement = third_person(opened, speaker).rstrip(" .!") + "."
        out.append((found.value, statement))
    return out


# What another reading of the speaker's clauses (consolidation.extractors.latent) shares with this one.
is_question = _is_question
clause_heads = _clause_heads
states = _states
subject_of = _subject
