"""POST /v1/context end to end: the contract, budgets, layers, provenance, facts' status, as_of."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection

from core.tokens import count_tokens
from episodic.scratchpad import scratchpad_put
from episodic.services import episodes_append
from procedural.seeds import seed_procedures
from router.models import ContextTrace
from tenants.scope import tenant_scope
from tests.router.conftest import T0, believe, remember

pytestmark = pytest.mark.django_db

HISTORY = [
    "My printer keeps jamming on the second tray",
    ("assistant", "Try removing the second tray and cleaning the rollers"),
    "We moved the office to Lisbon last spring",
    "I adopted a dog called Biscuit",
    ("assistant", "Congratulations on Biscuit!"),
    "The VPN drops every evening around six",
]


def _items(body: dict[str, Any], layer: str) -> list[dict[str, Any]]:
    return body["layers"][layer]


def test_context_answers_the_contract_with_exact_token_accounting(tenant_a, ask) -> None:
    episodes = remember(tenant_a, HISTORY)
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.", sources=episodes[3:4]
    )
    body = ask(query="what is the name of my dog?", max_tokens=2000)
    assert set(body) >= {"trace_id", "prompt", "tokens", "layers"}
    assert set(body["tokens"]) == {"total", "procedural", "semantic", "episodic", "working"}
    assert set(body["layers"]) == {"procedural", "semantic", "episodic", "working"}
    assert body["tokens"]["total"] == count_tokens(body["prompt"]) <= 2000
    # The fact's source line answers as well and is served as itself (it is worth more than the fact,
    # router.candidates.semantic.settle_facts); asked of the facts alone, the fact is served.
    facts = ask(query="what is the name of my dog?", max_tokens=2000, layers=["semantic"])
    fact = _items(facts, "semantic")[0]
    assert fact["type"] == "fact" and "Biscuit" in fact["text"]
    assert [s["episode_id"] for s in fact["sources"]] == [episodes[3].id]
    assert fact["sources"][0]["external_id"] == "s-1:3" and fact["sources"][0]["session"] == "s-1"
    for item in _items(body, "episodic"):
        assert set(item) >= {"id", "type", "text", "tokens", "score", "score_parts", "sources"}
        assert item["tokens"] == count_tokens(f"- {item['text']}")
        if item["type"] == "episode":
            assert item["sources"][0]["episode_id"] == int(item["id"].split(":")[1])
            assert item["sources"][0]["external_id"].startswith("s-1:")
            assert item["sources"][0]["occurred_at"] is not None
    assert "## Known facts" in facts["prompt"] and "1 Mar 2024" in body["prompt"]


def test_an_event_said_by_a_chosen_fact_is_not_repeated(tenant_a, ask) -> None:
    episodes = remember(tenant_a, HISTORY)
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.", sources=episodes[3:4]
    )
    body = ask(query="dog Biscuit", max_tokens=4000)
    episodic_ids = {i["id"] for i in _items(body, "episodic")}
    fact_served = bool(_items(body, "semantic"))
    # The fact or the line it came from, whichever is worth more, never both.
    assert fact_served != (f"episode:{episodes[3].id}" in episodic_ids)
    assert f"episode:{episodes[4].id}" in episodic_ids
    assert body["prompt"].count("Biscuit") == 2


def test_a_tool_result_of_the_session_brings_the_procedure_it_triggers(tenant_a, ask) -> None:
    # The recent events are read with their payloads: a rate-limited tool call calls for backing off.
    with tenant_scope(tenant_a):
        seed_procedures(tenant=tenant_a)
        episodes_append(
            tenant=tenant_a,
            items=[
                {
                    "subject": "alice",
                    "session": "s-9",
                    "kind": "tool_result",
                    "role": "tool",
                    "content": "crm lookup failed",
                    "payload": {"tool": "crm_api", "status_code": 429},
                    "occurred_at": T0.isoformat(),
                }
            ],
        )
    body = ask(session="s-9", query="look up her account again")
    assert [i["text"] for i in _items(body, "procedural")][0].startswith("Back off exponentially after HTTP 429")
    other = ask(session="s-1", query="look up her account again")
    assert not any("HTTP 429" in i["text"] for i in _items(other, "procedural"))


def test_sections_are_labelled_and_in_layer_order(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY[:3], session="old")
    remember(tenant_a, ["the VPN is down again"], session="now", start=T0 + timedelta(days=3))
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice's office is in Lisbon.")
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="now", document={"plan": "reset the VPN", "step": 2})
    body = ask(query="printer office VPN", session="now", max_tokens=4000)
    prompt = body["prompt"]
    positions = [
        prompt.index(h) for h in ("## Known facts", "## Recent activity", "## Relevant history", "## Working notes")
    ]
    assert positions == sorted(positions)
    assert "- plan: reset the VPN" in prompt
    assert body["layers"]["working"]["document"] == {"plan": "reset the VPN", "step": 2}
    assert body["layers"]["working"]["complete"] is True
    recent = [i for i in _items(body, "episodic") if "the VPN is down again" in i["text"]]
    assert len(recent) == 1
    assert "### 4 Mar 2024\n" in prompt


def test_superseded_and_pending_facts_are_never_offered(tenant_a, ask) -> None:
    believe(tenant_a, attribute="city", value="Porto", statement="Alice lives in Porto.", observed_at=T0)
    believe(
        tenant_a,
        attribute="city",
        value="Lisbon",
        statement="Alice lives in Lisbon.",
        observed_at=T0 + timedelta(days=30),
    )
    believe(tenant_a, attribute="phone", value="555", statement="Alice's phone is 555.", confidence=0.2)
    body = ask(query="where does Alice live? phone", max_tokens=4000)
    texts = " ".join(i["text"] for i in _items(body, "semantic"))
    assert "Lisbon" in texts
    assert "Porto" not in body["prompt"] and "555" not in body["prompt"]


def test_as_of_gives_the_facts_believed_then(tenant_a, ask) -> None:
    believe(tenant_a, attribute="city", value="Porto", statement="Alice lives in Porto.", observed_at=T0)
    believe(
        tenant_a,
        attribute="city",
        value="Lisbon",
        statement="Alice lives in Lisbon.",
        observed_at=T0 + timedelta(days=30),
    )
    then = ask(query="where does Alice live?", as_of=(T0 + timedelta(days=10)).isoformat())
    assert "Porto" in then["prompt"] and "Lisbon" not in then["prompt"]
    now = ask(query="where does Alice live?")
    assert "Lisbon" in now["prompt"] and "Porto" not in now["prompt"]


def test_as_of_hides_later_events(tenant_a, ask) -> None:
    remember(tenant_a, ["the printer broke"], session="early")
    remember(tenant_a, ["the printer works again"], session="late", start=T0 + timedelta(days=20))
    body = ask(query="printer", as_of=(T0 + timedelta(days=5)).isoformat())
    assert "the printer broke" in body["prompt"] and "works again" not in body["prompt"]


def test_same_state_and_request_give_the_same_context(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY)
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice's office is in Lisbon.")
    first = ask(query="printer trouble in Lisbon", max_tokens=1000)
    second = ask(query="printer trouble in Lisbon", max_tokens=1000)
    assert first["trace_id"] != second["trace_id"]
    first.pop("trace_id"), second.pop("trace_id")
    assert first == second


def test_a_subject_with_no_memories_gets_an_empty_valid_context(tenant_a, ask) -> None:
    body = ask(subject="nobody", query="anything at all?", session="unknown-session")
    assert body["prompt"] == ""
    assert body["tokens"] == {"total": 0, "procedural": 0, "semantic": 0, "episodic": 0, "working": 0}
    assert body["layers"]["semantic"] == [] and body["layers"]["episodic"] == []
    assert body["layers"]["working"]["document"] == {}


def test_small_budget_is_honoured_and_reported(tenant_a, ask) -> None:
    remember(tenant_a, [f"note {i}: the quarterly report mentions revenue growth in region {i}" for i in range(60)])
    body = ask(query="revenue growth", max_tokens=200)
    assert body["tokens"]["total"] == count_tokens(body["prompt"]) <= 100
    assert body["budgets"]["reserve"] == 100 and body["budgets"]["memory"] == 100
    assert 0 < len(_items(body, "episodic")) < 60


def test_layers_restrict_what_is_loaded(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY)
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.")
    body = ask(query="Biscuit dog", layers=["semantic"])
    assert body["tokens"]["episodic"] == 0 and _items(body, "episodic") == []
    assert _items(body, "semantic")


def test_xml_format_uses_tags(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY)
    body = ask(query="printer", format="xml")
    assert body["prompt"].startswith("<relevant_history>\n[1 Mar 2024]\n- ")
    assert body["prompt"].endswith("</relevant_history>")
    assert body["tokens"]["total"] == count_tokens(body["prompt"])


def test_every_request_leaves_a_trace(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY)
    body = ask(query="printer", session="s-1", agent="helpdesk")
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.for_tenant(tenant_a).get(id=body["trace_id"])
    assert trace.subject == "alice" and trace.session == "s-1" and trace.agent == "helpdesk"
    assert trace.request["query"] == "printer"
    assert trace.total_tokens == body["tokens"]["total"]
    assert trace.offered_ids == [
        i["id"] for layer in ("procedural", "semantic", "episodic") for i in body["layers"][layer]
    ]
    assert all({"id", "tokens", "score_parts"} <= set(item) for item in trace.offered)
    assert trace.latency_ms > 0
    assert trace.policy == "heuristic-v1"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"max_tokens": 10}, "/max_tokens"),
        ({"max_tokens": 10_000_000}, "/max_tokens"),
        ({"layers": ["dreams"]}, "/layers/0"),
        ({"layers": []}, "/layers"),
        ({"budgets": {"episodic": -5}}, "/budgets/episodic"),
        ({"budgets": {"dreams": 5}}, "/budgets/dreams"),
        ({"budgets": {"reserve": 3990}, "max_tokens": 4000}, "/budgets/reserve"),
        ({"format": "yaml"}, "/format"),
        ({"as_of": "yesterday"}, "/as_of"),
        ({"subject": ""}, "/subject"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(api_a, tenant_a, body, pointer) -> None:
    response = api_a.post("/v1/context", {"subject": "alice", "query": "x", **body}, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert pointer in [e["pointer"] for e in response.json()["errors"]]
    with tenant_scope(tenant_a):
        assert not ContextTrace.objects.for_tenant(tenant_a).exists()


def test_missing_subject_is_a_problem(api_a) -> None:
    response = api_a.post("/v1/context", {"query": "x"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/subject"


@pytest.mark.isolation("context")
def test_another_tenants_memories_never_reach_the_context(tenant_a, tenant_b, api_a, api_b) -> None:
    remember(tenant_b, ["the secret launch code is tangerine", "and the backup code is mandarin"], subject="alice")
    believe(tenant_b, attribute="code", value="tangerine", statement="Alice's launch code is tangerine.")
    mine = api_a.post("/v1/context", {"subject": "alice", "query": "launch code tangerine"}, format="json").json()
    assert mine["prompt"] == "" and "tangerine" not in str(mine)
    # The same session name in both tenants: the recent events and the neighbouring turns stay apart.
    remember(tenant_a, ["my launch code is lemon"], subject="alice", session="s-1")
    body = {"subject": "alice", "session": "s-1", "query": "launch code tangerine"}
    mine = api_a.post("/v1/context", body, format="json").json()
    assert "lemon" in mine["prompt"]
    assert "tangerine" not in str(mine) and "mandarin" not in str(mine)
    theirs = api_b.post("/v1/context", body, format="json").json()
    assert "tangerine" in theirs["prompt"] and "mandarin" in theirs["prompt"] and "lemon" not in str(theirs)


def test_context_request_query_count_is_pinned(tenant_a, api_a, django_assert_max_num_queries) -> None:
    remember(tenant_a, HISTORY * 5)
    remember(tenant_a, ["the printer again", ("assistant", "which tray?")], session="s-2", start=T0 + timedelta(days=2))
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice's office is in Lisbon.", sources=[])
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-2", document={"plan": "fix the printer"})
    api_a.post("/v1/context", {"subject": "alice", "query": "warm up"}, format="json")
    # The request's savepoint (1), the key's lookup with its prefix, then the prefix cleared and the
    # tenant entered (2), the service's savepoint (1), recent events (1), the ranked facts with their scan
    # settings (1), their sources (1), procedures (1), history's pool: three channels fused, scored rows
    # and their sessions' summaries, with the scan settings (1), neighbours (1), the answering lines'
    # pairwise similarity, for update labels (1), the subject's slot, shared, with the setting that the
    # commit need not wait for the disk (1: tenants.locks), the trace (2: its row and then its items,
    # which in production the writer adds after the answer), the service's savepoint released, the
    # scope's end and the request's savepoint released (3).
    with django_assert_max_num_queries(17):
        response = api_a.post(
            "/v1/context", {"subject": "alice", "query": "printer in Lisbon", "session": "s-2"}, format="json"
        )
    assert response.status_code == 200
    assert response.json()["layers"]["episodic"]


def test_a_context_request_commits_its_trace_without_waiting_for_the_disk(tenant_a, api_a) -> None:
    remember(tenant_a, HISTORY)
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "on"
    response = api_a.post("/v1/context", {"subject": "alice", "query": "printer"}, format="json")
    assert response.status_code == 200
    # The test's transaction holds the request's: the setting is what the request committed with.
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone()[0] == "off"


def test_fact_sources_come_oldest_first_and_only_from_the_tenant(tenant_a, tenant_b) -> None:
    from semantic.selectors import fact_sources

    episodes = remember(tenant_a, HISTORY)
    # Named out of order: the sources come back in the order the episodes happened.
    result = believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog.", sources=[episodes[4], episodes[3]]
    )
    theirs = believe(tenant_b, attribute="pet", value="Rex", statement="Bob has a dog.", subject="bob")
    with tenant_scope(tenant_a):
        got = fact_sources(tenant=tenant_a, fact_ids=[result.fact.id, theirs.fact.id])
    assert [(r.episode_id, r.external_id, r.occurred_at, r.session) for r in got[result.fact.id]] == [
        (e.id, e.external_id, e.occurred_at, "s-1") for e in (episodes[3], episodes[4])
    ]
    assert got[theirs.fact.id] == []


def test_the_callers_own_transcript_is_not_offered_again(tenant_a, ask) -> None:
    remember(tenant_a, [f"turn {i} about the printer tray" for i in range(5)], session="s-9")
    body = ask(session="s-9", query="printer tray", max_tokens=2000, transcript_turns=3)
    served = {i["text"] for i in body["layers"]["episodic"]}
    assert served == {"user: turn 0 about the printer tray", "user: turn 1 about the printer tray"}
    everything = ask(session="s-9", query="printer tray", max_tokens=2000)
    assert len(everything["layers"]["episodic"]) == 5


def test_transcript_turns_is_validated(api_a) -> None:
    response = api_a.post("/v1/context", {"subject": "alice", "transcript_turns": -1}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/transcript_turns"


def test_a_context_request_looks_up_the_querys_aliases_once(tenant_a, api_a) -> None:
    """History's search and the facts' both match the query's entities under every name they go by:
    the aliases are looked up once for both (they were looked up by each, the same statement twice)."""
    from django.test.utils import CaptureQueriesContext

    from episodic.aliases import entity_alias_put

    remember(tenant_a, ["Melanie painted a sunrise over the lake", "Mel adopted a dog called Biscuit"])
    believe(tenant_a, attribute="pet", value="Biscuit", statement="Melanie has a dog called Biscuit.", sources=[])
    with tenant_scope(tenant_a):
        entity_alias_put(tenant=tenant_a, alias="Mel", entity="Melanie")
    with CaptureQueriesContext(connection) as queries:
        response = api_a.post("/v1/context", {"subject": "alice", "query": "What did Mel paint?"}, format="json")
    assert response.status_code == 200
    assert "sunrise" in response.json()["prompt"]
    lookups = [query["sql"] for query in queries if "FROM episodic_entityalias" in query["sql"]]
    assert len(lookups) == 1, lookups


def test_a_context_request_encodes_its_trace_and_answer_without_the_standard_librarys_json(
    tenant_a, api_a, monkeypatch
) -> None:
    """The trace's items (200 left out, about 85 KB) and the answer are encoded by orjson (core.jsonb,
    api.renderers): json's encoder took 2-4 ms of a request's CPU for them. What is stored and answered
    is the same JSON (tests/core/test_jsonb.py)."""
    import json

    remember(tenant_a, HISTORY * 3)
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice's office is in Lisbon.", sources=[])
    api_a.post("/v1/context", {"subject": "alice", "query": "warm up"}, format="json")  # imports done
    body = json.dumps({"subject": "alice", "query": "printer in Lisbon"})
    encoded: list[type] = []
    encode = json.JSONEncoder.encode

    def counted(self: json.JSONEncoder, o: Any) -> str:
        encoded.append(type(o))
        return encode(self, o)

    monkeypatch.setattr(json.JSONEncoder, "encode", counted)
    response = api_a.post("/v1/context", body, content_type="application/json")
    assert response.status_code == 200
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.get(id=response.json()["trace_id"])
    assert trace.offered and trace.considered is not None and trace.request["query"] == "printer in Lisbon"
    assert encoded == []


def test_a_context_request_reads_only_the_neighbouring_turns_it_does_not_hold(tenant_a, api_a, monkeypatch) -> None:
    """The turns beside the best hits are offered as neighbours unless history's pool has them already,
    and most of them it has (on LoCoMo 56 of 77 rows a request at 1,000 tokens, 69 of 77 at 4,000): those
    are not read at all, rather than read with their episodes and sessions and then passed over."""
    import router.candidates.episodic as episodic_candidates

    pools: list[set[int]] = []
    read: list[int] = []
    hits, neighbours = episodic_candidates.episode_hits, episodic_candidates.passage_rows_neighbours

    def pool(**kwargs: Any) -> Any:
        found = hits(**kwargs)
        pools.append(set(found.passage_id))
        return found

    def beside(**kwargs: Any) -> Any:
        rows = neighbours(**kwargs)
        read.extend(row.passage_id for _, row in rows)
        return rows

    monkeypatch.setattr(episodic_candidates, "episode_hits", pool)
    monkeypatch.setattr(episodic_candidates, "passage_rows_neighbours", beside)
    remember(tenant_a, HISTORY * 5)
    response = api_a.post("/v1/context", {"subject": "alice", "query": "printer in Lisbon"}, format="json")
    assert response.status_code == 200
    (held,) = pools
    assert held and not held.intersection(read), sorted(held.intersection(read))
