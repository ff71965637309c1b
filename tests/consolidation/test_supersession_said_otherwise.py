"""Updates said the way people type to an assistant (issue 42, upd10): the new value said through "it"
pointing back at the thing, in lower case, as a request to record it, told to the listener to keep in
mind, set against the old value, after a verb of becoming, or as a name in lower case, written here in
this file's own everyday phrasings, subject `visitor-5120`, through the public API with the real MiniLM
and the product's default (the parse reader off). General causes, each failing before its fix:
- "it" opening a clause that states a value, after a clause that names a thing of the speaker's and
  says no value of it now (a question, the past, a denial), is that thing
  (`first_person.pointed_back`): "My favourite group? It's Muse now.";
- the speaker typed "i", "im", "ive" (`first_person.as_typed_formally`), so no reader found the speaker;
- a request to record a value ("Please update my age to 35": change.txt [asked to change]) is the
  statement it asks for, and a clause told to the listener to keep in mind ("Just so you know, ...",
  "FYI ...": change.txt [told to the listener]) is read alone (`first_person.as_stated`);
- a value set against the one left after the clause ("I'm 35 now, not 34") does not deny the clause;
- a verb of becoming right before the value ("went vegan", change.txt [becoming]) tells a change
  (`predicates.becomes`), and is read with one content word fewer, as other changes are; not where the
  speaker went ("went home": change.txt [not a state become]);
- two short values that share a head and each name a word the other lacks ("half marathon", "full
  marathon") are two values, not a near-duplicate statement (`values.values_conflict`);
- a word after a passive's or a renaming's naming word is a name however it is written ("is called
  atlas", "renamed the repo from atlas to beacon": `predicates.typed_spans`);
- a phrase that says "now" before an inverted statement ("These days Arrival is my favourite film").
Of the updates, all but two failed on main (the age told to keep in mind and the repo "now called" were
closed already, and stay as guards); the pairs that must keep the old value kept it on main and still do.
None of the sentences is a template of evaluation/ (test_cases_are_not_templates.py checks it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import said_by, supersession_tests

SUBJECT = "visitor-5120"
SAID_AT = datetime(2026, 11, 2, 8, 15, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("a favourite after a question", "My favourite group is Radiohead.",
                 "My favourite group? It's Muse now.", "Radiohead", "Muse"),
    Said.current("a favourite that used to be", "My favourite film is Alien.",
                 "My favourite film used to be Alien, but now it's Arrival.", "Alien", "Arrival"),
    Said.current("a favourite no more", "My favourite dish is pizza.",
                 "Pizza isn't my favourite dish anymore, it's sushi.", "pizza", "sushi"),
    Said.current("a rent that used to be", "My rent is $900 a month.",
                 "My rent used to be $900, but now it's $1,100.", "$900", "$1,100"),
    Said.current("a favourite these days first", "My favourite film is Alien.",
                 "These days Arrival is my favourite film.", "Alien", "Arrival"),
    Said.current("an age in lower case", "i'm 34 years old", "i turned 35 last week", "34", "35"),
    Said.current("an age typed without apostrophe", "im 34", "im 35 now lol", "34", "35"),
    Said.current("an age asked to be updated", "I'm 34 years old.", "Please update my age to 35.", "34", "35"),
    Said.current("an address asked to be changed", "My address is 12 Elm Street.",
                 "Can you change my address to 40 Oak Avenue?", "12 Elm Street", "40 Oak Avenue"),
    Said.current("an age told to keep in mind", "I'm 34.", "Just so you know, I'm 35 now.", "34", "35"),
    Said.current("an age for your information", "I'm 34.", "FYI I'm 35 now.", "34", "35"),
    Said.current("an age set against the old", "I'm 34.", "Quick correction - I'm 35 now, not 34.", "34", "35"),
    Said.current("a diet gone", "I'm vegetarian.", "I went vegan last month.", "vegetarian", "vegan"),
    Said.current("a diet turned", "I eat a vegetarian diet.", "I turned pescatarian in the spring.", "vegetarian",
                 "pescatarian"),
    Said.current("a goal of another length", "I'm training for a half marathon.",
                 "I'm training for a full marathon now.", "half marathon", "full marathon"),
    Said.current("a repo renamed in lower case", "Our repo is called atlas.",
                 "We renamed the repo from atlas to beacon.", "atlas", "beacon"),
    Said.current("a repo now called", "Our repo is called atlas.", "Our repo is now called beacon.", "atlas",
                 "beacon"),
)

KEPT = (
    Said.current("a sister gone vegan", "I'm vegetarian.", "My sister went vegan last month.", "vegetarian", "vegan"),
    Said.current("a trip home", "I'm vegetarian.", "I went home early.", "vegetarian", "home"),
    Said.current("a brother's favourite", "My favourite group is Radiohead.", "My brother's favourite group? It's Muse.",
                 "Radiohead", "Muse"),
    Said.current("a partner's rent", "My rent is $900 a month.", "My partner's rent was $700, now it's $800.", "$900",
                 "$800"),
    Said.current("a favourite asked about", "My favourite group is Radiohead.",
                 "My favourite group? Is it still Radiohead or is it Muse?", "Radiohead", "Muse"),
    Said.current("a brother's age to update", "I'm 34.", "Please update my brother's age to 35.", "34", "35"),
    Said.current("a friend's marathon", "I'm training for a half marathon.",
                 "My friend is training for a full marathon.", "half marathon", "full marathon"),
    Said.current("a milk added", "I drink oat milk.", "I also drink almond milk.", "oat milk", "almond milk"),
    Said.current("a rename considered", "Our repo is called atlas.", "We might rename the repo to beacon.", "atlas",
                 "beacon"),
    Said.current("a son's age kept in mind", "I'm 34.", "Just so you know, my son is 5 now.", "34", "5"),
)
# fmt: on


# fmt: off
VALUES = [
    ("Our repo is called atlas.", "atlas"),
    ("Please update my age to 35.", "35"),
    ("i turned 35 last week", "35"),
    ("My favourite group? It's Muse now.", "Muse"),
    ("I went vegan.", "vegan"),
]
NO_VALUES = [
    # where the speaker went, a plea about someone else, a question
    ("I went home.", "home"),
    ("I called mum.", "mum"),
    ("Could you tell me if my favourite band is Muse?", "Muse"),
]
# fmt: on


(
    test_a_value_said_otherwise_closes_the_old_value,
    test_someone_elses_value_an_addition_a_trip_or_a_question_keeps_the_old_value,
    test_the_value_said_otherwise_is_the_typed_value,
    test_no_value_is_held_where_none_is_said_otherwise,
) = supersession_tests(
    subject=SUBJECT,
    said_at=SAID_AT,
    closed=UPDATES,
    kept=KEPT,
    values=VALUES,
    no_values=NO_VALUES,
    updated_only=True,
    also=said_by(SUBJECT),
)
