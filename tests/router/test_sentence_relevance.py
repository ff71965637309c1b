"""History's pool reads each passage's best sentence cosine in its own statement (the sentence vectors
stored at write time, episodic.PassageSentence): a score part, `sentence`, that a tenant's learned
value reads. The formula never reads it, and a tenant that neither explores nor has a model leaves it
out, so that its contexts and traces are those of main (tests/router/test_context_stability.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.embedding import get_embedder
from episodic.passages import _sentences
from router.features import measured_parts
from router.models import ContextTrace
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.router.conftest import remember

pytestmark = pytest.mark.django_db

QUERY = "where is the spare key to the boathouse?"
LINES = [
    "We moved the billing service last spring. The migration took three weekends. "
    "The spare key to the boathouse is under the blue flowerpot. Marta wrote the runbook.",
    "The boathouse roof leaks when it rains.",
    "Nobody liked the new dashboard colours. We switched back to the old palette.",
]


def _explore(tenant: Tenant, chance: float) -> None:
    tenant.settings = {**tenant.settings, "exploration": chance}
    tenant.save(update_fields=["settings"])


def _ask(api: Any) -> dict[str, Any]:
    response = api.post("/v1/context", {"subject": "alice", "query": QUERY, "max_tokens": 1000}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_a_learning_tenants_history_lines_carry_their_best_sentence_cosine(tenant_a, api_a) -> None:
    _explore(tenant_a, 0.1)  # a tenant that explores keeps its sentences' vectors as it writes
    remember(tenant_a, LINES)
    body = _ask(api_a)
    embed = get_embedder().embed
    query = embed([QUERY])[0]
    lines = {i["text"].split(": ", 1)[1]: i for i in body["layers"]["episodic"]}
    assert set(lines) == set(LINES)
    for content, item in lines.items():
        sentences = [t for s, e in _sentences(content) if (t := content[s:e].strip())]
        parts = item["score_parts"]
        if len(sentences) > 1:
            best = max(_cosine(query, v) for v in embed(sentences))
            assert parts["sentence"] == pytest.approx(best, abs=1e-5)
            assert parts["sentence"] != parts["vector"]
        else:
            # One sentence: its vector is the passage's.
            assert parts["sentence"] == parts["vector"]
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.get(id=body["trace_id"])
    # Logged with the candidate, so a model trained on these logs reads it.
    assert "sentence" in measured_parts([*trace.offered, *trace.considered])


def test_the_sentences_ride_on_the_pools_statement(tenant_a, api_a) -> None:
    remember(tenant_a, LINES)
    _ask(api_a)  # warm: the first request of a process loads what later ones reuse
    with CaptureQueriesContext(connection) as formula:
        _ask(api_a)
    _explore(tenant_a, 0.1)
    with CaptureQueriesContext(connection) as learning:
        _ask(api_a)
    assert len(learning.captured_queries) == len(formula.captured_queries)


def test_a_tenant_that_does_not_learn_gets_no_sentence_part(tenant_a, api_a) -> None:
    remember(tenant_a, LINES)
    body = _ask(api_a)
    assert body["layers"]["episodic"]
    assert all("sentence" not in i["score_parts"] for i in body["layers"]["episodic"])
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.get(id=body["trace_id"])
    assert all("sentence" not in r["score_parts"] for r in [*trace.offered, *trace.considered])
