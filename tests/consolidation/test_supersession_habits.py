"""Habits, birthdays, goals and statements said beside something else (issue 42, upd9): kinds the blind
sets name whose later statement closed nothing with the parse reader off (an age, a preference said with
"instead of", a goal, a favourite, a diet, a rename), written here in this file's own everyday phrasings,
subject `patron-2290`, through the public API with the real MiniLM and the product's default (the parse
reader off). General causes, each failing before its fix:
- a habit said in the present kept its clause as the value ("drinks oat milk"), so no two habits were
  compared; the habit's object is the value (`first_person.habit_held`), and a progressive that names
  what it replaced, or a habit begun, is a habit held ("is drinking almond milk rather than oat milk
  now", "has started drinking green tea instead of coffee"); "these days" after it says it holds now;
- an ordinal of the speaker's own birthday is the count of years reached, as "turned" says it
  (semantic/data/change.txt [ordinal reached]); a goal aimed at is the goal held
  (change.txt [aiming]: "I'm aiming for 12,000 steps a day now");
- a clause joined by "and I" / "and we" was read with the clause before it and named the speaker twice
  ("I turned 35 on Saturday and we had a party"), a statement before a question after a comma was never
  read ("I just turned 52, should I ...?"), and a clause opened by words that assert it ("Now that I'm
  30, ...", change.txt [asserted clause]) was a subordinate clause;
- a value that takes another's place as a thing of the speaker's ("Muse has overtaken Radiohead as my
  favourite band", change.txt [taking the place]); "right now" says the value holds now;
- after a naming word, a name in lower case is a name ("our repo is called atlas-core", change.txt
  [naming]); a day's word opening a longer name is the name's ("Friday Notes").
Of the updates, all but two failed before (the age after a comma clause and the repo renamed were closed
already, and stay as guards); the pairs that must keep the old value kept it before and after. None of
the sentences is a template of evaluation/ (test_cases_are_not_templates.py checks it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import supersession_tests

SUBJECT = "patron-2290"
SAID_AT = datetime(2026, 11, 2, 8, 15, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("an ordinal birthday", "I'm 61 years old.", "I celebrated my 62nd birthday with the family.",
                 "61", "62"),
    Said.current("an age after a comma clause", "I'm 34, married with two kids.", "I'm 35 now, time flies.",
                 "34", "35"),
    Said.current("an age joined to a party", "I'm 34 and live in Denver.",
                 "I turned 35 last Saturday and we had a big party.", "34", "35"),
    Said.current("an age after a birthday clause", "I'm 47 years old and I teach maths.",
                 "My birthday was on Sunday and I'm now 48.", "47", "48"),
    Said.current("an age before a question", "I'm 51.", "I just turned 52, should I change my training plan?",
                 "51", "52"),
    Said.current("an age now that", "I'm 29.", "Now that I'm 30, what supplements should I take?", "29", "30"),
    Said.current("an age since", "I'm 43 years old.",
                 "Since I turned 44 last month, I've been thinking about retirement.", "43", "44"),
    Said.current("a drink instead", "I like tea.", "These days I drink coffee instead of tea.", "tea", "coffee"),
    Said.current("a milk rather than", "I drink oat milk.", "I'm drinking almond milk rather than oat milk now.",
                 "oat milk", "almond milk"),
    Said.current("a habit begun", "I drink black coffee.", "I've started drinking green tea instead of coffee.",
                 "coffee", "green tea"),
    Said.current("a step goal aimed at", "My target is 10,000 steps a day.",
                 "I'm aiming for 12,000 steps a day now.", "10,000", "12,000"),
    Said.current("a workout goal", "I'm aiming for 3 workouts a week.", "I'm shooting for 5 workouts a week now.",
                 "3 workouts", "5 workouts"),
    Said.current("a favourite overtaken", "My favourite group is Radiohead.",
                 "Muse has overtaken Radiohead as my favourite group.", "Radiohead", "Muse"),
    Said.current("a diet eaten", "I eat a keto diet.", "I eat a Mediterranean diet these days.", "keto",
                 "Mediterranean"),
    Said.current("a newsletter renamed", "Our newsletter is called Weekly Digest.",
                 "We changed the name of our newsletter to Friday Notes.", "Weekly Digest", "Friday Notes"),
    Said.current("a repo renamed", "Our repo is called atlas-core.", "Our repo is now called atlas-platform.",
                 "atlas-core", "atlas-platform"),
)

KEPT = (
    Said.current("a son's birthday", "I'm 41.", "My son celebrated his 12th birthday.", "41", "12"),
    Said.current("a drink added", "I drink black coffee.", "I also drink green tea.", "coffee", "green tea"),
    Said.current("a sister's goal", "My target is 10,000 steps a day.", "My sister is aiming for 12,000 steps a day.",
                 "10,000", "12,000"),
    Said.current("a birthday long ago", "I'm 41.", "I celebrated my 30th birthday in Rome back in 2015.", "41",
                 "30"),
    Said.current("a drink at another time", "I drink black coffee in the morning.",
                 "I drink chamomile tea at night.", "coffee", "chamomile"),
    Said.current("an age asked about", "I'm 51.", "Should I change my training plan when I turn 52?", "51", "52"),
    Said.current("a brother's age now that", "I'm 29.", "Now that my brother is 30, he wants a party.", "29", "30"),
    Said.current("an age supposed", "I'm 43 years old.", "If I were 44, I'd retire.", "43", "44"),
    Said.current("a diet considered", "I'm vegetarian.", "I considered going vegan but stayed vegetarian.",
                 "vegetarian", "vegan"),
    Said.current("a drink denied", "I like tea.", "I don't drink coffee instead of tea.", "tea", "coffee"),
    Said.current("a partner's milk", "I drink oat milk.", "My partner drinks almond milk instead of oat milk.",
                 "oat milk", "almond milk"),
    Said.current("a husband and I", "I'm 41.", "My husband and I went to his 45th birthday dinner.", "41", "45"),
)
# fmt: on


# fmt: off
VALUES = [
    ("I drink oat milk.", "oat milk"),
    ("I usually take the bus to work.", "bus"),
    ("I eat a keto diet.", "keto diet"),
    ("These days I drink coffee instead of tea.", "coffee"),
    ("I've started drinking green tea.", "green tea"),
    ("I celebrated my 62nd birthday with the family.", "62"),
    ("I'm aiming for 3 workouts a week.", "3 workouts"),
    ("My goal this year is to read 24 books.", "24 books"),
    ("Muse has overtaken Radiohead as my favourite group.", "Muse"),
    ("Our repo is called atlas-core.", "atlas-core"),
    ("Our newsletter is now called Friday Notes.", "Friday Notes"),
    ("I start work at 8:30.", "8:30"),
    ("I work Monday to Friday.", "Monday to Friday"),
]
NO_VALUES = [
    # an activity of the moment, a feeling, a question, someone else's habit, the past
    ("I'm eating lunch now.", "lunch"),
    ("I feel tired.", "tired"),
    ("Should I aim for 5 workouts a week?", "5 workouts"),
    ("My son celebrated his 12th birthday.", "12"),
    ("I celebrated my 30th birthday back in 2015.", "30"),
    ("My wife and I moved to Lisbon.", "wife"),
]
# fmt: on


(
    test_a_later_habit_age_goal_or_name_closes_the_old_value,
    test_an_addition_someone_elses_value_a_question_or_the_past_keeps_the_old_value,
    test_the_value_held_is_the_typed_value_never_the_clause,
    test_no_value_is_held_where_none_is_said,
) = supersession_tests(
    subject=SUBJECT, said_at=SAID_AT, closed=UPDATES, kept=KEPT, values=VALUES, no_values=NO_VALUES, updated_only=True
)
