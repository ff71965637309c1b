"""Updates said as people type them (issue 42, upd11): the subject left out before a verb in the past,
a preference said as what the speaker had rather take, a modifier in -ly before the value, and the
grammar of renaming, written here in this file's own everyday phrasings, subject `member-7731`,
through the public API with the real MiniLM and the product's default (the parse reader off). General
causes, each failing before its fix:
- a clause that opens with a verb in the past before "my" or "our" is the speaker's, as a diary is
  written ("Had my 41st birthday on Saturday"); not a verb whose past is its base form, which opens an
  order to the listener ("Set my alarm": change.txt [past as the base form]);
- "I'd rather have X than Y" is "I prefer X to Y" where a verb of taking or using comes after
  "rather" (change.txt [had rather]) and both X and Y are values (`first_person.as_stated`);
- a word in -ly after the article says how much, not what ("switched to a fully vegan diet": the
  value is "vegan diet"), unless it grades it ("a really nice flat": `first_person.state_held`);
- a renaming verb with the thing renamed between it and "to"/"as" ("renamed the repo to beacon",
  "are renaming our app to Beacon") names the new name, and a thing being renamed is no passing
  activity (`predicates.renames`);
- an old name set off by "formerly known as", "previously called" ("The band formerly known as Kites
  is now Gulls") tells which name was left, not a narrative of the past, and an old value between
  commas is no lead-in (`predicates.without_left`).
The pairs that must keep the old value kept it before and after. None of the sentences is a template
of evaluation/ (test_cases_are_not_templates.py checks it).
"""

from __future__ import annotations

from datetime import UTC, datetime

from bench.update_pairs import Said
from tests.consolidation.supersession import said_by, supersession_tests

SUBJECT = "member-7731"
SAID_AT = datetime(2026, 11, 9, 19, 40, tzinfo=UTC)

# fmt: off
UPDATES = (
    Said.current("an age by a birthday had", "I'm 40 years old.", "Had my 41st birthday on Saturday.", "40", "41"),
    Said.current("an age by a birthday celebrated", "I'm 57.", "Celebrated my 58th birthday with the grandkids.",
                 "57", "58"),
    Said.current("an age by a birthday just had", "I'm 22 years old.", "Just had my 23rd birthday, feeling old.",
                 "22", "23"),
    Said.current("a drink had rather", "I prefer coffee.", "I'd rather have green tea than coffee.",
                 "coffee", "green tea"),
    Said.current("a diet fully", "I eat a vegetarian diet.", "I've switched to a fully vegan diet.", "vegetarian",
                 "vegan"),
    Said.current("a diet strictly", "I eat a paleo diet.", "I've changed to a strictly keto diet.", "paleo", "keto"),
    Said.current("a band formerly known as", "My band is called Kites.", "The band formerly known as Kites is now Gulls.",
                 "Kites", "Gulls"),
    Said.current("a project previously called", "Our project is called Atlas.",
                 "The project, previously called Atlas, is now called Beacon.", "Atlas", "Beacon"),
    Said.current("a repo being renamed", "Our repo is called lantern.", "We're renaming the repo to beacon.",
                 "lantern", "beacon"),
    Said.current("an app renamed", "Our app is called Quill.", "We renamed the app to Inkwell.", "Quill", "Inkwell"),
)

KEPT = (
    Said.current("a friend's birthday", "I'm 40 years old.", "My friend had her 41st birthday on Saturday.", "40", "41"),
    Said.current("a birthday planned", "I'm 40 years old.", "Planning my 41st birthday party already.", "40", "41"),
    Said.current("a rather not", "I drink black coffee.", "I'd rather not talk about coffee.",
                 "black coffee", "coffee"),
    Said.current("a rather asked", "I drink black coffee.", "Would you rather have green tea than coffee?",
                 "black coffee", "green tea"),
    Said.current("a wife's rather", "I drink black coffee.",
                 "My wife would rather have green tea than coffee.", "black coffee", "green tea"),
    Said.current("a rather supposed", "We use MySQL for our app.", "If we started over, we'd rather use Postgres.",
                 "MySQL", "Postgres"),
    Said.current("a diet of a sister", "I eat a vegetarian diet.", "My sister switched to a fully vegan diet.",
                 "vegetarian", "vegan"),
    Said.current("a band's old name recalled", "My band is called Gulls.",
                 "The band formerly known as Kites played one gig.", "Gulls", "Kites"),
    Said.current("a rename considered", "Our repo is called lantern.", "We're thinking about renaming the repo to beacon.",
                 "lantern", "beacon"),
    Said.current("a colleague's rename", "Our repo is called lantern.", "My colleague renamed his repo to beacon.",
                 "lantern", "beacon"),
)
# fmt: on


# fmt: off
VALUES = [
    ("Had my 41st birthday on Saturday.", "41"),
    ("I'd rather have green tea than coffee.", "green tea"),
    ("I've switched to a fully vegan diet.", "vegan diet"),
    ("We're renaming the repo to beacon.", "beacon"),
    ("We renamed the app to Inkwell.", "Inkwell"),
    ("The band formerly known as Kites is now Gulls.", "Gulls"),
    ("The project, previously called Atlas, is now called Beacon.", "Beacon"),
]
NO_VALUES = [
    # an order to the listener, a choice between two ways of spending an evening, a plan, a way known
    ("Set my alarm for 6:30.", "6:30"),
    ("I'd rather stay in than go out.", "in"),
    ("We're renaming the repo to beacon next month.", "beacon"),
    ("I know the way to school.", "school"),
]
# fmt: on


(
    test_a_value_said_as_typed_closes_the_old_value,
    test_someone_elses_value_a_plan_a_question_or_a_refusal_keeps_the_old_value,
    test_the_value_said_as_typed_is_the_typed_value,
    test_no_value_is_held_where_none_is_said_as_typed,
) = supersession_tests(
    subject=SUBJECT,
    said_at=SAID_AT,
    closed=UPDATES,
    kept=KEPT,
    values=VALUES,
    no_values=NO_VALUES,
    updated_only=True,
    also=said_by(SUBJECT),
    held=str.endswith,
)
