"""Habits said with how often and how (issue 42, upd12): the object of a habit is its value, not how often
it is done ("drinks coffee every morning": coffee); a way of getting somewhere said with an intransitive
verb is the value of that predicate ("drives to work": driving; "commutes by train": train), so that
"I cycle to work now instead of driving" closes "I drive to work every day". Pairs of this file's own,
subject `commuter-2207`, through the public API with the real MiniLM and the reader off."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "commuter-2207"
SAID_AT = datetime(2026, 9, 22, 7, 45, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("a morning drink", "I drink coffee every morning.", "I drink matcha every morning now.",
                 "coffee", "matcha"),
    Said.current("a weekend sport", "I play squash every weekend.", "I play padel every weekend these days.",
                 "squash", "padel"),
    Said.current("a way to work by", "I commute by train every day.", "I commute by bike now instead of the train.",
                 "train", "bike"),
    Said.current("cycling instead of driving", "I drive to work every day.",
                 "I cycle to work now instead of driving.", "driving", "cycling"),
)

KEPT = (
    Said.current("a flatmate's drink", "I drink coffee every morning.", "My flatmate drinks matcha every morning.",
                 "coffee", "matcha"),
    Said.current("cycling tomorrow", "I drive to work every day.",
                 "Tomorrow I'll cycle to work instead of driving.", "driving", "cycling"),
    Said.current("cycling wished", "I drive to work every day.",
                 "I wish I could cycle to work instead of driving.", "driving", "cycling"),
)

VALUES = [
    ("I drink coffee every morning.", "coffee"),
    ("I play squash every weekend.", "squash"),
    ("I commute by train every day.", "train"),
    ("I drive to work every day.", "driving"),
    ("I cycle to work now instead of driving.", "cycling"),
]
NO_VALUES = [
    # going somewhere says no way of getting there; someone else's way; when one starts is a time
    ("I go to work every day.", "going"),
    ("My brother drives to work every day.", "driving"),
    ("I start work at 8:30 every day.", "work"),
]
# fmt: on


(
    test_a_habit_or_a_way_of_getting_there_closes_the_old_one,
    test_someone_elses_habit_a_plan_or_a_wish_keeps_the_old_one,
    test_the_habit_holds_its_object_or_its_way_not_how_often,
    test_no_way_is_read_where_none_is_said,
) = supersession_tests(subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES)
