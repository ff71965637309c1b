"""Factories for episodic memory: sessions and raw episode rows (behaviour tests use episodes_append)."""

from __future__ import annotations

from typing import Any

import factory

from episodic.models import Episode, EpisodeKind, Session
from episodic.passages import passages_create
from episodic.validation import content_hash
from tenants.scope import tenant_scope
from tests.factories.tenants import TenantOwnedFactory


class SessionFactory(TenantOwnedFactory):
    class Meta:
        model = Session

    external_id = factory.Sequence(lambda n: f"session-{n}")
    subject = "user-1"


class EpisodeFactory(TenantOwnedFactory):
    class Meta:
        model = Episode

    session = factory.SubFactory(
        SessionFactory, tenant=factory.SelfAttribute("..tenant"), subject=factory.SelfAttribute("..subject")
    )
    subject = "user-1"
    kind = EpisodeKind.MESSAGE
    role = "user"
    content = factory.Sequence(lambda n: f"event number {n}")
    content_hash = factory.LazyAttribute(lambda o: content_hash(o.content, {}))

    @classmethod
    def _create(cls, model_class: Any, *args: Any, **kwargs: Any) -> Any:
        # Its passages too, as episodes_append writes them.
        episode = super()._create(model_class, *args, **kwargs)
        with tenant_scope(episode.tenant):
            passages_create(tenant=episode.tenant, episodes=[episode])
        return episode
