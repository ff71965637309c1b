"""Memory control that learns (docs/router.md): exploration at the margin with logged chances, the
features a trace keeps, a tenant's value model trained from feedback, its off-policy estimate, the
switch and the rollback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from django.test import override_settings

from core.tokens import count_tokens
from router.exploration import MAX_CHANCE
from router.features import candidate_matrix, feature_names, logged_matrix, measured_parts
from router.learning import (
    PENALTIES,
    LoggedContext,
    fit,
    ips_used,
    loaded,
    off_policy_estimate,
    value_model_train,
    value_model_watch,
)
from router.models import ContextFeedback, ContextTrace, ValueModel, ValueModelState
from router.services import considered_dict, item_dict, traced_dict
from router.tasks import value_model_update
from router.types import Candidate
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.router.conftest import believe, remember

pytestmark = pytest.mark.django_db

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def _candidate(i: int, *, layer: str = "episodic", kind: str = "episode", value: float = 0.5) -> Candidate:
    return Candidate(
        id=f"{kind}:{i}",
        type=kind,
        layer=layer,  # type: ignore[arg-type]
        section="Relevant history" if layer == "episodic" else "Known facts",
        text=f"line number {i} about the printer",
        value=value,
        score=value * 2,
        score_parts={"relevance": value, "vector": value / 2, "passage": 10_000.0 + i},
        occurred_at=NOW - timedelta(days=i),
        requires=frozenset({"episode:0"}) if i == 3 else frozenset(),
    )


def test_a_candidates_row_is_the_same_from_the_pool_and_from_its_trace() -> None:
    pool = [_candidate(i) for i in range(6)] + [_candidate(9, layer="semantic", kind="fact", value=0.2)]
    served = [traced_dict(c, item_dict(c), propensity=1.0, now=NOW) for c in pool[:3]]
    left = [considered_dict(c, propensity=0.0, now=NOW) for c in pool[3:]]
    rows = served + left
    parts = measured_parts(rows)
    # Ids are no measurement: the passage part never becomes a column.
    assert parts == ["relevance", "vector"]
    names = feature_names(parts)
    from_pool = candidate_matrix(pool, names, tokens=[r["tokens"] for r in rows], now=NOW)
    np.testing.assert_allclose(from_pool, logged_matrix(rows, names), atol=1e-4)
    assert from_pool[-1, names.index("type:fact")] == 1.0
    assert from_pool[3, names.index("requires")] == 1.0


def _ctx(k: int, rng: np.random.Generator, *, informative: bool) -> LoggedContext:
    """A logged context of 8 candidates: the formula serves the 4 it values most, the 4th (a line) at the
    margin; the 5th (a fact) is its alternative, served now and then. The agent uses facts (when
    informative) or anything at random."""
    rows = []
    for i in range(8):
        fact = i in (1, 2, 4, 6)
        rows.append(
            {
                "id": f"c{k}:{i}",
                "type": "fact" if fact else "episode",
                "layer": "semantic" if fact else "episodic",
                "tokens": 20,
                "value": 1.0 - i / 10,
                "score": 1.0 - i / 10,
                "score_parts": {"relevance": float(rng.random())},
                "age_days": float(i),
            }
        )
    swapped = rng.random() < 0.2
    served = np.array([True, True, True, not swapped, swapped, False, False, False])
    propensity = np.array([1, 1, 1, 0.8, 0.2, 0, 0, 0], dtype=float)
    is_fact = np.array([r["type"] == "fact" for r in rows])
    used = (is_fact if informative else rng.random(8) < 0.4) & served
    return LoggedContext(f"t{k}", "heuristic-v1", rows, served, propensity, used, budget=4 * 21)


def test_the_estimate_finds_a_model_that_serves_what_agents_use_and_not_noise() -> None:
    rng = np.random.default_rng(7)
    contexts = [_ctx(k, rng, informative=True) for k in range(300)]
    fitted = fit(contexts[:200])
    assert fitted is not None
    estimate = off_policy_estimate(model=loaded(fitted, "value-v1"), contexts=contexts[200:])
    assert estimate.low > 0 and estimate.model > estimate.formula

    noise = [_ctx(k, rng, informative=False) for k in range(300)]
    fitted = fit(noise[:200])
    assert fitted is not None
    estimate = off_policy_estimate(model=loaded(fitted, "value-v2"), contexts=noise[200:])
    assert estimate.low <= 0


def test_doubly_robust_credits_an_item_never_served_what_the_formula_expects_of_it() -> None:
    """Three items, room for two: the logs served a (used) and b (not used); c was never served. A model
    that serves a and c is estimated at 1 by inverse propensity alone (c counts nothing, as the formula's
    b), and at 1 + expected(c) doubly robust; the formula's choice stays at what the logs measured."""
    rows = [
        {"id": name, "type": "episode", "layer": "episodic", "tokens": 9, "value": value, "score": value}
        for name, value in (("a", 0.9), ("b", 0.5), ("c", 0.2))
    ]
    ctx = LoggedContext(
        "t", "heuristic-v1", rows, np.array([True, True, False]), np.array([1.0, 1.0, 0.0]),
        np.array([True, False, False]), budget=20,
    )  # fmt: skip
    expected = np.array([0.6, 0.3, 0.25])
    model_choice = np.array([True, False, True])
    formula_choice = np.array([True, True, False])
    assert ips_used(model_choice, ctx) == ips_used(formula_choice, ctx) == 1.0
    assert ips_used(formula_choice, ctx, expected) == pytest.approx(1.0)
    assert ips_used(model_choice, ctx, expected) == pytest.approx(1.25)


