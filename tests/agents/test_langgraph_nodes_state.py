"""The memory nodes name what the graph state lacks instead of failing with a bare KeyError."""

from __future__ import annotations

import pytest
from engram_client import EngramClient
from engram_client.langgraph import load_memory, record_memory


@pytest.mark.parametrize("make_node", [load_memory, record_memory])
def test_a_state_without_subject_is_named_before_any_request(make_node: object) -> None:
    # Port 9 (discard): a request would fail with a transport error, not the error this test expects.
    with EngramClient("http://127.0.0.1:9", "ek_unused") as client:
        node = make_node(client)  # type: ignore[operator]
        with pytest.raises(ValueError, match="`subject`"):
            node({"messages": [{"role": "user", "content": "hi"}]})
