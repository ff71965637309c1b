"""A phone number is the speaker's when the sentence says so, whatever the phrasing and wherever the
cue stands; someone else's number, an order or ticket number and the value marked as the old one are
not (issue 30: "I changed numbers: it's X now, not Y", "Update my contact: X" were missed, so the old
number stayed active and was served first; "My sister's number is X" was stored as the user's)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import extract_with_disclosures

SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)


def _phones(sentence: str) -> list[str]:
    return [f.value for f in extract_with_disclosures(sentence, "Ana", SAID_AT) if f.attribute == "phone"]


@pytest.mark.parametrize(
    ("sentence", "value"),
    [
        ("My mobile number is +351 912 345 678.", "+351 912 345 678"),
        ("You can always reach me at 212-555-0147.", "212-555-0147"),
        ("Here's my number: 020 7946 0321.", "020 7946 0321"),
        ("I got a new SIM, so my number changed: it's 0161 496 0200 now, not 0161 496 0100.", "0161 496 0200"),
        ("I switched numbers: 07700 900 461 from today, not 07700 900 123.", "07700 900 461"),
        ("Please use 0113 496 0555 from now on, the old number is disconnected.", "0113 496 0555"),
        ("Update my contact details: +49 30 901820.", "+49 30 901820"),
        ("My old number was 0117 496 0001, the new one is 0117 496 0002.", "0117 496 0002"),
        ("Ring me on my mobile, 07700 900 982.", "07700 900 982"),
        ("New SIM card, new number: +33 6 12 34 56 78.", "+33 6 12 34 56 78"),
    ],
)
def test_the_speakers_number_in_any_phrasing(sentence: str, value: str) -> None:
    assert _phones(sentence) == [value]


@pytest.mark.parametrize(
    "sentence",
    [
        "My sister's mobile number is +1 415 555 0142.",
        "Their phone is 0161 496 0999.",
        "My manager's mobile is 07700 900 777.",
        "My order number is 5550 1234 99.",
        "The ticket number is 12345678.",
        "Contact support at 1 800 555 0100.",
        "We shipped 1,250,000 units in 2024.",
        "My old number was 0117 496 0001.",
    ],
)
def test_not_the_speakers_number(sentence: str) -> None:
    assert _phones(sentence) == []
