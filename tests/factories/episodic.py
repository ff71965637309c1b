"""Factories for episodic memory: sessions and raw episode rows (behaviour tests use episodes_append)."""

from __future__ import annotations

import factory

from episodic.models import Episode, EpisodeKind, Session
from episodic.validation import content_hash
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
