"""The contexts of a fixed data set stay what they were: a guard for changes of the read path that are
meant to keep the ranking (how the pool is read, priced, packed and rendered). A change that moves
the ranking on purpose rewrites the expected file, and its commit says why:

    ENGRAM_WRITE_CONTEXTS=1 .venv/bin/pytest tests/router/test_context_stability.py

The data: the first sessions of LoCoMo's first conversation, written as episodes, with facts made of
the opening words of some of their turns (half of them sourced with their turn), and the conversation's first questions asked at
three budgets. LoCoMo's text may not be copied into the project, so the expected file holds, per
context, its token counts and, per item, its type, section, tokens, sources and a digest of its text.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.services import episodes_append
from episodic.tasks import embed_pending
from evaluation.recall import load_locomo, shared_dataset
from tenants.scope import tenant_scope
from tests.router.conftest import believe

pytestmark = pytest.mark.django_db

LOCOMO_FILE = shared_dataset("locomo", "locomo10.json")
EXPECTED = Path(__file__).parent / "fixtures" / "context_stability.json"
SESSIONS = 6
QUESTIONS = 10
BUDGETS = (300, 1000, 4000)
FACT_EVERY = 9


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _item(item: dict[str, Any]) -> list[Any]:
    sources = [f"{s['external_id']}@{s['span']}" for s in item["sources"]]
    return [item["type"], item["layer"], item["tokens"], sources, _digest(item["text"])]


def _contexts(tenant: Any, api: Any) -> dict[str, Any]:
    conversation = load_locomo(LOCOMO_FILE)[0]
    sessions = sorted({t.session for t in conversation.turns}, key=lambda s: int(s.rsplit("_", 1)[1]))[:SESSIONS]
    turns = [t for t in conversation.turns if t.session in sessions]
    items = [
        {
            "subject": "melanie",
            "session": t.session,
            "kind": "message",
            "role": t.speaker,
            "content": t.text,
            "occurred_at": t.when.isoformat(),
            "external_id": t.external_id,
        }
        for t in turns
    ]
    with tenant_scope(tenant):
        episodes = episodes_append(tenant=tenant, items=items)
    embed_pending(tenant=tenant, max_batches=10**6)
    for index, episode in enumerate(episodes[::FACT_EVERY]):
        believe(
            tenant,
            subject="melanie",
            attribute=f"turn_{index}",
            value=episode.external_id,
            statement=" ".join(episode.content.split()[:12]),
            sources=[episode] if index % 2 else [],
            observed_at=episode.occurred_at,
        )
    as_of = (turns[-1].when + timedelta(days=1)).isoformat()
    out: dict[str, Any] = {}
    for question in conversation.questions[:QUESTIONS]:
        for budget in BUDGETS:
            body = {"subject": "melanie", "query": question.text, "max_tokens": budget, "as_of": as_of}
            response = api.post("/v1/context", body, format="json")
            assert response.status_code == 200, response.content
            answer = response.json()
            out[f"{question.index}@{budget}"] = {
                "tokens": answer["tokens"],
                "prompt": _digest(answer["prompt"]),
                "items": {
                    layer: [_item(i) for i in (items["items"] if layer == "working" else items)]
                    for layer, items in sorted(answer["layers"].items())
                },
            }
    return out


@pytest.mark.skipif(not LOCOMO_FILE.is_file(), reason="the LoCoMo file is not on this machine")
def test_the_contexts_of_a_fixed_data_set_are_unchanged(tenant_a, api_a) -> None:
    got = _contexts(tenant_a, api_a)
    if os.environ.get("ENGRAM_WRITE_CONTEXTS"):
        EXPECTED.parent.mkdir(exist_ok=True)
        EXPECTED.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"wrote {EXPECTED}")
    expected = json.loads(EXPECTED.read_text())
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert got[key] == expected[key], key