def _explore(tenant: Tenant, chance: float) -> None:
    tenant.settings = {**tenant.settings, "exploration": chance}
    tenant.save(update_fields=["settings"])


def _setup(tenant: Tenant) -> list[str]:
    lines = [f"note {i}: the printer on floor {i} jams when tray {i % 3} is empty" for i in range(14)]
    episodes = remember(tenant, lines)
    facts = [
        believe(
            tenant,
            attribute=f"printer_{i}",
            value=f"tray {i}",
            statement=f"The printer on floor {i} takes paper from tray {i}.",
            observed_at=episodes[0].occurred_at,
        ).fact
        for i in range(4)
    ]
    return [f"fact:{f.id}" for f in facts]


def _ask(api, query: str, max_tokens: int = 400) -> dict:
    response = api.post("/v1/context", {"subject": "alice", "query": query, "max_tokens": max_tokens}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _served(body: dict) -> list[dict]:
    return [i for layer in ("procedural", "semantic", "episodic") for i in body["layers"][layer]]


def test_exploration_swaps_at_the_margin_within_budget_and_logs_every_chance(tenant_a, api_a) -> None:
    _setup(tenant_a)
    _explore(tenant_a, 0.5)  # above the bound: clipped to MAX_CHANCE
    swaps = 0
    for i in range(12):
        body = _ask(api_a, f"which tray does the printer on floor {i % 5} use?", max_tokens=300 + 20 * i)
        assert body["tokens"]["total"] <= body["budgets"]["memory"]
        assert count_tokens(body["prompt"]) == body["tokens"]["total"]
        with tenant_scope(tenant_a):
            trace = ContextTrace.objects.get(id=body["trace_id"])
        served = {r["id"]: r["propensity"] for r in trace.offered if r["layer"] != "working"}
        left = {r["id"]: r["propensity"] for r in trace.considered}
        assert set(served) == {i["id"] for i in _served(body)}
        chances = sorted(p for p in [*served.values(), *left.values()] if 0 < p < 1)
        if chances:
            # One margin item at 1 - chance, the fitting alternatives sharing the chance.
            assert max(chances) == pytest.approx(1 - MAX_CHANCE, abs=1e-6)
            assert sum(p for p in chances if p < 1 - MAX_CHANCE - 1e-9) == pytest.approx(MAX_CHANCE, abs=1e-5)
        swaps += any(0 < p < 1 - MAX_CHANCE - 1e-9 for p in served.values())
        # Seeded: the same stored state and request give the same context.
        again = _ask(api_a, f"which tray does the printer on floor {i % 5} use?", max_tokens=300 + 20 * i)
        assert again["prompt"] == body["prompt"]
    assert swaps >= 1


def test_without_exploration_every_served_item_is_logged_certain(tenant_a, api_a) -> None:
    _setup(tenant_a)
    body = _ask(api_a, "which tray does the printer on floor 2 use?")
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.get(id=body["trace_id"])
    assert trace.offered and all(r["propensity"] == 1.0 for r in trace.offered)
    assert all(r["propensity"] == 0.0 for r in trace.considered)
    assert "propensity" not in _served(body)[0]


def test_exploration_never_serves_a_superseded_fact(tenant_a, api_a) -> None:
    remember(tenant_a, [f"the printer on floor {i} jams" for i in range(10)])
    old = believe(tenant_a, attribute="printer_brand", value="Canon", statement="The office printer is a Canon.")
    believe(
        tenant_a,
        attribute="printer_brand",
        value="Brother",
        statement="The office printer is a Brother.",
        observed_at=datetime.now(UTC) + timedelta(minutes=1),
    )
    _explore(tenant_a, MAX_CHANCE)
    for i in range(10):
        body = _ask(api_a, f"what printer brand is on floor {i}?", max_tokens=250 + 30 * i)
        assert f"fact:{old.fact.id}" not in {item["id"] for item in _served(body)}


LEARNING = {"VALUE_MODEL_MIN_CONTEXTS": 20, "VALUE_MODEL_MIN_USED": 5, "VALUE_MODEL_MIN_MEASURED": 10}


def _engram(**extra):
    from django.conf import settings

    return override_settings(ENGRAM={**settings.ENGRAM, **extra})


def _feedback(api, body: dict, used: list[str]) -> None:
    response = api.post(f"/v1/context/{body['trace_id']}/feedback", {"used_item_ids": used}, format="json")
    assert response.status_code == 200, response.content


def _log(tenant: Tenant, contexts: list[LoggedContext]) -> None:
    """Traces and their feedback as the context API logs them (items with their chances of being served)."""
    with tenant_scope(tenant):
        for k, ctx in enumerate(contexts):
            offered = [{**r, "propensity": float(p)} for r, p, s in zip(ctx.rows, ctx.propensity, ctx.served, strict=True) if s]  # fmt: skip
            considered = [{**r, "propensity": float(p)} for r, p, s in zip(ctx.rows, ctx.propensity, ctx.served, strict=True) if not s]  # fmt: skip
            trace = ContextTrace.objects.create(
                tenant=tenant,
                subject="alice",
                policy="heuristic-v1",
                offered=offered,
                offered_ids=[r["id"] for r in offered],
                considered=considered,
                created_at=NOW + timedelta(seconds=k),
            )
            used = [r["id"] for r, u in zip(ctx.rows, ctx.used, strict=True) if u]
            ContextFeedback.objects.create(
                tenant=tenant,
                trace=trace,
                subject="alice",
                used_item_ids=used,
                offered_count=len(offered),
                used_count=len(used),
                created_at=NOW + timedelta(seconds=k),
            )


def test_the_job_trains_from_the_api_logs_and_serves_only_what_its_estimate_supports(tenant_a, api_a) -> None:
    facts = set(_setup(tenant_a))
    _explore(tenant_a, MAX_CHANCE)
    with _engram(**LEARNING):
        with tenant_scope(tenant_a):
            assert value_model_train(tenant=tenant_a) is None  # no feedback yet: the formula serves
        # The agent uses the facts it is given, never the lines.
        for i in range(30):
            body = _ask(api_a, f"printer floor {i % 7} tray {i % 3} paper", max_tokens=260 + 10 * (i % 9))
            _feedback(api_a, body, [item["id"] for item in _served(body) if item["id"] in facts])
        # The scheduled job users run: the watch, then the training.
        said = value_model_update.delay(str(tenant_a.id)).get()
        with tenant_scope(tenant_a):
            model = ValueModel.objects.get(version=1)
        assert model.trained_on["contexts"] + model.trained_on["held_out"] == 30
        assert model.estimate["contexts"] == model.trained_on["held_out"]
        assert model.estimate["doubly_robust"]["contexts"] == model.estimate["contexts"]
        assert model.trained_on["penalty"] in PENALTIES
        assert model.state == (ValueModelState.SERVING if model.estimate["low"] > 0 else ValueModelState.TRAINED)
        assert said == f"no model served; trained v1: {model.state}"
        assert "fact" in " ".join(model.features) and len(model.coefficients) == len(model.features)


def test_a_model_that_beats_the_formula_serves_and_rolls_back_when_it_stops_paying(tenant_a, api_a) -> None:
    facts = _setup(tenant_a)
    rng = np.random.default_rng(11)
    _log(tenant_a, [_ctx(k, rng, informative=True) for k in range(300)])
    with _engram(**LEARNING):
        with tenant_scope(tenant_a):
            model = value_model_train(tenant=tenant_a)
        assert model is not None and model.state == ValueModelState.SERVING, model and model.note
        tenant_a.refresh_from_db()
        assert tenant_a.serving_value_model == model.id
        body = _ask(api_a, "printer floor 3 tray 1 paper")
        with tenant_scope(tenant_a):
            trace = ContextTrace.objects.get(id=body["trace_id"])
        assert trace.policy == "heuristic-v1+value-v1"
        # The formula's value is kept beside the model's, for the next training.
        assert all("formula_value" in r["score_parts"] for r in trace.offered if r["layer"] != "working")
        assert body["tokens"]["total"] <= body["budgets"]["memory"]
        # Then the agent stops using anything: measured below the formula's interval, the model goes.
        for i in range(12):
            _feedback(api_a, _ask(api_a, f"printer floor {i % 7} paper tray"), [])
        with tenant_scope(tenant_a):
            value_model_watch(tenant=tenant_a)
            model.refresh_from_db()
        assert model.state == ValueModelState.ROLLED_BACK, model.measured
        assert model.measured == {"contexts": 12, "used_per_context": 0.0}
        tenant_a.refresh_from_db()
        assert tenant_a.serving_value_model is None
        body = _ask(api_a, "printer floor 3 tray 1 paper")
        with tenant_scope(tenant_a):
            assert ContextTrace.objects.get(id=body["trace_id"]).policy == "heuristic-v1"
    assert facts


def test_a_model_that_does_not_beat_the_formula_never_serves(tenant_a, api_a) -> None:
    _setup(tenant_a)
    _explore(tenant_a, MAX_CHANCE)
    rng = np.random.default_rng(3)
    with _engram(**LEARNING):
        for i in range(40):
            body = _ask(api_a, f"printer floor {i % 7} tray {i % 3} paper", max_tokens=260 + 10 * (i % 9))
            # Whatever the formula served first is what the agent uses: the formula is right.
            served = _served(body)
            _feedback(api_a, body, [served[0]["id"]] if served and rng.random() < 0.9 else [])
        with tenant_scope(tenant_a):
            model = value_model_train(tenant=tenant_a)
        assert model is not None and model.state == ValueModelState.TRAINED, model and model.note
        tenant_a.refresh_from_db()
        assert tenant_a.serving_value_model is None
