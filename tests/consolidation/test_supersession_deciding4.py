"""General causes of updates left undone (issue 42, deciding4), each found on pairs of this file's own
written from the name of a kind of change (a schedule, a status, a favourite, a count, ...): values said
as a list or a range are one value; a state said with its preposition is the whole state; a value said
before the copula ("X is my favourite Y") is the value of the speaker's thing; the value of a preference
said with "instead of" is the one held. Through the public API with the real MiniLM and the parse reader
on; none of the sentences is a template of evaluation/ (test_cases_are_not_templates.py checks it)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bench.update_pairs import Said
from semantic import predicates
from semantic.services import embed_statements
from tests.consolidation.supersession import assert_kept, assert_updated, assert_value_held, said_pairs

pytestmark = pytest.mark.usefixtures("parse_reader")

SAID_AT = datetime(2026, 9, 8, 10, 0, tzinfo=UTC)
# A subject whose id holds a word for a person ("client"): its own name says nothing of anyone else.
SUBJECT = "client-3318"


# fmt: off
# Days joined by "and", and a time or a day said as a range ("9am to 5pm", "Monday to Friday"), name one
# value: a schedule is the whole list or range, not its first day or its last hour.
SCHEDULES = (
    Said.current("shift days", "My shifts are Tuesdays and Thursdays.", "My shifts moved to Mondays and Fridays.",
                 "Tuesdays and Thursdays", "Mondays and Fridays"),
    Said.current("working hours", "I work from 9am to 5pm.", "I work from 10am to 6pm now.", "9am to 5pm", "10am to 6pm"),
)
# A state said with its preposition is the whole state ("in progress", "on hold", "under review"), never
# where something runs; a participle is the state however the sentence goes on ("approved by the bank").
STATES = (
    Said.current("a remodel finished", "Our kitchen remodel is in progress.", "The kitchen remodel is finished now.",
                 "in progress", "finished"),
    Said.current("a loan approved", "My loan application is under review.",
                 "My loan application got approved by the bank.", "under review", "approved"),
    Said.current("a redesign resumed", "Our website redesign is on hold.",
                 "Our website redesign is in progress again.", "on hold", "in progress"),
)
# A value said before the copula ("Radiohead is my favourite band", "Tacos have become my favourite
# meal", "Hyperion replaced Dune as my favourite book") is the value of the speaker's thing; a thing said
# with a capital and one without are compared as things ("sushi", "Tacos"; "10K", "half marathon").
FAVOURITES = (
    Said.current("a band said first", "Radiohead is my favourite band.", "My favourite band these days is Muse.",
                 "Radiohead", "Muse"),
    Said.current("a meal become", "My favourite meal is sushi.", "Tacos have become my favourite meal.",
                 "sushi", "Tacos"),
    Said.current("a book replaced", "My favourite book is Dune.", "Hyperion has replaced Dune as my favourite book.",
                 "Dune", "Hyperion"),
    Said.current("a race", "I'm training for a 10K.", "I'm now training for a half marathon.", "10K", "half marathon"),
)
# A clause joined to another is read on its own: its subject opens the clause, not the sentence ("...,
# so the team is 10 people now"); the parse reads what the other readers read whole and the fact tests
# refused ("adopted a third dog, so now ... has three dogs" names the speaker twice), and the clause the
# patterns did not read ("I'm 34 and I work as a nurse"); "It was ..." names no thing of the speaker's.
CLAUSES = (
    Said.current("dogs after an adoption", "We have two dogs.", "We adopted a third dog, so now we have three dogs.",
                 "two dogs", "three dogs"),
    Said.current("a team after hiring", "Our team is 8 people.", "We hired two more, so the team is 10 people now.",
                 "8 people", "10 people"),
    Said.current("an age beside a job", "I'm 34 and I work as a nurse.",
                 "It was my birthday on Monday and I'm now 35.", "34", "35"),
)
# A state said with the one it replaces ("aisle seats instead of window seats") holds the first, and a
# state named after "rather than" or "instead of" is the one left, however far apart the two words read.
PREFERENCES = (
    Said.current("seats", "I prefer window seats.", "I prefer aisle seats instead of window seats these days.",
                 "window seats", "aisle seats"),
    Said.current("a coffee order", "I usually order a latte.", "I order a flat white rather than a latte now.",
                 "latte", "flat white"),
    Said.current("a renovation wrapped up", "The bathroom reno is in progress.", "The bathroom reno is wrapped up.",
                 "in progress", "wrapped up"),
)
# Someone unnamed changing the speaker's thing ("They hiked my car insurance to ...") tells the thing's
# new value; "a team of 7" and "a family of four" count what the noun before "of" names.
COUNTS_AND_PRICES = (
    Said.current("insurance hiked", "My car insurance is $900 a year.",
                 "They hiked my car insurance to $1,100 a year.", "$900", "$1,100"),
    Said.current("a family", "We're a family of four.", "We're a family of five now.", "family of four",
                 "family of five"),
    Said.current("a team I manage", "I manage a team of 7.", "I now manage a team of 11.", "team of 7", "team of 11"),
)
# A migration's statement keeps the value it left ("switched from Evernote to ..."): the later statement
# names the old value, however far apart the two statements read otherwise.
MIGRATIONS = (
    Said.current("a notes app", "I jot my notes down in Evernote.", "I switched from Evernote to Obsidian.",
                 "Evernote", "Obsidian"),
    # "as" after a verb of renaming brings the new name
    Said.current("a project rebranded", "Our side project is called Nimbus.", "We rebranded Nimbus as Cirrus.",
                 "Nimbus", "Cirrus"),
)
# fmt: on

UPDATES = SCHEDULES + STATES + FAVOURITES + CLAUSES + PREFERENCES + COUNTS_AND_PRICES + MIGRATIONS

# fmt: off
NOT_UPDATES = (
    Said.current("a state and a place", "I'm retired.", "I rent a flat in Lisbon now.", "retired", "Lisbon"),
    Said.current("a colleague's favourite", "Radiohead is my favourite band.", "Muse is my colleague's favourite band.",
                 "Radiohead", "Muse"),
    Said.current("another thing's state", "Our kitchen remodel is in progress.", "The garden shed is finished.",
                 "in progress", "finished"),
    Said.current("another team's size", "I manage a team of 7.", "My sister manages a team of 11.",
                 "team of 7", "team of 11"),
    Said.current("a friend's preference", "I prefer window seats.",
                 "My friend prefers aisle seats instead of window seats.", "window seats", "aisle seats"),
)
# fmt: on


@said_pairs(NOT_UPDATES)
def test_a_statement_that_replaces_nothing_keeps_the_old_value(api_a, end_session, pair: Said) -> None:
    assert_kept(api_a, end_session, pair, SUBJECT)


# A pair that only the values' own cosine decides, sitting within the int8 arithmetic's reach of its
# floor: the same file puts "in progress" / "wrapped up" at 0.4224 on a processor with VNNI and 0.395
# on one without (docs/benchmarks/int8.md). Where this machine's vectors put it under the floor, the
# update is a strict xfail; above it, expected.
ON_THE_FLOOR = {"a renovation wrapped up": predicates.SIMILAR_TERMS}


def values_cosine(pair: Said) -> float:
    old, new = embed_statements([pair.old, pair.new])
    return float(np.dot(np.asarray(old, dtype=np.float32), np.asarray(new, dtype=np.float32)))


@said_pairs(UPDATES)
def test_a_new_value_closes_the_old(api_a, end_session, pair: Said, request: pytest.FixtureRequest) -> None:
    if pair.kind in ON_THE_FLOOR and (cosine := values_cosine(pair)) < ON_THE_FLOOR[pair.kind]:
        reason = f"values cosine {cosine:.4f} on this processor, under the floor {ON_THE_FLOOR[pair.kind]}"
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    assert_updated(api_a, end_session, pair, SUBJECT)


# fmt: off
VALUES = [
    ("I pick up my daughter on Mondays and Wednesdays.", "Mondays and Wednesdays"),
    ("The pool is open from 7am to 9pm.", "7am to 9pm"),
    ("My hours are 8:30 to 4:30 now.", "8:30 to 4:30"),
    ("I'm at the studio Monday to Thursday.", "Monday to Thursday"),
]
STATE_VALUES = [
    ("The bathroom renovation is on hold.", "on hold"),
    ("Our patio project is on hold.", "on hold"),
    ("My building permit got approved at the council.", "approved"),
]
# A change from one value to another is no range: the later one is held.
CHANGES = [
    ("My lesson moved from 4pm to 5pm.", "5pm"),
    ("We switched the retro from Fridays to Thursdays.", "Thursdays"),
]
# fmt: on


@pytest.mark.parametrize(
    ("sentence", "value"), VALUES + STATE_VALUES + CHANGES, ids=[s for s, _ in VALUES + STATE_VALUES + CHANGES]
)
def test_a_list_a_range_or_a_state_is_one_value(sentence: str, value: str) -> None:
    assert_value_held(sentence, value, subject=SUBJECT, said_at=SAID_AT)
