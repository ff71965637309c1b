"""Latent readings (issue 42): a statement of a new value that no reader makes a fact of, read against what
the subject already holds. Every asserted clause of the speaker's that names a typed value is a candidate
the merge keeps only where it supersedes an active fact (consolidation.extractors.latent); parts of a typed
sentence joined without a conjunction are read on their own when the whole gives nothing. Pairs of this
file's own, subject `lantern-3391`, through the public API with the real MiniLM and the reader off."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.update_pairs import Said
from consolidation.extractors import latent
from tests.consolidation.supersession import assert_closed, assert_kept, said_pairs

SUBJECT = "lantern-3391"

# fmt: off
CLOSED = (
    Said.current("backend language", "The backend is written in Ruby.",
                 "Big rewrite done - the backend is written in Go now.", "Ruby", "Go"),
    Said.current("offsite city", "The offsite is in Lisbon.",
                 "Okay so the offsite is in Porto now, the venue fell through.", "Lisbon", "Porto"),
    Said.current("invoicing tool", "Our invoices go through FreshBooks.",
                 "Accounting pushed us, so invoices go through Xero now.", "FreshBooks", "Xero"),
)

KEPT = (
    Said.current("a named slot beside", "Northwind Bank is my employer.",
                 "Heads up, I'm on Ubuntu 24.04 now instead of macOS Sonoma.", "Northwind Bank", "Ubuntu 24.04"),
    Said.current("another team's builds", "Our builds run on Jenkins.", "The mobile team's builds run on Bitrise.",
                 "Jenkins", "Bitrise"),
    Said.current("one occasion", "The design review is on Thursday at 14:00.",
                 "Just this week, the design review is on Friday at 10:00.", "Thursday at 14:00", "Friday at 10:00"),
    Said.current("a hypothesis", "Our invoices go through FreshBooks.",
                 "If accounting insists, invoices go through Xero.", "FreshBooks", "Xero"),
    Said.current("the past", "I bank with Barclays.", "Back in college I banked with Lloyds.", "Barclays", "Lloyds"),
    Said.current("an addition", "Our servers are in Frankfurt.", "Also, some servers are in Dublin now.",
                 "Frankfurt", "Dublin"),
    Said.current("another class", "My pottery class is on Mondays.", "My yoga class moved to Thursdays.",
                 "Mondays", "Thursdays"),
)
# fmt: on


@said_pairs(CLOSED)
def test_a_new_value_no_reader_reads_closes_the_value_held(
    api_a: Any, end_session: Callable[[str], None], pair: Said
) -> None:
    assert_closed(api_a, end_session, pair, SUBJECT)


@said_pairs(KEPT)
def test_another_thing_one_occasion_a_hypothesis_the_past_or_an_addition_keeps_it(
    api_a: Any, end_session: Callable[[str], None], pair: Said
) -> None:
    assert_kept(api_a, end_session, pair, SUBJECT)


@pytest.mark.django_db
@pytest.mark.usefixtures("minilm")
def test_a_latent_reading_that_replaces_nothing_is_never_stored(api_a: Any, end_session: Callable[[str], None]) -> None:
    said = "Okay so the offsite is in Porto now, the venue fell through."
    assert latent.readings(said, speaker=SUBJECT), "the sentence is read latently"
    episode = {"subject": SUBJECT, "session": "s-only", "kind": "message", "role": "user", "content": said}
    assert api_a.post("/v1/episodes", {"episodes": [episode]}, format="json").status_code in (200, 201)
    end_session("s-only")
    facts = api_a.get(f"/v1/facts?subject={SUBJECT}&status=any").json()
    rows = facts.get("results", facts) if isinstance(facts, dict) else facts
    assert not [f for f in rows if "Porto" in f["value"]], rows


@pytest.mark.parametrize(
    ("sentence", "value"),
    [
        ("Big rewrite done - the backend is written in Go now.", "Go"),
        ("Accounting pushed us, so invoices go through Xero now.", "Xero"),
        ("Heads up, the standup is at 10:15 now.", "10:15"),
        ("Switched to Fish last week.", "Fish"),
    ],
    ids=lambda v: v,
)
def test_the_clause_is_read_with_its_typed_value(sentence: str, value: str) -> None:
    assert value in [v for v, _ in latent.readings(sentence, speaker=SUBJECT)]


@pytest.mark.parametrize(
    "sentence",
    [
        "Do you use Postgres 16?",
        "I might move to Berlin.",
        "I don't use Vim 9.",
        "My sister owns a Tesla Model 3.",
        "Switch to Fish please.",
        "Back in 2019 I lived in Lisbon.",
        "If we move, the servers are in Dublin.",
        "Just this once, the standup is at 11:00.",
        "My brother moved, the new place is in Dublin.",
        "I'm currently playing a fantasy RPG called Xenoblade Chronicles.",
        "I'm hooked on this great game called FIFA 23.",
        "Now I'm dying to build a strategy game like Civilization.",
        "My brother moved jobs, the servers there are in Dublin now.",
    ],
)
def test_no_clause_is_read_from_a_question_a_hypothesis_a_denial_or_someone_else(sentence: str) -> None:
    assert latent.readings(sentence, speaker=SUBJECT) == []
