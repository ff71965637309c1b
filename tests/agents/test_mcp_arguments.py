"""Bad tool arguments get one sentence naming the argument and what it should be, not pydantic's
report (which names an internal model, the error code and a link)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from engram_client.mcp import EngramTools, build_server
from mcp.client import Client

# Nothing listens here: every call below is refused before it would reach Engram.
NOWHERE = "http://127.0.0.1:9"


def _call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    async def scenario() -> tuple[bool, str]:
        async with Client(build_server(EngramTools(NOWHERE, "eng_0_unused"))) as client:
            result = await client.call_tool(name, arguments)
            return bool(result.is_error), result.content[0].text

    return anyio.run(scenario)


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("recall", {"subject": "u", "max_tokens": "lots"}, "recall: max_tokens must be a whole number."),
        ("recall", {}, "recall: subject is required."),
        ("remember", {"subject": "u", "content": 5}, "remember: content must be a string."),
        (
            "record_outcome",
            {"trace_id": "t", "outcome": "great"},
            "record_outcome: outcome must be 'success', 'failure' or 'unknown'.",
        ),
        (
            "correct_fact",
            {"fact_id": "x", "value": "v", "was_wrong": "maybe"},
            "correct_fact: was_wrong must be true or false.",
        ),
        ("remember", {"subject": "u", "content": "c", "entities": "db"}, "remember: entities must be a list."),
        ("record_outcome", {"trace_id": "t", "signal": "high"}, "record_outcome: signal must be a number."),
    ],
)
def test_a_bad_argument_is_one_sentence_naming_it(tool: str, arguments: dict[str, Any], said: str) -> None:
    is_error, text = _call(tool, arguments)
    assert is_error
    assert text == said


def test_several_bad_arguments_are_named_in_one_sentence() -> None:
    is_error, text = _call("remember", {"content": 5})
    assert is_error
    assert text == "remember: subject is required; content must be a string."
