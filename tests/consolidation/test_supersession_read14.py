"""What the speaker says of a habit, a status or a step of theirs, read for its value (issue 42, read14):
how often a habit is done is no value of what it is of ("plays hockey three times a week" holds hockey),
a date that only says when is no value beside the thing the clause names ("got my orange belt last week"
holds orange belt), a name that only says which thing is no value of the state the thing is in ("My
claim #7713 is now approved" holds approved, "My Etsy parcel has arrived" arrived), a word of now may
open the clause ("These days my sport is fencing"). Pairs of this file's own, subject `heron-6630`,
through the public API with the real MiniLM and the reader off."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.update_pairs import Said
from tests.consolidation.supersession import read, said_by, shown, supersession_tests

SUBJECT = "heron-6630"
SAID_AT = datetime(2026, 10, 5, 18, 20, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("a sport played weekly", "I play hockey three times a week.", "I play lacrosse three times a week now.",
                 "hockey", "lacrosse"),
    Said.current("a grade earned", "I got my orange belt last week.", "I got my green belt yesterday.",
                 "orange belt", "green belt"),
    Said.current("a claim's status", "My claim #7713 is still pending.", "My claim #7713 is now approved.",
                 "pending", "approved"),
    Said.current("a setting", "I set the Nest to 19 degrees.", "I set the Nest to 22 degrees now.", "19 degrees",
                 "22 degrees"),
    Said.current("a team", "I work on the Atlas team.", "I moved to the Meridian team.", "Atlas team",
                 "Meridian team"),
    Said.current("a team held for years", "I've been on the Cobalt team for two years.", "I moved to the Meridian team.",
                 "Cobalt team", "Meridian team"),
    Said.current("a sport switched", "I play squash on Wednesdays.", "I switched from squash to badminton.", "squash",
                 "badminton"),
    Said.current("a duration said with 'but it's'", "My walk to school is 15 minutes.",
                 "My walk to school used to be 15 minutes but it's 25 minutes now.", "15 minutes", "25 minutes"),
    Said.current("a job left", "I have a job at Tidewell Labs.", "I quit my job at Tidewell Labs and now work at Orbisoft.",
                 "Tidewell Labs", "Orbisoft"),
)

KEPT = (
    Said.current("a friend's sport", "I play hockey three times a week.", "My friend plays lacrosse twice a week.",
                 "hockey", "lacrosse"),
)

VALUES = [
    ("I play hockey three times a week.", "hockey"),
    ("I play rugby twice a week now.", "rugby"),
    ("I got my orange belt last week.", "orange belt"),
    ("Got my grey belt in June.", "grey belt"),
    ("My claim #7713 is now approved.", "approved"),
    ("My Etsy parcel has arrived.", "arrived"),
    ("These days my sport is polo.", "polo"),
    ("Nowadays my go-to drink is kombucha.", "kombucha"),
    ("I do pilates every Sunday.", "pilates"),
    ("I catch the tram into the city centre every day.", "tram"),
    ("I set the Nest to 19 degrees.", "19 degrees"),
    ("I moved to the Meridian team.", "Meridian team"),
    ("I quit Tidewell Labs last month and joined Orbisoft.", "Orbisoft"),
    ("I left Tidewell Labs for Orbisoft.", "Orbisoft"),
    # a change from one state to another, an activity named by its gerund
    ("I switched from squash to badminton.", "badminton"),
    ("I've switched from the tram to cycling.", "cycling"),
    # a clause after "but these days", "it" after "but" without a comma
    ("I used to row, but these days I play water polo.", "water polo"),
    ("My walk to school used to be 15 minutes but it's 25 minutes now.", "25 minutes"),
    # a label and its state, or its value after an article
    ("Claim status: approved.", "approved"),
    ("New bike: a Brompton.", "Brompton"),
    # a perfect with how long or since when holds up to now
    ("I've been on the Cobalt team for two years.", "Cobalt team"),
    ("I've been a green belt for a year.", "green belt"),
    ("I've been gluten-free since June.", "gluten-free"),
]
# A statement keeps what its value is of ("in Welsh"); a circumstance of time or place it drops.
STATEMENTS = [
    ("I'm at A1 in Welsh.", "A1", "heron-6630 is at A1 in Welsh."),
    ("The choir rehearsal is at 19:30 on Tuesdays.", "19:30", "heron-6630's choir rehearsal is at 19:30."),
]
NO_VALUES = [
    # how often is no value of the habit, a date that only says when none of the grade
    ("I play hockey three times a week.", "three times a week"),
    ("I got my orange belt last week.", "28 September 2026"),
    # which thing it is, no value of its state
    ("My claim #7713 is now approved.", "#7713"),
    ("My Etsy parcel has arrived.", "Etsy"),
    # what a verb of leaving leaves, and when it did
    ("I quit my job at Tidewell Labs.", "Tidewell Labs"),
    ("I left Tidewell Labs last month.", "September 2026"),
    ("I quit Tidewell Labs last month and joined Orbisoft.", "September 2026"),
    ("I switched from squash to badminton.", "squash"),
    # a task done is no activity, a mood no lasting state, an activity in progress no state
    ("I switched to working remotely.", "working remotely"),
    ("I do the laundry every Sunday.", "laundry"),
    ("I'm sleepy these days.", "sleepy"),
    # a friend's sport, a sport considered
    ("My friend plays lacrosse twice a week.", "lacrosse"),
    ("I might play lacrosse twice a week.", "lacrosse"),
]
# fmt: on


(
    test_a_sport_a_grade_or_a_status_changed_closes_the_old_one,
    test_a_friends_sport_keeps_it,
    test_the_sport_the_grade_or_the_state_is_the_value,
    test_no_value_is_how_often_when_or_which_thing,
) = supersession_tests(
    subject=SUBJECT,
    said_at=SAID_AT,
    closed=UPDATES,
    kept=KEPT,
    values=VALUES,
    no_values=NO_VALUES,
    also=said_by(SUBJECT),
)


def test_a_team_moved_to_is_no_place_the_speaker_lives() -> None:
    facts = read("I moved to the Meridian team.", SUBJECT, SAID_AT)
    assert not [f for f in facts if f.attribute in {"location", "uses"}], shown(facts)


@pytest.mark.parametrize(("sentence", "value", "statement"), STATEMENTS, ids=[c[0] for c in STATEMENTS])
def test_a_statement_keeps_what_its_value_is_of(sentence: str, value: str, statement: str) -> None:
    facts = read(sentence, SUBJECT, SAID_AT)
    assert any(f.value == value and f.statement == statement for f in facts), shown(facts)
