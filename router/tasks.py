"""The router's scheduled work: watch each tenant's serving value model, decide on the one on trial,
then train its next one from the feedback (router.learning)."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from router.learning import value_model_train, value_model_trial, value_model_watch
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask


@shared_task(bind=True, base=TenantTask, name="router.tasks.value_model_update")
def value_model_update(self: Any, tenant: Tenant) -> str:
    """Roll the serving model back if it fell below the formula; decide on the model on trial, if any;
    else train the next version, which serves if its off-policy estimate beats the formula and goes on
    trial if it is not shown worse. Returns what happened, for the log."""
    with tenant_scope(tenant):
        watched = value_model_watch(tenant=tenant)
    with tenant_scope(tenant):
        trialled = value_model_trial(tenant=tenant)
    said = [f"serving v{watched.version}: {watched.state}" if watched is not None else "no model served"]
    if trialled is not None:
        # A model that just won its trial serves at least until the next run; none trains during a trial.
        said.append(f"trial of v{trialled.version}: {trialled.state}; no training this run")
        return "; ".join(said)
    with tenant_scope(tenant):
        trained = value_model_train(tenant=tenant)
    said.append(f"trained v{trained.version}: {trained.state}" if trained is not None else "not enough feedback")
    return "; ".join(said)


@shared_task(name="router.tasks.value_models")
def value_models() -> int:
    """On a schedule: one update per active tenant. Returns how many were enqueued."""
    tenants = list(Tenant.objects.filter(active=True).values_list("id", flat=True))
    for tenant_id in tenants:
        value_model_update.delay(str(tenant_id))
    return len(tenants)
