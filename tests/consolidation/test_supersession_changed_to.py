"""A thing of the speaker's changed to a state (issue 42, upd12): "We changed the default branch to main"
holds main, not the clause, so that it closes "Our default branch is master". Pairs of this file's own,
subject `maintainer-6619`, through the public API with the real MiniLM and the reader off."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "maintainer-6619"
SAID_AT = datetime(2026, 8, 3, 16, 20, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("a default branch", "Our default branch is master.", "We changed the default branch to main.",
                 "master", "main"),
    Said.current("a terminal theme", "My terminal theme is solarized.", "I switched my terminal theme to dracula.",
                 "solarized", "dracula"),
    Said.current("a release cadence", "Our release cadence is monthly.", "We moved our release cadence to biweekly.",
                 "monthly", "biweekly"),
)

KEPT = (
    Said.current("a colleague's branch", "Our default branch is master.",
                 "My colleague changed his default branch to main.", "master", "main"),
    Said.current("a branch considered", "Our default branch is master.",
                 "We might change the default branch to main.", "master", "main"),
)

VALUES = [
    ("We changed the default branch to main.", "main"),
    ("I switched my terminal theme to dracula.", "dracula"),
]
NO_VALUES = [
    # a change of someone else's thing, a question
    ("My colleague changed his default branch to main.", "main"),
    ("Should we change the default branch to main?", "main"),
]
# fmt: on


(
    test_a_thing_changed_to_a_state_closes_its_old_state,
    test_someone_elses_change_or_a_change_considered_keeps_the_old_state,
    test_the_state_a_thing_was_changed_to_is_the_value,
    test_no_state_is_held_from_someone_elses_change_or_a_question,
) = supersession_tests(subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES)
