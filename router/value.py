"""The value a candidate is packed by: the formula's (router.candidates), or a tenant's learned model's
where one has earned the switch (router.learning). One interface, the formula its fallback."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache

import numpy as np
from django.utils import timezone

from router.features import FORMULA_PART, PART_PREFIX, candidate_matrix
from router.models import ValueModel, ValueModelState
from router.packing import RANKED_LAYERS
from router.pricing import line_tokens
from router.types import Candidate, LayerCandidates
from tenants.models import Tenant

SENTENCE_FEATURE = f"{PART_PREFIX}sentence"
BESIDE_FEATURES = (f"{PART_PREFIX}beside", f"{PART_PREFIX}session_best")


@dataclasses.dataclass(frozen=True)
class LoadedModel:
    id: uuid.UUID
    label: str
    features: tuple[str, ...]
    weights: np.ndarray
    intercept: float
    means: np.ndarray
    scales: np.ndarray

    @classmethod
    def of(cls, row: ValueModel) -> LoadedModel:
        return cls(
            id=row.id,
            label=row.label,
            features=tuple(row.features),
            weights=np.asarray(row.coefficients, dtype=np.float64),
            intercept=float(row.intercept),
            means=np.asarray(row.means, dtype=np.float64),
            scales=np.asarray(row.scales, dtype=np.float64),
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The chance of use of each row of `x` (columns `features`)."""
        if x.shape[0] == 0:
            return np.zeros(0)
        z = ((x - self.means) / self.scales) @ self.weights + self.intercept
        out: np.ndarray = 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))
        return out


# A model row never changes but for its state, so a loaded one is kept by id; which one serves is read
# from the tenant row of each request.
@lru_cache(maxsize=256)
def _load(tenant_id: uuid.UUID, model_id: uuid.UUID) -> LoadedModel | None:
    row = ValueModel.objects.filter(id=model_id).first()
    return LoadedModel.of(row) if row is not None else None


def serving_model(*, tenant: Tenant) -> LoadedModel | None:
    if tenant.serving_value_model is None or not tenant.config.learned_value:
        return None
    return _load(tenant.id, tenant.serving_value_model)


def trial_model(*, tenant: Tenant) -> LoadedModel | None:
    """The tenant's value model on trial (router.trial), when its settings let one serve a share."""
    if tenant.trial_value_model is None or not tenant.config.learned_value or tenant.config.trial_share <= 0:
        return None
    return _load(tenant.id, tenant.trial_value_model)


def reads_sentences(*, tenant: Tenant) -> bool:
    """Whether history's pool reads each passage's best sentence cosine (the score part `sentence`): for
    a tenant that explores (its traces are what a model learns from) or whose serving model or model on
    trial reads it. The formula never does, so a tenant that does neither pays nothing for it and its
    traces are what they were."""
    return _reads_any(tenant, (SENTENCE_FEATURE,))


def reads_beside(*, tenant: Tenant) -> bool:
    """Whether history's hits carry where they sit (the score parts `beside` and `session_best`,
    router.candidates.episodic.beside_relevance): as reads_sentences, for a tenant that explores or whose
    serving model or model on trial reads them."""
    return _reads_any(tenant, BESIDE_FEATURES)


def _reads_any(tenant: Tenant, features: tuple[str, ...]) -> bool:
    """A column a learned value may read is computed for a tenant that explores (its traces are what a model
    learns from) or whose serving model or model on trial reads one of `features`."""
    if tenant.config.exploration > 0:
        return True
    models = (serving_model(tenant=tenant), trial_model(tenant=tenant))
    return any(m is not None and any(f in m.features for f in features) for m in models)


def pool_of(offered: LayerCandidates) -> list[Candidate]:
    return [c for layer in RANKED_LAYERS for c in offered.of(layer)]


def revalue(*, model: LoadedModel, pool: Sequence[Candidate], now: datetime) -> None:
    """Give each candidate the model's chance of use as its value, scored in one call. The value it had
    first (the formula's) is kept among its score parts, also when a second model revalues it."""
    if not pool:
        return
    x = candidate_matrix(pool, model.features, tokens=[line_tokens(c) for c in pool], now=now)
    for item, value in zip(pool, model.predict(x).tolist(), strict=True):
        item.score_parts.setdefault(FORMULA_PART, round(item.value, 6))
        item.value = value


def model_serve(*, tenant: Tenant, model: ValueModel) -> None:
    """Make `model` the tenant's serving model (any other serving one retires; its trial, if it was on
    one, ends)."""
    now = timezone.now()
    ValueModel.objects.filter(state=ValueModelState.SERVING).exclude(id=model.id).update(
        state=ValueModelState.RETIRED, state_changed_at=now
    )
    model.state, model.state_changed_at = ValueModelState.SERVING, now
    model.save(update_fields=["state", "state_changed_at", "note", "trial"])
    Tenant.objects.filter(id=tenant.id).update(serving_value_model=model.id)
    tenant.serving_value_model = model.id
    _end_trial(tenant=tenant, model=model)


def model_trial_start(*, tenant: Tenant, model: ValueModel) -> None:
    """Put `model` on trial: from now on it serves the tenant's trial share of the requests (router.trial)."""
    now = timezone.now()
    ValueModel.objects.filter(state=ValueModelState.TRIAL).exclude(id=model.id).update(
        state=ValueModelState.TRAINED, state_changed_at=now, note="trial ended: another model went on trial"
    )
    model.state, model.state_changed_at = ValueModelState.TRIAL, now
    model.save(update_fields=["state", "state_changed_at", "note", "trial"])
    Tenant.objects.filter(id=tenant.id).update(trial_value_model=model.id)
    tenant.trial_value_model = model.id


def _end_trial(*, tenant: Tenant, model: ValueModel) -> None:
    Tenant.objects.filter(id=tenant.id, trial_value_model=model.id).update(trial_value_model=None)
    if tenant.trial_value_model == model.id:
        tenant.trial_value_model = None


def model_stop(*, tenant: Tenant, model: ValueModel, state: str, note: str) -> None:
    """Switch `model` off (rolled back by the watch, disabled by an operator, its trial ended): the
    formula serves."""
    model.state, model.state_changed_at, model.note = state, timezone.now(), note
    model.save(update_fields=["state", "state_changed_at", "note", "trial"])
    Tenant.objects.filter(id=tenant.id, serving_value_model=model.id).update(serving_value_model=None)
    if tenant.serving_value_model == model.id:
        tenant.serving_value_model = None
    _end_trial(tenant=tenant, model=model)
