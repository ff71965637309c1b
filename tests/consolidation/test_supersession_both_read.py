"""Deciding when both values were read (issue 42, decide13): pairs of this file's own, written from the
names of kinds of change (a device or a vehicle, a level or a grade, a diet or a preference, a time zone
or a language, a tool or a vendor, a role or a title, a price or a budget, a duration), through the
public API with the real MiniLM and the reader off, as the product runs. A later statement that adds,
is someone else's, names another thing of the same type, jokes or quotes, or tells an exception leaves
the earlier value active. Each update pair failed on main (2405bb1)."""

from __future__ import annotations

from typing import Any

from bench.update_pairs import Said
from tests.consolidation.supersession import assert_kept, assert_updated, said_pairs

SUBJECT = "commuter-5120"

# fmt: off
UPDATES = (
    # A verb of reaching before a level named with its number ("passed B2") tells the level reached, as
    # "reached 10,000" tells a count: the value is the level, not the clause of an event.
    Said.current("a language level", "I'm at B1 in Spanish.", "I passed B2 in Spanish.", "B1", "B2"),
    Said.current("a level passed", "I'm a level 2 sommelier.", "I just passed my level 3 sommelier exam.",
                 "2 sommelier", "3 sommelier"),
    # Two things of one kind are compared with the head noun said after them ("a Mediterranean diet"):
    # "Mediterranean" alone and "low-carb diet" read 0.09, "Mediterranean diet" and "low-carb diet" 0.52.
    Said.current("a diet of another head", "I eat a low-carb diet.", "I'm on a Mediterranean diet now.",
                 "low-carb diet", "Mediterranean"),
    # A noun for a person inside a title written with capitals names what the speaker is, not someone else.
    Said.current("a title with a person's noun", "I'm the Office Coordinator.", "I'm the Office Manager now.",
                 "Office Coordinator", "Office Manager"),
    Said.current("a role with a person's noun", "My role at the agency is Account Executive.",
                 "I got promoted, my role is Client Partner now.", "Account Executive", "Client Partner"),
    # A verb before the possessive ("sets their interface language to ...") is no word of the thing's name,
    # as "marketing" is in "the marketing team uses ..." after "our team uses ...".
    Said.current("a setting set", "My interface language is English.", "I set my interface language to Spanish.",
                 "English", "Spanish"),
    Said.current("an alarm set", "My alarm is at 6am.", "I set my alarm to 7am.", "6am", "7am"),
    # A time said by its hour alone is a bare number, of one kind with a time ("at 6", then "at 5:30").
    Said.current("a waking hour", "I wake up at 6.", "I get up at 5:30 now.", "6", "5:30"),
    # "dumped X for Y" names X as the value left, as "ditched X for Y" does.
    Said.current("a CRM dumped", "Our CRM is Salesforce.", "We dumped Salesforce for HubSpot.", "Salesforce", "HubSpot"),
)

# Guard rails: each is left alone on main, and must stay so.
NOT_UPDATES = (
    Said.current("another budget", "My budget for the trip is $2,000.", "My budget for the new couch is $800.", "$2,000", "$800"),
    Said.current("another duration", "My commute is 40 minutes.", "My lunch break is 30 minutes.", "40 minutes", "30 minutes"),
    Said.current("another team's tool", "Our team uses Jira.", "The marketing team uses Trello.", "Jira", "Trello"),
    Said.current("a count and a time", "I have 2 kids.", "School pickup is at 3:30 now.", "2 kids", "3:30"),
    Said.current("another tool", "We use Jira for tickets.", "We also use Confluence for docs.", "Jira", "Confluence"),
    Said.current("another language", "I speak Spanish.", "I also speak some German.", "Spanish", "German"),
    Said.current("a joke", "Our family car is a Corolla.", "My friend joked that I should buy a Lamborghini.", "Corolla", "Lamborghini"),
    Said.current("a wish", "Our family car is a Corolla.", "Ha, I wish I drove a Porsche.", "Corolla", "Porsche"),
    Said.current("a quote", "I'm vegetarian.", "My doctor said I should go vegan.", "vegetarian", "vegan"),
    Said.current("a detour", "My commute is 40 minutes.", "My commute is 70 minutes this week only, with the roadworks.",
                 "40 minutes", "70 minutes"),
    Said.current("a burger once", "I'm vegetarian.", "Just this once I had a burger at the barbecue.", "vegetarian", "burger"),
    Said.current("a rental", "Our family car is a Corolla.", "I'm driving a rented Jeep for this trip only.", "Corolla", "Jeep"),
)
# fmt: on


@said_pairs(UPDATES)
def test_a_later_value_of_the_same_thing_closes_the_earlier(api_a: Any, end_session: Any, pair: Said) -> None:
    assert_updated(api_a, end_session, pair, SUBJECT)


@said_pairs(NOT_UPDATES)
def test_another_thing_an_addition_a_joke_or_an_exception_keeps_the_earlier(
    api_a: Any, end_session: Any, pair: Said
) -> None:
    assert_kept(api_a, end_session, pair, SUBJECT)
