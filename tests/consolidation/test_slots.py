"""Single-valued slots that a later statement replaces (issue 30): the person a speaker has one of (a
manager, a partner, a doctor), a time zone, the date an event is due, the choice made for a purpose
("pytest for tests"), and the speaker's systems named without a pronoun ("Production is on AWS"). Each
was kept as `about` or not read at all, so the older statement stayed active and was served above the
newer turn. The forms are grammar and typed values, not the phrasings of one data set."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import extract_with_disclosures, replacements

SAID_AT = datetime(2025, 3, 1, tzinfo=UTC)


def _slots(sentence: str) -> list[tuple[str, str]]:
    return [
        (f.attribute, f.value)
        for f in extract_with_disclosures(sentence, "Ana", SAID_AT)
        if f.cardinality == "single" and f.attribute not in {"experiences", "about"}
    ]


@pytest.mark.parametrize(
    ("sentence", "slot"),
    [
        ("My boss is Karen Holt.", ("manager", "Karen Holt")),
        ("Karen left, my new manager is Idris Bello.", ("manager", "Idris Bello")),
        ("I report directly to Olu Adeyemi.", ("manager", "Olu Adeyemi")),
        ("Since the reorg I have a new team lead, Sofia Marsh.", ("manager", "Sofia Marsh")),
        ("Wen Li is my supervisor now.", ("manager", "Wen Li")),
        ("My husband Pedro has a bakery in town.", ("partner", "Pedro")),
        ("My doctor is Hana Novak.", ("doctor", "Hana Novak")),
        ("My mentor, Ruth Okoye, suggested it.", ("mentor", "Ruth Okoye")),
    ],
)
def test_a_person_the_speaker_has_one_of(sentence: str, slot: tuple[str, str]) -> None:
    assert slot in _slots(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "Casey's boss is Tom Hardy.",
        "My manager seems great.",
        "My manager went on holiday.",
        "Is Karen my manager?",
        "My sister reports to Paul Weiss.",
    ],
)
def test_not_the_speakers_person(sentence: str) -> None:
    assert not [s for s in _slots(sentence) if s[0] in {"manager", "partner", "doctor", "mentor"}]


@pytest.mark.parametrize(
    ("sentence", "zone"),
    [
        ("Right now I'm in the JST zone.", "JST"),
        ("We're on Pacific Time.", "Pacific Time"),
        ("My hours are in US Central.", "US Central"),
        ("My time zone moved from PST to Europe/Berlin.", "Europe/Berlin"),
        ("Schedule meetings in UTC+2 for me.", "UTC+2"),
        ("After the move I'm on AEST now.", "AEST"),
    ],
)
def test_a_time_zone_is_a_typed_value(sentence: str, zone: str) -> None:
    assert _slots(sentence) == [("timezone", zone)]


@pytest.mark.parametrize("sentence", ["I'm in the office today.", "We're on the train.", "I'm in IT."])
def test_not_a_time_zone(sentence: str) -> None:
    assert not [s for s in _slots(sentence) if s[0] == "timezone"]


@pytest.mark.parametrize(
    ("sentence", "slot"),
    [
        ("The launch is due on May 5.", ("launch_date", "May 5")),
        ("Our migration is scheduled for June 12.", ("migration_date", "June 12")),
        ("They postponed the demo from May 5 to May 19.", ("demo_date", "May 19")),
        ("We need to deliver the rollout by September 1.", ("rollout_date", "September 1")),
        ("The release date was moved to 2025-07-01.", ("release_date", "2025-07-01")),
    ],
)
def test_the_date_an_event_is_due(sentence: str, slot: tuple[str, str]) -> None:
    assert slot in _slots(sentence)


@pytest.mark.parametrize(
    ("sentence", "slot"),
    [
        ("I prefer Poetry for packaging.", ("prefers_for_packaging", "Poetry")),
        ("I've switched to uv for packaging.", ("prefers_for_packaging", "uv")),
        ("Please use ruff for linting from now on.", ("prefers_for_linting", "ruff")),
        ("I always use Jest for unit tests.", ("prefers_for_unit_test", "Jest")),
        ("I'd prefer Mermaid for diagrams.", ("prefers_for_diagram", "Mermaid")),
    ],
)
def test_a_choice_for_a_purpose(sentence: str, slot: tuple[str, str]) -> None:
    assert slot in _slots(sentence)


@pytest.mark.parametrize(
    "sentence",
    ["Please use the API for that.", "Could you use pandas for this?", "I'm using my phone for work."],
)
def test_not_a_choice_for_a_purpose(sentence: str) -> None:
    assert not [s for s in _slots(sentence) if s[0].startswith("prefers_for")]


@pytest.mark.parametrize(
    ("sentence", "slot"),
    [
        ("Production is on Hetzner since the last migration.", ("cloud_provider", "Hetzner")),
        ("CI moved to Buildkite last sprint.", ("ci", "Buildkite")),
        ("The pipelines run on Jenkins.", ("ci", "Jenkins")),
        ("Staging is hosted on Azure.", ("cloud_provider", "Azure")),
    ],
)
def test_the_speakers_systems_without_a_pronoun(sentence: str, slot: tuple[str, str]) -> None:
    assert slot in _slots(sentence)


def test_a_version_said_to_hold_now_leaves_the_others() -> None:
    assert [(v, ver) for v, ver, _ in replacements("All the services run on Node 22 now.", "Ana")] == [("Node", "22")]
    assert replacements("The backend at Casey's company runs on Node 22 now.", "Ana") == []


@pytest.mark.parametrize(
    ("sentence", "style"),
    [
        ("I prefer concise replies with a summary at the end.", "concise replies with a summary at the end"),
        ("From now on I'd like bullet points, please.", "bullet points"),
        ("Change of plan: give me step-by-step explanations.", "step-by-step explanations"),
        ("I want short answers without any preamble.", "short answers without any preamble"),
    ],
)
def test_how_answers_should_be_written_is_one_style(sentence: str, style: str) -> None:
    assert ("answer_style", style) in _slots(sentence)


@pytest.mark.parametrize(
    "sentence", ["Give me the answer to question 3.", "I like long walks on the beach.", "I want an answer by Friday."]
)
def test_not_an_answer_style(sentence: str) -> None:
    assert not [s for s in _slots(sentence) if s[0] == "answer_style"]


@pytest.mark.parametrize(
    ("sentence", "slot"),
    [
        ("My colleague Omar reviews my code.", ("reviewer", "Omar")),
        ("Lena reviews my code these days.", ("reviewer", "Lena")),
        ("Our API framework is Laravel 11.", ("web_framework", "Laravel 11")),
        ("We migrated the API to Symfony 7.", ("web_framework", "Symfony 7")),
        ("We moved production to Scaleway.", ("cloud_provider", "Scaleway")),
        ("I switched to Sublime Text.", ("editor", "Sublime Text")),
        ("My laptop boots NixOS.", ("operating_system", "NixOS")),
        ("The pipelines run on TeamCity.", ("ci", "TeamCity")),
    ],
)
def test_more_slots_and_the_tools_that_fill_them(sentence: str, slot: tuple[str, str]) -> None:
    assert slot in _slots(sentence)


def test_two_of_one_slot_in_one_breath_are_both_in_use() -> None:
    assert _slots("We use Django and FastAPI.") == []
    assert _slots("Casey's teammate Sam reviews his pull requests.") == []
