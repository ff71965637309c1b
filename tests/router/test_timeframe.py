"""Time in queries: phrases resolved against the request's `now`, a preference for history inside the
window, and facts read as they were at the end of a window that is over."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from router.timeframe import event_reference, timeframe
from tests.router.conftest import T0, believe, remember

NOW = datetime(2023, 5, 10, 15, 0, tzinfo=UTC)  # a Wednesday


def _d(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I do last week?", _d(2023, 5, 1), _d(2023, 5, 8)),
        ("and this week?", _d(2023, 5, 8), _d(2023, 5, 15)),
        ("What happened yesterday?", _d(2023, 5, 9), _d(2023, 5, 10)),
        ("Plans for today", _d(2023, 5, 10), _d(2023, 5, 11)),
        ("What did we discuss last month?", _d(2023, 4, 1), _d(2023, 5, 1)),
        ("Where did I live last year?", _d(2022, 1, 1), _d(2023, 1, 1)),
        ("What setback did Melanie face in October 2023?", _d(2023, 10, 1), _d(2023, 11, 1)),
        ("When did Melanie go camping in June?", _d(2022, 6, 1), _d(2022, 7, 1)),
        ("What did I say in May?", _d(2023, 5, 1), _d(2023, 6, 1)),
        ("How many times at the beach in 2023?", _d(2023, 1, 1), _d(2024, 1, 1)),
        ("What did we discuss on 8 May 2023?", _d(2023, 5, 8), _d(2023, 5, 9)),
        ("What did we discuss on May 8th?", _d(2023, 5, 8), _d(2023, 5, 9)),
        ("What did I do last weekend?", _d(2023, 5, 6), _d(2023, 5, 8)),
        ("What did I order 3 days ago?", NOW - timedelta(days=4), NOW - timedelta(days=2)),
        ("What did I say before 3 March 2023?", None, _d(2023, 3, 3)),
        ("Anything since April 2023?", _d(2023, 4, 1), None),
        ("What did I say after May 2?", _d(2023, 5, 3), None),
    ],
)
def test_time_phrases_resolve_against_now(query: str, start: datetime | None, end: datetime | None) -> None:
    frame = timeframe(query, NOW)
    assert frame is not None
    assert (frame.start, frame.end) == (start, end)


@pytest.mark.parametrize(
    "query", ["What is my phone number?", "before the move", "on 31 February 2023", "I may come", "in 1234 ways"]
)
def test_no_time_phrase_no_window(query: str) -> None:
    assert timeframe(query, NOW) is None


@pytest.mark.parametrize(
    ("query", "relation", "head"),
    [
        ("What did I do before the move?", "before", "move"),
        ("What changed after the wedding?", "after", "wedding"),
        ("How have I felt since the trip to Japan?", "since", "trip"),
        ("Where did I work until my sister's wedding in Porto", "until", "wedding"),
        ("What did we do after our big move we had planned", "after", "move"),
    ],
)
def test_an_event_named_after_before_since_until_is_read_with_its_head_noun(
    query: str, relation: str, head: str
) -> None:
    event = event_reference(query)
    assert event is not None
    assert (event.relation, event.head) == (relation, head)


@pytest.mark.parametrize(
    "query",
    [
        "What did I say before 3 March 2023?",  # a date: timeframe's
        "Think before you answer",  # a clause, not a noun phrase
        "before that",
        "after the end of the week",  # a time word, not an event
        "before moving",  # no determiner: too open to guess
        "What did I do last week?",
    ],
)
def test_no_event_phrase(query: str) -> None:
    assert event_reference(query) is None


def _classes(tenant, *, subject: str = "alice") -> None:
    """Two class lines either side of a move, the move, and a later mention of it."""
    remember(
        tenant, ["I took a pottery class downtown."], subject=subject, session=f"{subject}-jan", start=_d(2024, 1, 10)
    )
    remember(
        tenant, ["We moved to Lisbon last weekend."], subject=subject, session=f"{subject}-mar", start=_d(2024, 3, 1)
    )
    remember(
        tenant,
        ["I took a surfing class, my first class at the beach."],
        subject=subject,
        session=f"{subject}-apr",
        start=_d(2024, 4, 12),
    )
    remember(
        tenant,
        ["Since the move I cycle to work every day."],
        subject=subject,
        session=f"{subject}-jun",
        start=_d(2024, 6, 20),
    )


EVENT_NOW = "2024-12-01T00:00:00Z"


@pytest.mark.django_db
def test_history_before_an_event_comes_before_the_rest(tenant_a, ask) -> None:
    _classes(tenant_a)
    plain = ask(query="What class did I take?", max_tokens=2000, now=EVENT_NOW)
    assert _relevance(plain, "surfing") > _relevance(plain, "pottery")
    # The move's first mention (1 March) bounds the window; the later "since the move" does not.
    before = ask(query="What class did I take before the move?", max_tokens=2000, now=EVENT_NOW)
    assert _relevance(before, "pottery") > _relevance(before, "surfing")
    after = ask(query="What class did I take after the move?", max_tokens=2000, now=EVENT_NOW)
    assert _relevance(after, "surfing") > _relevance(after, "pottery")
    # Resolved against `now`: on 1 February the move had not been mentioned, so there is no window.
    early = ask(query="What class did I take before the move?", max_tokens=2000, now="2024-02-01T00:00:00Z")
    assert _relevance(early, "surfing") > _relevance(early, "pottery")


@pytest.mark.django_db
def test_facts_are_read_as_they_were_before_an_event(tenant_a, ask) -> None:
    (moved,) = remember(tenant_a, ["We moved to Lisbon last weekend."], session="s-mar", start=_d(2024, 3, 1))
    believe(tenant_a, attribute="city", value="Porto", statement="Alice lives in Porto.", observed_at=_d(2023, 6, 1))
    believe(
        tenant_a,
        attribute="city",
        value="Lisbon",
        statement="Alice lives in Lisbon.",
        sources=[moved],
        observed_at=moved.occurred_at,
    )
    then = ask(query="Where did Alice live before the move?", max_tokens=2000, now=EVENT_NOW)
    assert "Alice lives in Porto." in then["prompt"] and "Alice lives in Lisbon." not in then["prompt"]
    current = ask(query="Where does Alice live now?", max_tokens=2000, now=EVENT_NOW)
    assert "Alice lives in Lisbon." in current["prompt"]


@pytest.mark.django_db
def test_no_mention_of_the_event_no_window(tenant_a, ask) -> None:
    _classes(tenant_a)
    body = ask(query="What class did I take before the wedding?", max_tokens=2000, now=EVENT_NOW)
    assert _relevance(body, "surfing") > _relevance(body, "pottery")


@pytest.mark.django_db
@pytest.mark.isolation("POST /v1/context event lookup")
def test_another_subjects_or_tenants_event_is_not_used(tenant_a, tenant_b, ask) -> None:
    # Earlier moves of another subject of the tenant and of the same subject id in another tenant:
    # either as the bound would put all of alice's classes after the move.
    remember(tenant_a, ["We moved to Berlin."], subject="bob", session="bob-move", start=_d(2023, 5, 1))
    remember(tenant_b, ["We moved to Madrid."], subject="alice", session="b-move", start=_d(2023, 4, 1))
    _classes(tenant_a)
    before = ask(query="What class did I take before the move?", max_tokens=2000, now=EVENT_NOW)
    assert _relevance(before, "pottery") > _relevance(before, "surfing")


def _relevance(body: dict, word: str) -> float:
    (item,) = [i for i in body["layers"]["episodic"] if word in i["text"]]
    return float(item["score_parts"]["relevance"])


@pytest.mark.django_db
def test_history_inside_the_named_time_comes_before_the_rest(tenant_a, ask) -> None:
    remember(tenant_a, ["We hiked the ridge trail with the dogs."], session="s-mar", start=_d(2024, 3, 2, 10))
    remember(tenant_a, ["We hiked the canyon loop with the dogs."], session="s-may", start=_d(2024, 5, 11, 10))
    body = ask(query="Where did we hike with the dogs in May 2024?", max_tokens=2000, now="2024-12-01T00:00:00Z")
    assert _relevance(body, "canyon") > _relevance(body, "ridge")
    # Resolved against `now`: "last month" of 12 June 2024 is May.
    body = ask(query="Where did we hike with the dogs last month?", max_tokens=2000, now="2024-06-12T00:00:00Z")
    assert _relevance(body, "canyon") > _relevance(body, "ridge")


@pytest.mark.django_db
def test_facts_are_read_as_they_were_at_the_end_of_a_past_window(tenant_a, ask) -> None:
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice lives in Lisbon.", observed_at=T0)
    believe(
        tenant_a,
        attribute="city",
        value="Denver",
        statement="Alice lives in Denver.",
        observed_at=T0 + timedelta(days=400),
    )
    now = (T0 + timedelta(days=500)).isoformat()
    then = ask(query="Where did Alice live in 2024?", max_tokens=2000, now=now)
    assert "Lisbon" in then["prompt"] and "Denver" not in then["prompt"]
    current = ask(query="Where does Alice live?", max_tokens=2000, now=now)
    assert "Denver" in current["prompt"] and "Lisbon" not in current["prompt"]


@pytest.mark.django_db
def test_now_is_validated_and_kept_in_the_trace(api_a) -> None:
    bad = api_a.post("/v1/context", {"subject": "alice", "query": "x", "now": "yesterday"}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["pointer"] == "/now"
    good = api_a.post("/v1/context", {"subject": "alice", "query": "x", "now": "2024-01-02T03:04:05Z"}, format="json")
    trace = api_a.get(f"/v1/traces/{good.json()['trace_id']}").json()
    assert trace["request"]["now"].startswith("2024-01-02T03:04:05")
