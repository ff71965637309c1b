"""A state said of a thing of the speaker's, or of the speaker, is the value (issue 42, upd7): kinds the
blind sets name whose later statement closed nothing with the parse reader off (a status that changes,
a relationship status, a favourite, a goal), written here in this file's own phrasings, subject
`member-7007`. General causes, each through the public API with the real MiniLM and the product's
default (the parse reader off): a clause that says a thing is in a state ("my visa application was
approved", "my go-to comfort food is ramen now", "my goal is now a half marathon", "my favourite colour
changed to green") was kept whole as the value, so no two of them were ever compared
(`first_person.state_held`); a state or a number said of the speaker with the copula alone ("I'm
married", "I am 22") and a count with the noun it counts ("I have 2 roommates") were too few words to
be read; an adverb before a state hid it ("happily married"); "hit" before a number tells a change ("I
hit 42"), as "turned" does; a change told to a state ("I switched to oat milk") was an event, then dropped. None of the
sentences is a template of evaluation/ (test_cases_are_not_templates.py checks it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SAID_AT = datetime(2026, 11, 2, 8, 15, tzinfo=UTC)
SUBJECT = "member-7007"


# fmt: off
UPDATES = (
    Said.current("a sale's status", "Our house sale is on hold.", "Our house sale is complete now.", "on hold", "complete"),
    Said.current("an application's status", "My visa application is under review.",
                 "My visa application was approved.", "under review", "approved"),
    Said.current("a relationship", "I'm married.", "I'm divorced now.", "married", "divorced"),
    Said.current("a relationship said again", "I'm single.", "I'm engaged now.", "single", "engaged"),
    Said.current("a comfort food", "My go-to comfort food is mac and cheese.", "My go-to comfort food is ramen now.",
                 "mac and cheese", "ramen"),
    Said.current("a colour changed", "Blue is my favourite colour.", "My favourite colour changed to green.",
                 "blue", "green"),
    Said.current("a bare age", "I am 22.", "I'm 23 now.", "22", "23"),
    Said.current("roommates", "I have 2 roommates.", "I have 3 roommates now.", "2 roommates", "3 roommates"),
    Said.current("an age reached", "I'm 41 years old.", "I hit 42 on Sunday.", "41 years", "42"),
    Said.current("a drink switched", "My morning drink is coffee.", "I switched to tea instead of coffee.", "coffee", "tea"),
    Said.current("a relationship with an adverb", "I'm happily married.", "I'm recently divorced.", "married", "divorced"),
)

NOT_UPDATES = (
    Said.current("someone else's status", "I'm married.", "My brother is divorced now.", "married", "divorced"),
    Said.current("a past state", "I'm single.", "I was married once, years ago.", "single", "married"),
    Said.current("another count", "I have 2 roommates.", "I have 3 cousins.", "2 roommates", "3 cousins"),
    Said.current("a son's age reached", "I'm 41 years old.", "My son hit 12 on Sunday.", "41 years", "12"),
)
# fmt: on


# fmt: off
STATES = [
    ("Our house sale is on hold.", "on hold"),
    ("My loan application got rejected.", "rejected"),
    ("My goal is now a half marathon.", "half marathon"),
    ("My favourite colour changed to green.", "green"),
    ("I'm single again.", "single"),
    ("I'm married.", "married"),
    ("I am 22.", "22"),
    ("I have 2 roommates.", "2 roommates"),
    ("I'm currently single.", "single"),
    ("I switched to oat milk.", "oat milk"),
]
CLAUSES = [
    # an activity, an evaluation, a mood, a possession, the past: no state held
    ("My sister is working.", "working"),
    ("The trip was great.", "great"),
    ("My garden is really lovely.", "lovely"),
    ("I'm tired.", "tired"),
    ("My son got a new bike.", "new bike"),
    ("I fought hard and got the win.", "win"),
    ("My nephew is totally hooked.", "hooked"),
]
# fmt: on


(
    test_a_new_state_closes_the_old,
    test_a_statement_that_replaces_nothing_keeps_the_old_state,
    test_the_state_is_the_value,
    test_no_state_is_read_where_none_is_held,
) = supersession_tests(
    subject=SUBJECT,
    said_at=SAID_AT,
    closed=UPDATES,
    kept=NOT_UPDATES,
    values=STATES,
    no_values=CLAUSES,
    updated_only=True,
)
