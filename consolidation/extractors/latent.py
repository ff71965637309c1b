"""Readings that stand only as updates: what the speaker says of a value of theirs that no reader made a
fact of, kept only where it replaces a value they already hold.

The readers (rules, self-disclosure, the parse) make a fact of a statement only when its grammar says
what is stated and which word is the value. Many statements of a new value are said in ways none of them
reads ("Heads up - the standup is 10:15 from next week", "Got a Civic in the end, traded the Corolla"),
while what they replace was read when it was first said. Read against what the subject already holds,
such a statement is easy to place: the same predicate with another value of the same type. So every
asserted clause of the speaker's that names a typed value gives a *latent* candidate (the clause in the
third person, its current value); the merge keeps one only where it supersedes an active fact of the
subject through the general mechanism (semantic.predicates.judge, docs/consolidation.md), and drops it
otherwise (consolidation.services). A latent candidate that replaces nothing is never stored, so a
statement read this way adds no fact that a reader did not find: it only closes a value and holds the new
one.

What states nothing now is left out by the parse, as the parse reader does (consolidation.extractors.
reading): a question, a clause that is subordinate, negated, modal or under an attitude verb, a past
copula, a subject that is neither the speaker nor a thing of theirs. What the judge reads on the
statement (an addition, a hypothesis, one occasion, the past, someone else's value) it reads on these too.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from semantic import predicates

from . import lexicon, reading
from .first_person import third_person
from .parsing import parse, with_head_noun
from .typed import HEAD_WORDS, NAMED_KINDS

if TYPE_CHECKING:
    from spacy.tokens import Token

_OTHERS = re.compile(r"\b(?:you|your|he|she|his|her|him|they|their|them)\b", re.I)


def _clause(head: Token, subject: Token | None, speaker: str) -> tuple[str, int]:
    """The clause `head` asserts (reading.clause_bounds), and where its verb ends in it: a value is said
    after the verb, in the complement."""
    doc = head.doc
    start, end = reading.clause_bounds(head, subject.i if subject is not None else head.i, speaker)
    return doc[start:end].text, head.idx + len(head.text) - doc[start].idx


def _the_speakers(head: Token, subject: Token | None) -> bool:
    """The clause is said of the speaker: "I", "we", a thing of theirs ("my commute", "the standup"), or
    no subject at all ("Switched to Fish last week")."""
    if subject is None:
        # an elided subject ("Switched to Fish"), not an imperative said to the listener ("Switch to Fish")
        return head.tag_ in {"VBD", "VBN", "VBZ"}
    low = subject.lower_
    if low in {"i", "we"}:
        return True
    if subject.pos_ != "NOUN" or low in predicates.PEOPLE or subject.lemma_.lower() in predicates.PEOPLE:
        return False
    owners = [c.lower_ for c in subject.children if c.dep_ == "poss"]
    if owners:
        return all(o in {"my", "our"} for o in owners)
    return any(c.dep_ == "det" and c.lower_ == "the" for c in subject.children) or subject.text.islower()


# Where a typed sentence joins its parts without a conjunction ("..., the venue fell through", " - ", ": ").
_PART_BREAK = re.compile(r"\s*(?:[,;:]|\s[-–—])\s+")


@functools.cache
def _discourse() -> re.Pattern[str]:
    words = lexicon.alternation("discourse.txt")
    return re.compile(rf"^(?:(?:{words})\b[\s,]*)+", re.IGNORECASE)


def readings(sentence: str, *, speaker: str) -> list[tuple[str, str]]:
    """(value, statement) for each clause of `sentence` that asserts a typed value of the speaker's now;
    the statement said of the speaker in the third person. Where the whole sentence gives none, each of
    its parts joined without a conjunction is read on its own: the parse of a typed sentence often makes
    one part subordinate to the other ("Okay so the offsite is in Porto now, the venue fell through")."""
    text = sentence.strip()
    if not text or len(text) > 300:
        return []
    # What the whole sentence says of its time, its mood or its reach holds for its clauses, lead-ins
    # included ("Back in 2019 I lived in Lisbon", "If the budget allows, ...", "For this week only, the
    # standup is at 11", "Also, ...").
    if (
        (predicates.tells_the_past(text) and not predicates.says_now(text))
        or predicates.hedges(text)
        or predicates.for_one_occasion(text)
        or predicates.adds(text)
        # ... and whom it is about: a clause read alone loses "My brother moved, the new place is in Dublin"
        or predicates.someone_elses(text, subject=speaker)
    ):
        return []
    # Only a sentence that names a typed value is parsed: the parse is most of the cost.
    if text.rstrip().endswith("?") or not predicates.typed_spans(text, subject=speaker):
        return []
    found = _read(text, speaker)
    if found:
        return found
    parts = [_discourse().sub("", p).strip() for p in _PART_BREAK.split(text)]
    if len(parts) < 2:
        return []
    return [r for p in parts if len(p.split()) > 2 for r in _read(p, speaker)]


_MOOD = frozenset(lexicon.sections("moment.txt").get("mood", ()))


def _holds_now(head: Token, subject: Token | None) -> bool:
    """What the clause's verb says holds, as the parse reader reads it: not an activity in progress
    ("is currently playing X"), not a mood ("is excited to
    watch X", "is hooked on X"), not the speaker's going somewhere ("went up to the Rocky Mountains")."""
    # Even a lasting one: what a lasting progressive holds ("is working at X", "is living in Y") the readers
    # read already; one they did not is as likely what the speaker is busy with ("is currently playing X").
    if head.tag_ == "VBG" and any(c.dep_ == "aux" and c.lemma_ == "be" for c in head.children):
        return False
    if head.lower_ in _MOOD or any(c.dep_ == "acomp" and c.lower_ in _MOOD for c in head.children):
        return False
    going = head.lemma_ == "go" and head.tag_ in {"VBD", "VBN"}
    return not (going and (subject is None or subject.lower_ in {"i", "we"}))


def _offset(head: Token, clause: str) -> int:
    """Where `clause` (cut from the head's sentence) starts in the parsed text."""
    return head.doc.text.find(clause)


def _in_an_infinitive(head: Token, at: int) -> bool:
    """The value at character `at` is the object of an infinitive the clause governs ("dying to create a
    game like X", "wants to try X"): what the speaker means to do, not a value held. An aspect verb passes
    it through ("started using X")."""
    token = next((t for t in head.doc if t.idx <= at < t.idx + len(t.text)), None)
    while token is not None and token.i != head.i:
        if token.pos_ in {"VERB", "AUX"} and any(c.dep_ == "aux" and c.lower_ == "to" for c in token.children):
            return token.head.lemma_ not in reading.ASPECT
        token = token.head if token.head.i != token.i else None
    return False


def _read(text: str, speaker: str) -> list[tuple[str, str]]:
    doc = parse(text)
    if reading.is_question(doc):
        return []
    out = []
    for head in reading.clause_heads(doc):
        if not reading.states(head, speaker):
            continue
        subject = reading.subject_of(head)
        if subject is not None and subject.dep_ == "expl":
            continue
        if not _the_speakers(head, subject) or not _holds_now(head, subject):
            continue
        clause, verb_end = _clause(head, subject, speaker)
        if not clause or _OTHERS.search(clause) or predicates.denies(clause.replace("no longer", "")):
            continue
        # A simple past or a perfect that tells no change is an event ("I lived in Lisbon", "I've been to
        # Oslo"), as the parse reader reads it.
        perfect = any(c.dep_ == "aux" and c.lemma_ == "have" for c in head.children)
        if (head.tag_ == "VBD" or perfect) and not predicates.says_change(clause, subject=speaker):
            continue
        held = predicates.current_value(clause, subject=speaker)
        if held is None or held.start < verb_end or _in_an_infinitive(head, held.start + _offset(head, clause)):
            continue
        value = (
            clause[held.start : with_head_noun(clause, held.start, held.end, most=HEAD_WORDS)]
            if held.kind in NAMED_KINDS
            else held.text
        )
        if subject is None:
            clause = f"I {clause[0].lower()}{clause[1:]}"
        elif subject.lower_ not in {"i", "we"} and not clause.lower().startswith(("my ", "our ")):
            thing = re.sub(r"^the\s+", "", clause, flags=re.I)
            clause = f"{speaker}'s {thing[0].lower()}{thing[1:]}"
        opened = clause if clause.startswith(speaker) else clause[0].upper() + clause[1:]
        statement = third_person(opened, speaker).rstrip(" .!") + "."
        out.append((value.strip(" .,"), statement))
    return out
