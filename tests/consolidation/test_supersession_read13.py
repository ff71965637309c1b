"""What the speaker says of a routine, a team or a plan of theirs, and its change (issue 42, read13): a
habit with its object or a way of getting somewhere is read however short ("I commute by tram"), a word of
now may open the clause ("Now I ...", "... and now I play badminton"), a day said as recurring is how often
a habit is done, not its value ("plays squash every Thursday" holds squash), and a name keeps the noun it
modifies ("the Ledger team"), a verb joined with "and now" shares the speaker ("... and now work at
Brightmoor"), a thing of the speaker's in a state is read however short ("My ticket has been resolved"), and
since when a state is held is no value of it. Pairs of this file's own, subject `rider-2284`, through the public API with the
real MiniLM and the reader off."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "rider-2284"
SAID_AT = datetime(2026, 9, 14, 8, 45, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("a commute", "I commute by tram.", "Now I commute by ferry.", "tram", "ferry"),
    Said.current("a way to the office", "I get to the office by scooter.", "These days I get to the office by bus.",
                 "scooter", "bus"),
    Said.current("a sport", "I play squash every Thursday.", "My knee got worse and now I play badminton.", "squash",
                 "badminton"),
    Said.current("a team", "I'm on the Ledger team at work.", "These days I'm on the Onboarding team.", "Ledger team",
                 "Onboarding team"),
    Said.current("a plan", "I'm subscribed to the Starter plan.", "I bumped our account up to the Scale plan.",
                 "Starter plan", "Scale plan"),
    Said.current("a claim", "My claim is pending.", "My claim has been approved.", "pending", "approved"),
)

KEPT = (
    Said.current("a brother's commute", "I commute by tram.", "My brother commutes by ferry.", "tram", "ferry"),
    Said.current("a commute considered", "I commute by tram.", "I might start commuting by ferry.", "tram", "ferry"),
    Said.current("a sport denied", "I play squash every Thursday.", "I don't play badminton.", "squash", "badminton"),
)

VALUES = [
    ("I commute by tram.", "tram"),
    ("I get to the office by scooter.", "scooter"),
    ("Now I commute by ferry.", "ferry"),
    ("I commute on my e-bike.", "e-bike"),
    ("I walk to work now.", "walking"),
    ("I play squash every Thursday.", "squash"),
    ("I quit squash and now I play badminton.", "badminton"),
    ("My knee got worse and now I play badminton.", "badminton"),
    ("I'm on the Ledger team at work.", "Ledger team"),
    ("I'm subscribed to the Starter plan.", "Starter plan"),
    ("We're on the Growth tier of Mailchimp.", "Growth tier"),
    ("My sport is volleyball.", "volleyball"),
    ("I quit my job at Halvorsen Labs and now work at Brightmoor.", "Brightmoor"),
    ("My ticket has been resolved.", "resolved"),
    ("I've been dairy-free since March.", "dairy-free"),
]
NO_VALUES = [
    # someone else's commute, a commute considered, one left, a question
    ("My brother commutes by ferry.", "ferry"),
    ("I might start commuting by ferry.", "ferry"),
    ("I don't commute by tram anymore.", "tram"),
    ("Do you commute by tram?", "tram"),
    # a day said as recurring is no value of the habit done on it
    ("I play squash every Thursday.", "Thursday"),
    # ... nor is since when a state is held
    ("I've been dairy-free since March.", "March"),
]
# fmt: on


(
    test_a_routine_team_or_plan_changed_closes_the_old_one,
    test_someone_elses_or_a_considered_or_denied_change_keeps_it,
    test_the_way_the_sport_the_team_or_the_plan_is_the_value,
    test_no_value_is_held_from_another_person_a_hypothesis_or_a_question,
) = supersession_tests(subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES)
