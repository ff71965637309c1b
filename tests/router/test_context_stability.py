"""The contexts of a fixed data set stay what they were: a guard for changes of the read path that are
meant to keep the ranking (how the pool is read, priced, packed and rendered). A change that moves
the ranking on purpose rewrites the expected file, and its commit says why:

    ENGRAM_WRITE_CONTEXTS=1 .venv/bin/pytest tests/router/test_context_stability.py

The data: the first sessions of LoCoMo's first conversation, written as episodes, with facts made of
the opening words of some of their turns (half of them sourced with their turn), a long note per session
restating its first turns (served in excerpts), summaries of every second session, and the conversation's first questions asked at
three budgets. LoCoMo's text may not be copied into the project, so the expected file holds, per
context, its token counts and, per item, its type, section, tokens, sources and a digest of its text;
and digests of what is not text: the served items' ids, scores, values and score parts in their order,
and the trace's rows (served and left out) as stored, with the ids of rows made relative to the
tenant's first (ids of other tests' rows come before them) and facts named by their attribute.
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from episodic.models import Episode, Passage, Session
from episodic.services import episodes_append, session_summary_set
from episodic.tasks import embed_pending
from evaluation.recall import load_locomo, shared_dataset
from router.models import ContextTrace
from semantic.models import Fact
from tenants.scope import tenant_scope
from tests.router.conftest import believe

pytestmark = pytest.mark.django_db

LOCOMO_FILE = shared_dataset("locomo", "locomo10.json")
EXPECTED = Path(__file__).parent / "fixtures" / "context_stability.json"
SESSIONS = 6
QUESTIONS = 10
BUDGETS = (300, 1000, 4000)
FACT_EVERY = 9
NOTE_TURNS = 8


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _item(item: dict[str, Any]) -> list[Any]:
    sources = [f"{s['external_id']}@{s['span']}" for s in item["sources"]]
    return [item["type"], item["layer"], item["tokens"], sources, _digest(item["text"])]


class _Ids:
    """Row ids as stable names: episodes and passages relative to the tenant's first, facts by attribute."""

    def __init__(self, tenant: Any) -> None:
        with tenant_scope(tenant):
            self.episode = min(Episode.objects.values_list("id", flat=True))
            self.passage = min(Passage.objects.values_list("id", flat=True))
            self.facts = {str(i): a for i, a in Fact.objects.values_list("id", "attribute")}

    def item(self, item_id: str) -> str:
        kind, _, key = item_id.partition(":")
        if kind == "episode":
            return f"episode:{int(key) - self.episode}"
        if kind == "passage":
            return f"passage:{int(key) - self.passage}"
        if kind == "fact":
            return f"fact:{self.facts[key]}"
        return item_id

    def parts(self, parts: dict[str, float]) -> dict[str, float]:
        shift = {"passage": self.passage, "neighbour_of": self.passage, "earlier_than": self.episode}
        return {k: v - shift[k] if k in shift else v for k, v in parts.items()}

    def row(self, row: dict[str, Any]) -> dict[str, Any]:
        out = {**row, "id": self.item(row["id"]), "score_parts": self.parts(row["score_parts"])}
        if "sources" in row:
            out["sources"] = [{**s, "episode_id": s["episode_id"] - self.episode} for s in row["sources"]]
        return out


def _numbers(ids: _Ids, layers: dict[str, Any]) -> str:
    """The served items' ids, scores, values and score parts, in their order."""
    served = [
        [ids.item(i["id"]), i["score"], i["value"], ids.parts(i["score_parts"])]
        for layer, items in sorted(layers.items())
        for i in (items["items"] if layer == "working" else items)
    ]
    return _digest(json.dumps(served, sort_keys=True))


def _trace(tenant: Any, ids: _Ids, trace_id: str) -> dict[str, str]:
    """The trace's rows as stored (router.services.trace_items_record), served and left out. The left-out
    rows are ordered by value, then id: facts of the same value by their random ids, so here by name."""
    with tenant_scope(tenant):
        trace = ContextTrace.objects.get(id=trace_id)
    considered = sorted((ids.row(r) for r in trace.considered), key=lambda r: (-r["value"], r["id"]))
    return {
        "offered": _digest(json.dumps([ids.row(r) for r in trace.offered], sort_keys=True)),
        "considered": _digest(json.dumps(considered, sort_keys=True)),
    }


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
    # Per session, a note that restates its first turns (long enough to be served as excerpts), and on
    # every second session a summary (served as `summary:<session>`).
    for session in sessions:
        said = [t for t in turns if t.session == session]
        items.append(
            {
                "subject": "melanie",
                "session": session,
                "kind": "message",
                "role": "notes",
                "content": " ".join(t.text for t in said[:NOTE_TURNS]),
                "occurred_at": (said[-1].when + timedelta(seconds=30)).isoformat(),
                "external_id": f"{session}:notes",
            }
        )
    with tenant_scope(tenant):
        episodes = episodes_append(tenant=tenant, items=items)
        for index, session in enumerate(sessions[::2]):
            said = [t for t in turns if t.session == session]
            session_summary_set(
                tenant=tenant,
                session_id=Session.objects.get(external_id=session).id,
                summary=f"summary {index}: " + " ".join(w for t in said[:3] for w in t.text.split()[:8]),
            )
    embed_pending(tenant=tenant, max_batches=10**6)
    for index, episode in enumerate(episodes[: len(turns)][::FACT_EVERY]):
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
    ids = _Ids(tenant)
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
                "numbers": _numbers(ids, answer["layers"]),
                "trace": _trace(tenant, ids, answer["trace_id"]),
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
