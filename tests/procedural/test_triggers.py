"""The trigger schema: strict, bounded, with errors that point at the field; and its primitives."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import ValidationProblem
from procedural.regexes import MAX_INPUT_CHARS, UnsafePattern, regex_check, regex_search
from procedural.triggers import (
    Situation,
    ToolCondition,
    Trigger,
    status_matches,
    tool_event_normalise,
    trigger_evaluate,
    trigger_parse,
)


def _pointers(exc: ValidationProblem) -> list[str]:
    return [e["pointer"] for e in exc.errors]


def test_a_full_trigger_parses_and_round_trips() -> None:
    data = {
        "keywords": ["Rate  Limit", "429"],
        "regexes": [r"(?i)\bHTTP 429\b"],
        "tools": [{"name": "Billing_API", "status": [429, "5xx", "Timeout"]}, {"status": "error"}],
        "entities": ["Stripe"],
        "topics": ["billing"],
        "session_kinds": ["support"],
        "description": "  rate limited  ",
    }
    trigger, description = trigger_parse(data)
    assert description == "rate limited"
    assert trigger.keywords == ("rate limit", "429")
    assert trigger.tools == (
        ToolCondition(name="billing_api", statuses=("429", "5xx", "timeout")),
        ToolCondition(name="", statuses=("error",)),
    )
    stored = trigger.to_json()
    assert "description" not in stored
    assert Trigger.from_json(stored) == trigger
    assert trigger_parse(stored)[0] == trigger


@pytest.mark.parametrize(
    ("data", "pointer"),
    [
        ({"keywords": ["x"], "when": "always"}, "/trigger/when"),
        ({"tools": [{"name": "api", "code": 429}]}, "/trigger/tools/0/code"),
        ({"tools": [{"name": "api", "status": [99]}]}, "/trigger/tools/0/status/0"),
        ({"tools": [{}]}, "/trigger/tools/0"),
        ({"tools": [{"name": "two words"}]}, "/trigger/tools/0/name"),
        ({"keywords": "deploy"}, "/trigger/keywords"),
        ({"keywords": ["ok", ""]}, "/trigger/keywords/1"),
        ({"keywords": ["ok", "?!"]}, "/trigger/keywords/1"),
        ({"keywords": ["k"] * 51}, "/trigger/keywords"),
        ({"regexes": ["(a+)+$"]}, "/trigger/regexes/0"),
        ({"regexes": ["ok", "["]}, "/trigger/regexes/1"),
        ({"description": 5}, "/trigger/description"),
        ({}, "/trigger"),
    ],
)
def test_bad_triggers_are_refused_naming_the_field(data: dict, pointer: str) -> None:
    with pytest.raises(ValidationProblem) as info:
        trigger_parse(data)
    assert pointer in _pointers(info.value)


def test_every_error_of_a_trigger_is_reported_at_once() -> None:
    with pytest.raises(ValidationProblem) as info:
        trigger_parse({"regexes": ["(x*)*"], "extra": 1, "tools": [{"status": ["??"]}]})
    assert set(_pointers(info.value)) == {"/trigger/regexes/0", "/trigger/extra", "/trigger/tools/0/status/0"}


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a+)+$",  # nested quantifier
        r"(\w+\s?)*$",  # nested quantifier, the classic e-mail validator shape
        r"(a|aa)*b",  # overlapping alternation under a star
        r"(x{2,5}){2,5}",  # nested counted repeats
        r"(a)\1",  # backreference
        r"(?(1)a|b)",  # conditional group
        r"a{1,1000}",  # huge counted repeat
        r".*.*.*.*x",  # too many unbounded quantifiers
        "x" * 201,  # too long
        r"[ab]*a[ab]*b[ab]*c",  # polynomial backtracking: passes the static rules, caught by the probe
    ],
)
def test_dangerous_or_invalid_patterns_are_refused(pattern: str) -> None:
    with pytest.raises(UnsafePattern):
        regex_check(pattern)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"(?i)\bHTTP 429\b", "we got http 429 again"),
        (r"(?i)\b(error|exception)\b.{0,40}\blog\b", "an exception shows in the log"),
        (r"^deploy(ing)? to \w+$", "deploying to staging"),
        (r"[A-Z]{3}-\d{1,6}", "see ENG-1234"),
    ],
)
def test_ordinary_patterns_are_accepted_and_match(pattern: str, text: str) -> None:
    regex_check(pattern)
    assert regex_search(pattern, text) is True
    assert regex_search(pattern, "nothing relevant here") is False


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab(|)*+?.\\d{},1", min_size=1, max_size=12))
def test_any_accepted_pattern_matches_a_long_input_quickly(pattern: str) -> None:
    """The invariant the rules exist for: what is accepted cannot make matching slow."""
    try:
        regex_check(pattern)
    except UnsafePattern:
        return
    for text in ("a" * MAX_INPUT_CHARS, "ab" * MAX_INPUT_CHARS, "1a" * MAX_INPUT_CHARS):
        started = time.perf_counter()
        regex_search(pattern, text + "!")
        assert time.perf_counter() - started < 0.5


def test_matching_input_is_bounded_and_time_outs_count_as_no_match() -> None:
    far = "x" * (MAX_INPUT_CHARS + 10) + "needle"
    assert regex_search("needle", far) is False
    assert regex_search("needle", "a needle") is True
    # Unsafe on purpose (never accepted by regex_check): it must still come back, as None.
    started = time.perf_counter()
    assert regex_search(r"(\w+\s?)*$", "a" * (MAX_INPUT_CHARS - 1) + "!", timeout=0.01) is None
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("wanted", "status", "expected"),
    [
        ("429", "429", True),
        ("429", "500", False),
        ("4xx", "429", True),
        ("4xx", "503", False),
        ("error", "503", True),
        ("error", "timeout", True),
        ("error", "200", False),
        ("ok", "204", True),
        ("ok", "error", False),
        ("timeout", "timeout", True),
        ("429", "", False),
    ],
)
def test_status_conditions(wanted: str, status: str, expected: bool) -> None:
    assert status_matches(wanted, status) is expected


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        ({"name": "Billing_API", "status": 429}, ("billing_api", "429")),
        ({"tool": "search", "status": "OK"}, ("search", "ok")),
        ({"kind": "tool_result", "payload": {"tool": "billing_api", "status_code": 429}}, ("billing_api", "429")),
        ({"kind": "tool_result", "payload": {"name": "db", "error": "boom"}}, ("db", "error")),
        ({"kind": "tool_call", "payload": {"tool_name": "git_commit"}}, ("git_commit", "")),
        ({"payload": {"tool": "x", "ok": False}}, ("x", "error")),
        ({"kind": "tool_result", "payload": {}}, None),
    ],
)
def test_tool_events_in_both_shapes(event: dict, expected: tuple[str, str] | None) -> None:
    found = tool_event_normalise(event)
    assert (found and (found.name, found.status)) == expected


def _situation(**kw) -> Situation:
    base = {"message": "", "tool_events": (), "entities": (), "topics": (), "session_kind": ""}
    return Situation.build(**{**base, **kw})


def test_keywords_match_whole_words_case_insensitively() -> None:
    trigger, _ = trigger_parse({"keywords": ["log", "rate limit"]})
    assert [h.kind for h in trigger_evaluate(trigger, _situation(message="Please send the LOG."))] == ["keywords"]
    assert trigger_evaluate(trigger, _situation(message="I cannot login")) == []
    hit = trigger_evaluate(trigger, _situation(message="we hit the rate\nlimit again"))
    assert hit and '"rate limit"' in hit[0].why


def test_tool_condition_by_name_prefix_and_status() -> None:
    trigger, _ = trigger_parse({"tools": [{"name": "http_*", "status": [429]}]})
    assert trigger_evaluate(trigger, _situation(tool_events=[{"name": "http_get", "status": 429}]))
    assert not trigger_evaluate(trigger, _situation(tool_events=[{"name": "http_get", "status": 200}]))
    assert not trigger_evaluate(trigger, _situation(tool_events=[{"name": "ftp_get", "status": 429}]))
