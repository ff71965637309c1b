"""The value models' admin page (router.admin.ValueModelAdmin): a model on trial, with its trial's
estimate, and the switch, which ends a trial too."""

from __future__ import annotations

from typing import Any

import pytest

from router.models import ValueModel, ValueModelState
from router.value import model_trial_start
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _on_trial(tenant: Any) -> ValueModel:
    with tenant_scope(tenant):
        model = ValueModel.objects.create(
            tenant=tenant, version=2,
            estimate={"model": 1.07, "formula": 1.07, "low": -0.02, "high": 0.02, "contexts": 450},
        )  # fmt: skip
        model_trial_start(tenant=tenant, model=model)
        model.trial = {"model": 1.21, "formula": 1.05, "low": 0.03, "high": 0.29, "contexts": 180}
        model.save(update_fields=["trial"])
    return model


def test_the_admin_shows_a_model_on_trial_with_its_trial_estimate(op_client, tenant_a) -> None:
    _on_trial(tenant_a)
    page = op_client.get("/admin/router/valuemodel/").content.decode()
    assert "Trial" in page
    assert "+0.16 (+0.03 to +0.29), 180 contexts" in page


def test_switching_off_a_model_on_trial_ends_its_trial(op_client, tenant_a) -> None:
    model = _on_trial(tenant_a)
    tenant_a.refresh_from_db()
    assert tenant_a.trial_value_model == model.id
    op_client.post("/admin/router/valuemodel/", {"action": "switch_off", "_selected_action": [str(model.id)]})
    with tenant_scope(tenant_a):
        model.refresh_from_db()
    assert model.state == ValueModelState.DISABLED
    tenant_a.refresh_from_db()
    assert tenant_a.trial_value_model is None


def test_a_model_whose_trial_beat_the_formula_can_be_switched_on(op_client, tenant_a) -> None:
    model = _on_trial(tenant_a)
    op_client.post("/admin/router/valuemodel/", {"action": "switch_on", "_selected_action": [str(model.id)]})
    with tenant_scope(tenant_a):
        model.refresh_from_db()
    assert model.state == ValueModelState.SERVING
    tenant_a.refresh_from_db()
    assert tenant_a.serving_value_model == model.id and tenant_a.trial_value_model is None


def test_a_trial_whose_confidence_sequence_does_not_clear_the_formula_is_not_switched_on(op_client, tenant_a) -> None:
    """One look's interval above 0 is not enough where the trial logged its confidence sequence, which the
    job decides on: the hourly checks would otherwise switch on more often than the interval says."""
    model = _on_trial(tenant_a)
    with tenant_scope(tenant_a):
        model.trial = {**model.trial, "sequence_low": -0.05, "sequence_high": 0.37}
        model.save(update_fields=["trial"])
    page = op_client.get("/admin/router/valuemodel/").content.decode()
    assert "+0.16 (+0.03 to +0.29; sequence -0.05 to +0.37), 180 contexts" in page
    op_client.post("/admin/router/valuemodel/", {"action": "switch_on", "_selected_action": [str(model.id)]})
    with tenant_scope(tenant_a):
        model.refresh_from_db()
    assert model.state == ValueModelState.TRIAL
