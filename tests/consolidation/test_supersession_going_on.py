"""Updates told as going on, as become, or as left (issue 42, upd12): a progressive said with how often is a
habit held ("I'm sleeping 8 hours a night now"), a verb of becoming may take an adverb before its state
("I've gone fully vegan"). Leaving an employer said with another verb for the first ("I'm employed by X",
then "I left X and joined Y") is not closed (docs/benchmarks/blind_updates_history.md, upd12). Pairs of this file's own, subject `sleeper-4410`, through the public API with the real MiniLM
and the reader off."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "sleeper-4410"
SAID_AT = datetime(2026, 7, 12, 22, 10, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("sleep going on", "I sleep about 6 hours a night.", "I'm sleeping 8 hours a night now.",
                 "6 hours", "8 hours"),
    Said.current("runs going on", "I run twice a week.", "I'm running four times a week these days.",
                 "twice a week", "four times a week"),
    Said.current("a diet gone fully", "I'm vegetarian.", "I've gone fully vegan now.", "vegetarian", "vegan"),
)

KEPT = (
    Said.current("sleep for one night", "I sleep about 6 hours a night.", "Tonight I'm sleeping 10 hours.",
                 "6 hours", "10 hours"),
    Said.current("a friend left", "I'm employed by Umbrella Health.",
                 "My friend left Umbrella Health and joined Stark Labs.", "Umbrella Health", "Stark Labs"),
    Said.current("the office left early", "I'm employed by Umbrella Health.",
                 "I left the Umbrella Health office early today.", "Umbrella Health", "office"),
)

VALUES = [
    ("I'm sleeping 8 hours a night now.", "8 hours"),
    ("I've gone fully vegan now.", "vegan"),
]
NO_VALUES = [
    # a passing activity, an activity of the moment with a count
    ("I'm sleeping 10 hours tonight.", "10 hours"),
    ("I'm reading two books right now.", "two books"),
]
# fmt: on


(
    test_a_habit_going_on_a_state_become_or_a_place_left_closes_the_old_value,
    test_one_night_someone_elses_leaving_or_leaving_a_room_keeps_the_old_value,
    test_a_habit_going_on_or_a_state_become_is_the_value,
    test_a_passing_activity_holds_no_value,
) = supersession_tests(subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES)
