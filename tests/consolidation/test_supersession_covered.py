"""Updates whose first value is read and whose later statement closed nothing (issue 42, upd6): kinds the
blind sets name (an age, a count, a duration, a diet, a favourite, a vehicle), written here in this
file's own phrasings. General causes, each through the public API with the real MiniLM and the product's
default (the parse reader off): "these days" says a state holds now, not that it points back at
something; a value said before the copula is the value of the speaker's thing ("Padel is my favourite
sport now", "My favourite snack these days is ..."); "instead of 15" counts nothing; two durations are one kind of value in any units of time; a pattern's value that is no value leaves
the sentence to the other readers ("We switched to three-week sprints"); "slipped" tells a change; a verb of change with its value
needs fewer words ("I just turned 40"); a state after a verb of becoming is the state held ("I've gone
vegan"). None of the sentences is a template of evaluation/ (test_cases_are_not_templates.py checks it).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.update_pairs import Said
from consolidation.extractors.rules import extract_with_disclosures
from tests.consolidation.supersession import assert_kept, assert_updated, assert_value_held, said_pairs, sentence_cases

SAID_AT = datetime(2026, 11, 2, 8, 15, tzinfo=UTC)
SUBJECT = "member-5150"


# fmt: off
UPDATES = (
    Said.current("sleep said with these days", "I sleep 6 hours a night.", "I sleep 8 hours a night these days.",
                 "6 hours", "8 hours"),
    Said.current("a bike said with these days", "I ride a Brompton.", "I ride a Cannondale these days.",
                 "Brompton", "Cannondale"),
    Said.current("a food said first", "My favorite food is ramen.", "Pho has become my favorite food.", "ramen", "Pho"),
    Said.current("a sport said first", "My favourite sport is tennis.", "Padel is my favourite sport now.",
                 "tennis", "Padel"),
    Said.current("minutes then an hour", "My piano lessons are 30 minutes long.",
                 "My piano lessons are an hour long now.", "30 minutes", "an hour"),
    Said.current("sprints in words", "Our sprints run for two weeks.", "We switched to three-week sprints.",
                 "two weeks", "three-week"),
    Said.current("a launch slipped", "The launch is planned for May 12.", "The launch slipped to June 20.",
                 "May 12", "June 20"),
    Said.current("gone vegan", "I'm vegetarian.", "I've gone vegan.", "vegetarian", "vegan"),
    Said.current("just turned", "I am 41 years old.", "I just turned 42.", "41", "42"),
)

NOT_UPDATES = (
    Said.current("a lunch break", "My commute takes 40 minutes.", "My lunch break takes 30 minutes.",
                 "40 minutes", "30 minutes"),
    Said.current("a partner's diet", "I'm vegetarian.", "My partner is vegan.", "vegetarian", "vegan"),
    Said.current("a diet thought about", "I'm vegetarian.", "I thought about going vegan but decided against it.",
                 "vegetarian", "vegan"),
    Said.current("a wife's painter", "My favourite painter is Vermeer.", "My wife's favourite painter is Klimt.",
                 "Vermeer", "Klimt"),
    Said.current("another favourite", "My favourite painter is Vermeer.", "Alien is my favourite film.",
                 "Vermeer", "Alien"),
    Said.current("a car for a weekend", "I commute in a Toyota Corolla.", "I rented a Tesla for the weekend.",
                 "Toyota Corolla", "Tesla"),
    Said.current("a brother's age", "I am 41 years old.", "My brother just turned 45.", "41", "45"),
    Said.current("an age long ago", "I am 41 years old.", "When I was 30 I lived in Oslo.", "41", "30"),
)
# fmt: on


@said_pairs(UPDATES)
def test_a_new_value_closes_the_old(api_a, end_session, pair: Said) -> None:
    assert_updated(api_a, end_session, pair, SUBJECT)


@said_pairs(NOT_UPDATES)
def test_a_statement_that_replaces_nothing_keeps_the_old_value(api_a, end_session, pair: Said) -> None:
    assert_kept(api_a, end_session, pair, SUBJECT)


# fmt: off
STATES = [
    # "these days" or "at the moment" after a state with a typed value: it holds now
    ("I ride a Cannondale these days.", "Cannondale"),
    ("We host the wiki on Confluence at the moment.", "Confluence"),
    # the value before the copula, the speaker's thing after it
    ("Halloumi has become my favourite cheese.", "Halloumi"),
    ("Padel is my favourite sport at the moment.", "Padel"),
    # a verb of becoming, then the state
    ("I've gone pescatarian.", "pescatarian"),
    # "instead of" is no count of "instead": the value held is the other
    ("Our retros are 45 minutes now instead of an hour.", "45 minutes"),
    # a pattern's value that is no value ("uses three-week sprints") leaves the sentence to the others
    ("We switched to three-week sprints.", "three-week"),
    # "these days" between the thing and its verb
    ("My favourite snack at the moment is flapjack.", "flapjack"),
]
NOTHING = [
    # without a typed value, "these days" tells a passing state
    "We're swamped these days.",
    # a word of grammar or a pronoun before the copula names no value
    "This is my favourite mug.",
    "She is my favourite cousin.",
]
# fmt: on


@sentence_cases(STATES)
def test_the_state_held_now_is_read(sentence: str, value: str) -> None:
    assert_value_held(sentence, value, subject=SUBJECT, said_at=SAID_AT)


@pytest.mark.parametrize("sentence", NOTHING)
def test_no_value_is_read_where_none_is_held(sentence: str) -> None:
    facts = extract_with_disclosures(sentence, SUBJECT, SAID_AT)
    assert not [f for f in facts if f.attribute not in {"experiences", "plans"}], [
        (f.attribute, f.value, f.statement) for f in facts
    ]
