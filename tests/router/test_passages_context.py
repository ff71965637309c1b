"""A long episode reaches the context through the passage that answers the query: an excerpt marked
with "…", sourced with its episode and the span of the episode's content it serves."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.tokens import count_tokens
from tests.episodic.test_passages import long_text
from tests.router.conftest import T0, remember

pytestmark = pytest.mark.django_db

QUESTION = "Where is the spare key to the boathouse hidden?"


def _excerpts(body: dict) -> list[dict]:
    return [i for i in body["layers"]["episodic"] if "flowerpot" in i["text"]]


def test_the_passage_that_answers_is_served_as_an_excerpt_with_its_span(tenant_a, ask) -> None:
    content = long_text()
    (long,) = remember(tenant_a, [content], session="s-long")
    remember(
        tenant_a, ["I like sailing on weekends.", "The boat is green."], session="s-2", start=T0 + timedelta(days=1)
    )
    body = ask(query=QUESTION, max_tokens=600)
    assert body["tokens"]["total"] == count_tokens(body["prompt"]) <= 600
    served = _excerpts(body)
    assert served, body["prompt"]
    item = served[0]
    assert item["id"].startswith("passage:") and item["type"] == "episode"
    assert item["tokens"] < 200 < count_tokens(content)
    assert "…" in item["text"]
    (source,) = item["sources"]
    assert source["episode_id"] == long.id and source["external_id"] == "s-long:0"
    start, end = source["span"]
    assert 0 <= start < end <= len(content)
    quoted = " ".join(content[start:end].split())
    assert quoted in item["text"] and "flowerpot" in quoted
    # The rest of the episode is not pasted in.
    assert count_tokens(body["prompt"]) < count_tokens(content)


def test_a_short_episode_is_served_whole_with_a_span_over_all_of_it(tenant_a, ask) -> None:
    (episode,) = remember(tenant_a, ["The spare key is under the blue flowerpot."])
    body = ask(query=QUESTION, max_tokens=500)
    (item,) = _excerpts(body)
    assert item["id"] == f"episode:{episode.id}" and "…" not in item["text"]
    assert item["sources"][0]["span"] == [0, len(episode.content)]


@pytest.mark.parametrize("budget", [120, 250, 400, 900, 2000])
def test_long_episodes_keep_the_budget_and_the_answer_is_deterministic(tenant_a, ask, budget: int) -> None:
    for day in range(3):
        remember(tenant_a, [long_text(2), "ok"], session=f"s-{day}", start=T0 + timedelta(days=day))
    first = ask(query=QUESTION, max_tokens=budget, budgets={"reserve": 0})
    assert first["tokens"]["total"] == count_tokens(first["prompt"]) <= budget
    again = ask(query=QUESTION, max_tokens=budget, budgets={"reserve": 0})
    assert again["prompt"] == first["prompt"]


@pytest.mark.isolation("context")
def test_another_tenants_long_episodes_never_reach_the_context(tenant_a, tenant_b, api_a) -> None:
    remember(tenant_b, [long_text()], subject="alice")
    remember(tenant_a, ["We sail on Sundays."], subject="alice")
    body = api_a.post("/v1/context", {"subject": "alice", "query": QUESTION}, format="json").json()
    assert "flowerpot" not in str(body) and "boathouse" not in str(body)


def test_a_context_from_stored_lines_is_the_one_computed_without_them(tenant_a, ask) -> None:
    from episodic.models import Passage
    from tenants.scope import tenant_scope

    remember(tenant_a, [long_text(), "The boathouse key?  Under the\tflowerpot.", "ok"], session="s-long")
    remember(tenant_a, ["I like sailing on weekends.", ("Marta", "The boat is green.")], start=T0 + timedelta(days=1))

    def shown(body: dict) -> tuple:
        return body["prompt"], body["tokens"], {k: v for k, v in body["layers"].items() if k != "working"}

    stored = [shown(ask(query=q, max_tokens=b)) for q in (QUESTION, "what colour is Marta's boat?") for b in (150, 900)]
    with tenant_scope(tenant_a):
        Passage.objects.for_tenant(tenant_a).update(line="", line_tokens=0, index_terms=None)
    computed = [
        shown(ask(query=q, max_tokens=b)) for q in (QUESTION, "what colour is Marta's boat?") for b in (150, 900)
    ]
    assert computed == stored
    assert any("…" in item["text"] for _, _, layers in stored for item in layers["episodic"])


def test_the_pool_reads_a_passages_content_only_where_its_line_or_its_terms_are_not_stored(tenant_a) -> None:
    """The router makes a hit's line from the line stored with the passage and its relevance from the
    stored term counts: the content of those passages is not read (the pool is 250 rows at 1,000
    tokens); a passage without a stored line, or without stored index terms, brings its content."""
    from episodic.models import Passage
    from router.candidates.episodic import episode_hits
    from tenants.scope import tenant_scope

    lines = ["The boathouse key is under the flowerpot.", "The boat is green.", "I keep the oars in the shed."]
    remember(tenant_a, lines)
    with tenant_scope(tenant_a):
        passages = {p.content: p.id for p in Passage.objects.for_tenant(tenant_a)}
        Passage.objects.for_tenant(tenant_a).filter(id=passages[lines[1]]).update(line="", line_tokens=0)
        Passage.objects.for_tenant(tenant_a).filter(id=passages[lines[2]]).update(index_terms=None)
        pool = episode_hits(
            tenant=tenant_a,
            query="where is the boathouse key, the boat and the oars?",
            subject="alice",
            until=None,
            limit=10,
            embedding=None,
            exclude_ids=[],
        )
    content = dict(zip(pool.passage_id, pool.content, strict=True))
    assert content == {passages[lines[0]]: "", passages[lines[1]]: lines[1], passages[lines[2]]: lines[2]}


@pytest.mark.parametrize("cleared", [{"line": "", "line_tokens": 0}, {"index_terms": None}])
def test_a_context_is_the_same_where_some_passages_lines_or_terms_are_not_stored(tenant_a, ask, cleared) -> None:
    from episodic.models import Passage
    from tenants.scope import tenant_scope

    remember(tenant_a, [long_text(), "The boathouse key?  Under the\tflowerpot.", "ok"], session="s-long")
    remember(tenant_a, ["I like sailing on weekends.", ("Marta", "The boat is green.")], start=T0 + timedelta(days=1))
    asked = [(q, b) for q in (QUESTION, "what colour is Marta's boat?") for b in (150, 900)]

    def shown(body: dict) -> tuple:
        return body["prompt"], body["tokens"], {k: v for k, v in body["layers"].items() if k != "working"}

    stored = [shown(ask(query=q, max_tokens=b)) for q, b in asked]
    with tenant_scope(tenant_a):
        ids = sorted(Passage.objects.for_tenant(tenant_a).values_list("id", flat=True))
        Passage.objects.for_tenant(tenant_a).filter(id__in=ids[::2]).update(**cleared)
    assert [shown(ask(query=q, max_tokens=b)) for q, b in asked] == stored
