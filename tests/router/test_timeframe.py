"""Time in queries: phrases resolved against the request's `now`, a preference for history inside the
window, and facts read as they were at the end of a window that is over."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from router.timeframe import timeframe
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
