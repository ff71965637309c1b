"""Factories for semantic memory tests: facts, and the sessions and episodes their provenance needs
(kept here so that these tests do not depend on the episodic app's factories)."""

from __future__ import annotations

import hashlib

import factory

from episodic.models import Episode, EpisodeKind, Session
from semantic.models import Cardinality, Fact, FactStatus
from semantic.normalise import value_key
from tests.factories.tenants import TenantOwnedFactory


class SemanticSessionFactory(TenantOwnedFactory):
    class Meta:
        model = Session

    external_id = factory.Sequence(lambda n: f"sem-session-{n}")
    subject = "user-1"


class SemanticEpisodeFactory(TenantOwnedFactory):
    class Meta:
        model = Episode

    session = factory.SubFactory(
        SemanticSessionFactory, tenant=factory.SelfAttribute("..tenant"), subject=factory.SelfAttribute("..subject")
    )
    subject = "user-1"
    kind = EpisodeKind.MESSAGE
    role = "user"
    content = factory.Sequence(lambda n: f"message number {n}")
    content_hash = factory.LazyAttribute(lambda o: hashlib.sha256(o.content.encode()).hexdigest())


class FactFactory(TenantOwnedFactory):
    """A raw row, bypassing the merge: for scale and search tests. Behaviour tests use fact_upsert."""

    class Meta:
        model = Fact

    subject = "user-1"
    entity = "user-1"
    attribute = factory.Sequence(lambda n: f"attribute_{n}")
    value = factory.Sequence(lambda n: f"value {n}")
    value_key = factory.LazyAttribute(lambda o: value_key(o.value))
    statement = factory.LazyAttribute(lambda o: f"The {o.attribute} of {o.entity} is {o.value}.")
    category = "other"
    cardinality = Cardinality.SINGLE
    confidence = 0.8
    status = FactStatus.ACTIVE
