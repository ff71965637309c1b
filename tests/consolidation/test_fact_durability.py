"""Facts that are facts: the offline extractor keeps what the subject says about themselves or their
world (identity, relations, places, employers, possessions, preferences, tools and versions, plans
with dates, constraints); opinions about the conversation, agreements, passing activities and the
assistant's explanations stay episodes. Values are complete noun phrases or typed values, and a
pronoun the rules cannot resolve with certainty drops the statement."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from consolidation.extractors.rules import RuleBasedExtractor
from consolidation.extractors.vocabulary import ATTRIBUTES
from episodic.models import Episode
from tenants.models import Tenant

SAID = datetime(2026, 3, 4, 10, 0, tzinfo=UTC)


def _facts(*turns: str, role: str = "user") -> list[tuple[str, str, str]]:
    episodes = [
        Episode(id=i, subject="Sam", kind="message", role=role, content=text, occurred_at=SAID)
        for i, text in enumerate(turns, start=1)
    ]
    result = RuleBasedExtractor().extract(tenant=Tenant(name="t", slug="t"), subject="Sam", episodes=episodes)
    return [(c.attribute, c.value, c.statement) for c in result.candidates]


@pytest.mark.parametrize(
    "text",
    [
        # opinions about the conversation and agreements
        "That sounds good, let's go with that.",
        "I think a hybrid approach makes sense for our team.",
        "I think the pilot program idea sounds good.",
        "This will help a lot with the onboarding.",
        "Adding retries would definitely help.",
        "I agree with your suggestion about caching.",
        "I just want to make sure we're both on the same page.",
        "We're both on the same page then.",
        "I think we'll stick with Flask for now.",
        "I love how clean this solution is.",
        "I'm really glad you explained that.",
        "Makes sense, thanks for walking me through the migration plan.",
        # passing activities in the conversation, not durable
        "I'm going to try that now.",
        "I'm trying to understand how async works.",
        "I'm editing the app's `index.html` template right now.",
        "I'm thinking about using Docker for the deployment.",
        # values that are not things
        "I'm using something like Flask-Login for sessions.",
        "I use best practices for naming.",
        "I'm using the debugger correctly, I think.",
        "We're listening on port 8080.",
        "I'm using listening sockets.",
    ],
)
def test_opinions_agreements_and_passing_activities_stay_episodes(text: str) -> None:
    assert _facts(text) == []


def test_the_assistants_explanations_state_nothing_about_the_subject() -> None:
    turns = [
        "You should use PostgreSQL 16 for this. I recommend Redis for the cache.",
        "I work through the problem step by step. We use a queue so the API stays fast.",
    ]
    assert _facts(*turns, role="assistant") == []


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("I'm working at Acme Corp as a backend developer.", "employer", "Acme Corp"),
        ("I'm working at Acme Corp as a backend developer.", "job_title", "backend developer"),
        ("We use PostgreSQL 15 and Redis 7 in production.", "database", "PostgreSQL 15"),
        ("We use PostgreSQL 15 and Redis 7 in production.", "uses", "Redis 7"),
        ("I'm on Python 3.12 locally.", "uses", "Python 3.12"),
        ("Our launch date is June 2nd.", "launch_date", "June 2nd"),
        ("I'm planning to migrate the API to FastAPI by March 15.", "plans", "migrate the API to FastAPI by March 15"),
        ("I have a 2019 MacBook Pro with 16 GB of RAM.", "possessions", "2019 MacBook Pro"),
        ("My sister has lived in Lisbon for years.", "relations", "Lisbon"),
        ("I'm living in Berlin.", "location", "Berlin"),
        ("I prefer tabs over spaces.", "prefers", "tabs"),
        ("We can't use any paid services because of the budget.", "constraints",
         "can't use any paid services because of the budget"),
        ("Our app must run on Windows 10 machines.", "constraints", "app must run on Windows 10 machines"),
    ],
)  # fmt: skip
def test_durable_statements_about_the_subject_and_their_world_are_kept(text: str, attribute: str, value: str) -> None:
    assert (attribute, value) in [(a, v) for a, v, _s in _facts(text)]


def test_every_attribute_is_in_the_documented_vocabulary_and_no_statement_names_the_subject_twice() -> None:
    turns = [
        "I'm working at Acme Corp as a backend developer and I'm living in Berlin.",
        "We use PostgreSQL 15, Redis 7 and GitHub Actions.",
        "My favourite editor is Neovim. I'm planning to learn Rust next year.",
        "I think we should keep the old API until we're sure the new one works.",
        "We both agree that we need better tests.",
        "My team and I are moving the billing service to Kubernetes in Q3.",
        "I report directly to Dana Cole. I'm currently on CET. I prefer pytest for unit testing.",
        "The launch is due on May 5. Production is on AWS.",
    ]
    for attribute, value, statement in _facts(*turns):
        assert (
            attribute in ATTRIBUTES
            or attribute.startswith(("favorite_", "prefers_for_"))
            or attribute.endswith("_date")
        )
        assert len(re.findall(r"\bSam\b", statement)) == 1, statement
        assert not value.startswith(("'", "like ", "something")) and "`" not in value, value


# Found on the technical set (docs/benchmarks/extraction_sample_techchat.md): what the user pastes is not
# what the user says of themselves.
PASTED = '''I'm working at Initech. Could you look this over and tell me how to make it testable?

```python
def build_lenient_weakvaluedict(d):
    """Takes an input dictionary and replaces the values with weakrefs.

    We can't just use a WeakValueDictionary because many types (including int, str, etc.) can't be stored.
    Email addresses with header fields (``mailto:address@example.com?cc=copy@example.com``) are not recognized.
    """
    # My editor is Vim and we run PostgreSQL 9 in production.
    i = bisect_left(data, x)
    return d
```

And the traceback:

    Traceback (most recent call last):
    I am the first line of an indented block, not a statement.

We deploy all of it on AWS.'''


def test_code_and_indented_blocks_a_user_pastes_are_not_read_as_facts() -> None:
    facts = _facts(PASTED)
    assert {(a, v) for a, v, _ in facts} == {("employer", "Initech"), ("cloud_provider", "AWS")}, facts


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("Our whole infrastructure lives on Fly.io.", "cloud_provider", "Fly.io"),
        ("We use Node.js for our public API.", "uses", "Node.js"),
        ("My e-mail address is sam.lee@example.com.", "email", "sam.lee@example.com"),
    ],
)
def test_a_dot_inside_a_word_does_not_end_the_value(text: str, attribute: str, value: str) -> None:
    assert (attribute, value) in {(a, v) for a, v, _ in _facts(text)}, _facts(text)


# A known tool said in the speaker's own first-person statement fills its single-valued slot, however
# the sentence is built, so that a later value of that slot supersedes it; where the sentence names an
# old and a new value, the grammar ("from A to B", "replaced A with B", "B instead of A", "left A
# behind") says which is current. Someone else's tool is not the speaker's.
@pytest.mark.parametrize(
    ("text", "slot"),
    [
        ("Our main database is MySQL 8.0.", ("database", "MySQL 8.0")),
        ("We run PostgreSQL 15 on the live servers.", ("database", "PostgreSQL 15")),
        ("We upgraded the main database to PostgreSQL 16 on Monday.", ("database", "PostgreSQL 16")),
        ("My laptop boots Ubuntu 22.04.", ("operating_system", "Ubuntu 22.04")),
        ("My desktop is on Fedora 41 now instead of Debian 12.", ("operating_system", "Fedora 41")),
        ("We finished moving our servers from Azure to Hetzner.", ("cloud_provider", "Hetzner")),
        ("We replaced GitHub Actions with GitLab CI for our builds.", ("ci", "GitLab CI")),
        ("I switched from Vim to Emacs for editing.", ("editor", "Emacs")),
        ("Honestly, we deploy on Kubernetes now.", ("orchestration", "Kubernetes")),
    ],
)
def test_a_known_tool_in_a_first_person_statement_fills_its_slot(text: str, slot: tuple[str, str]) -> None:
    facts = _facts(text)
    assert slot in {(a, v) for a, v, _ in facts}, facts
    # The slot holds the current value only; no `about` restates the tool beside it.
    assert not [f for f in facts if f[0] == slot[0] and f[1] != slot[1]], facts
    assert not [f for f in facts if f[0] == "about"], facts


@pytest.mark.parametrize(
    "text",
    [
        "My coworker Casey's group still runs PostgreSQL 15.",
        "The data team runs MySQL 8.0, not us.",
        "Priya swears by Fedora 40 for her desktop.",
        "My manager uses Emacs for everything.",
        "We don't use MongoDB anymore.",
        "Should we move to PostgreSQL 16?",
    ],
)
def test_someone_elses_tool_or_a_denied_one_fills_no_slot_of_the_speaker(text: str) -> None:
    facts = _facts(text)
    assert not [f for f in facts if f[0] in {"database", "operating_system", "editor", "cloud_provider"}], facts


@pytest.mark.parametrize(
    "text",
    [
        "I just started a job at Acme Robotics.",
        "I started working at Acme Robotics last month.",
        "I left Vandelay Imports to join Acme Robotics.",
        "My current employer is Acme Robotics.",
        "My new employer is Acme Robotics.",
    ],
)
def test_a_change_of_job_said_in_other_words_fills_the_employer_slot(text: str) -> None:
    """Single-valued, so that the new employer supersedes the old one instead of standing beside it."""
    assert ("employer", "Acme Robotics") in {(a, v) for a, v, _ in _facts(text)}, _facts(text)


@pytest.mark.parametrize("text", ["I joined a gym downtown.", "I joined the call late.", "My employer seems great."])
def test_joining_something_else_names_no_employer(text: str) -> None:
    assert not [f for f in _facts(text) if f[0] == "employer"], _facts(text)
