"""The parse reads the speaker's typed values by default (issue 42, upd12): a first-person clause, or a clause
about a thing of the speaker's, whose complement names a typed value (a name, a version, a count, a day, a
region) gives that value with the reader off, as the product runs; states said in words stay the full
reader's (ENGRAM_PARSE_READER). Pairs of this file's own, subject `rider-5064`, through the public API with
the real MiniLM. What the parse must not take for a value: a name said to the listener ("..., Jon."), an
object pointed back at ("holds it for 30 seconds"), a name that only says which thing ("the Miami
vibe"), a feeling about a name ("sorry about Max"), a capital that only opens the sentence ("Pets are
the best"), a question said by inversion without its mark, words someone insists on, a statement dreamt."""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "rider-5064"
SAID_AT = datetime(2026, 10, 14, 8, 5, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("an age beside an activity", "I'm 34 and trying to get back into running.",
                 "I turned 35 last week.", "34", "35"),
    Said.current("a workplace after a title", "I'm a data analyst over at Initech.",
                 "I'm a data analyst at Globex now.", "Initech", "Globex"),
    Said.current("the retro's day", "The team retro happens every Tuesday.",
                 "The team retro happens every Thursday now.", "Tuesday", "Thursday"),
    Said.current("the infrastructure's region", "All our infrastructure is in us-east-1.",
                 "We moved all our infrastructure to eu-west-1.", "us-east-1", "eu-west-1"),
    Said.current("the team's board", "The team organises tasks on Trello.",
                 "The team organises tasks on Asana now.", "Trello", "Asana"),
)

KEPT = (
    Said.current("a brother's board", "The team organises tasks on Trello.",
                 "My brother's team organises tasks on Asana.", "Trello", "Asana"),
    Said.current("a board considered", "The team organises tasks on Trello.",
                 "We might organise tasks on Asana next year.", "Trello", "Asana"),
    Said.current("a region asked", "All our infrastructure is in us-east-1.",
                 "Should all our infrastructure be in eu-west-1?", "us-east-1", "eu-west-1"),
    Said.current("an age in the past", "I'm 34 and trying to get back into running.",
                 "I was 29 when I ran my first 10K.", "34", "29"),
)

VALUES = [
    ("I'm 34 and trying to get back into running.", "34"),
    ("I'm a data analyst over at Initech.", "Initech"),
    ("The team organises tasks on Trello.", "Trello"),
    ("All our infrastructure is in us-east-1.", "us-east-1"),
]
NO_VALUES = [
    # said to the listener, pointed back at, which thing, a feeling, a sentence's first capital, a question
    ("I totally get it, Jon.", "Jon"),
    ("Jon, great news, I'm now friends with my neighbour.", "Jon"),
    ("I usually hold it for 30 seconds.", "30 seconds"),
    ("I love the Lisbon vibe.", "Lisbon"),
    ("I'm so sorry about Max.", "Max"),
    ("Pets are the best for lifting my spirits.", "Pets"),
    ("Are my hands stiff after a day at the wheel.", "a day"),
    # words someone else insists on, a statement dreamt (read by the parse before this)
    ("My kid insists we live at Hogwarts.", "Hogwarts"),
    ("In my dreams I drive a Tesla.", "Tesla"),
]
# fmt: on


(
    test_a_typed_value_read_by_the_parse_is_closed_by_the_next,
    test_someone_elses_value_a_plan_a_question_or_the_past_keeps_the_parsed_value,
    test_the_parse_gives_the_typed_value_with_the_reader_off,
    test_the_parse_takes_no_name_that_is_no_value,
) = supersession_tests(subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES)
