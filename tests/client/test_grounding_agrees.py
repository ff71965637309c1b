"""The client decides which context items an answer used by the server's grounding rule
(evaluation.grounding, DESIGN.md invariant 13), from a copy of its own (the client is a separate
package and cannot import the server). Here the two are held to each other: on the shared table of
cases, on random texts, and word for word in the stopword list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from engram_client import grounding as client_rule
from hypothesis import given, settings
from hypothesis import strategies as st

from core.terms import STOPWORDS, terms
from evaluation import grounding as server_rule

CASES = json.loads((Path(__file__).parent / "grounding_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["why"] for c in CASES])
def test_both_rules_give_the_tables_answer(case: dict[str, object]) -> None:
    item, answer = str(case["item"]), str(case["answer"])
    assert server_rule.restates(item, answer) is case["restates"]
    assert client_rule.restates(item, answer) is case["restates"]


def test_the_stopword_lists_are_the_same() -> None:
    assert client_rule.STOPWORDS == STOPWORDS


def test_the_share_of_terms_needed_is_the_same_for_every_line_length() -> None:
    assert [client_rule.terms_needed(n) for n in range(60)] == [server_rule.terms_needed(n) for n in range(60)]


# Words that exercise the rule: stopwords, the stemmer's suffixes at and around their length limit,
# numbers, labels, fact notes and the characters that cut lines.
_WORDS = st.sampled_from(
    [
        *sorted(STOPWORDS)[::7], "paint", "painting", "paintings", "moved", "moves", "houses", "goes", "sing",
        "things", "Lisbon", "LISBON", "teal", "16", "2023", "3.11", "user:", "assistant:", "(earlier)",
        "summary:", "(6 Dec 2026, confidence 0.90)", "(confidence 1)", ".", "!", "?", "…", "\n", ",", "-",
        "café", "Zürich", "e.g.", ":",
    ]
)  # fmt: skip
_TEXT = st.lists(_WORDS, max_size=30).map(" ".join) | st.text(max_size=80)


@settings(max_examples=400, deadline=None)
@given(item=_TEXT, answer=_TEXT)
def test_both_rules_agree_on_random_texts(item: str, answer: str) -> None:
    assert client_rule.terms(item) == terms(item)
    assert client_rule.item_lines(item) == server_rule.item_lines(item)
    assert client_rule.restates(item, answer) == server_rule.restates(item, answer)
