"""Updates win (issue 30, DESIGN invariants 8 and 9), through the public API with the real MiniLM: a
value said in one session and a different value of the same thing said in a later one; each session
ended and consolidated as the worker would, then GET /v1/facts and POST /v1/context. The newer value
is the only active one and is served first, the older is never served alone; a value said twice in
other words confirms one fact. The same through explicit writes (POST /v1/facts). The pairs are
bench/update_pairs.py, which bench/update_probe.py runs as a benchmark."""

from __future__ import annotations

from typing import Any

import pytest

from bench.update_pairs import (
    LEFT_BEHIND,
    SAID_PARAPHRASES,
    SAID_UPDATES,
    WRITTEN_PARAPHRASES,
    WRITTEN_UPDATES,
    mentions,
    probe_said,
    probe_written,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("minilm")]


def _id(pair: Any) -> str:
    return f"{pair.kind}:{getattr(pair, 'then', getattr(pair, 'new', ''))[:40]}"


@pytest.mark.parametrize("pair", SAID_UPDATES, ids=_id)
def test_a_value_said_later_replaces_the_earlier_one(api_a, end_session, pair) -> None:
    outcome = probe_said(api_a, pair, "u-said", end_session)
    assert outcome.updated, outcome.describe()
    assert outcome.served and not outcome.stale_only, outcome.describe()


@pytest.mark.parametrize("pair", LEFT_BEHIND, ids=_id)
def test_a_value_said_to_be_left_behind_is_no_longer_held(api_a, end_session, pair) -> None:
    outcome = probe_said(api_a, pair, "u-left", end_session)
    # A fact of the change itself ("replaced A with B") names both and stays; none holds the old alone.
    assert not any(mentions(v, pair.old) >= 0 and mentions(v, pair.new) < 0 for v in outcome.active), outcome.describe()
    assert outcome.served and not outcome.stale_only, outcome.describe()


@pytest.mark.parametrize("pair", SAID_PARAPHRASES, ids=_id)
def test_a_value_said_again_in_other_words_confirms_it(api_a, end_session, pair) -> None:
    outcome = probe_said(api_a, pair, "u-said", end_session)
    assert outcome.confirmed, outcome.describe()
    assert outcome.served or mentions(outcome.prompt, pair.old) >= 0, outcome.describe()


@pytest.mark.parametrize("pair", WRITTEN_UPDATES, ids=_id)
def test_a_different_value_written_later_supersedes(api_a, pair) -> None:
    outcome, actions = probe_written(api_a, pair, "u-written")
    assert actions == ["created", "superseded"], outcome.describe()
    assert outcome.updated and outcome.active == [pair.new], outcome.describe()
    assert outcome.served and not outcome.stale_only, outcome.describe()


@pytest.mark.parametrize("pair", WRITTEN_PARAPHRASES, ids=_id)
def test_the_same_value_written_in_another_form_confirms(api_a, pair) -> None:
    outcome, actions = probe_written(api_a, pair, "u-written")
    assert actions == ["created", "confirmed"], outcome.describe()
    assert outcome.confirmed and outcome.active == [pair.old], outcome.describe()


def test_a_value_corrected_through_patch_is_the_one_served(api_a) -> None:
    body = {"subject": "u-p", "entity": "u-p", "attribute": "phone", "value": "+44 20 7946 0001",
            "statement": "u-p's phone number is +44 20 7946 0001.", "confidence": 0.99}  # fmt: skip
    fact = api_a.post("/v1/facts", body, format="json").json()["fact"]
    patch = {"value": "+44 20 7946 0002", "statement": "u-p's phone number is +44 20 7946 0002.", "reason": "moved"}
    response = api_a.patch(f"/v1/facts/{fact['id']}", patch, format="json")
    assert response.status_code == 200 and response.json()["value"] == "+44 20 7946 0002"
    history = api_a.get(f"/v1/facts/{fact['id']}/history").json()["changes"]
    assert (history[-1]["kind"], history[-1]["old_value"]) == ("edited", "+44 20 7946 0001")
    query = {"subject": "u-p", "query": "What is my phone number?", "max_tokens": 1000}
    prompt = api_a.post("/v1/context", query, format="json").json()["prompt"]
    assert mentions(prompt, "+44 20 7946 0002") >= 0 and mentions(prompt, "+44 20 7946 0001") < 0
