"""Entity aliases in the operator admin: an operator's alias moves the facts filed under it; learned
aliases are shown, read-only; another tenant's aliases are invisible."""

from __future__ import annotations

import pytest

from episodic.aliases import entity_alias_learn
from episodic.models import EntityAlias
from semantic.models import Fact, FactStatus
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _fact(tenant, entity: str) -> Fact:
    with tenant_scope(tenant):
        return fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                subject="",
                entity=entity,
                attribute="city",
                value="Paris",
                statement=f"{entity} lives in Paris.",
                category="other",
                confidence=0.9,
            ),
            actor=Actor(),
        ).fact


def test_an_operator_adds_an_alias_and_the_facts_follow(op_client, tenant_a) -> None:
    melanie, mel = _fact(tenant_a, "Melanie"), _fact(tenant_a, "Mel")
    response = op_client.post(
        "/admin/episodic/entityalias/add/", {"tenant": str(tenant_a.id), "alias": "Mel", "entity": "Melanie"}
    )
    assert response.status_code == 302, response.content
    with tenant_scope(tenant_a):
        row = EntityAlias.objects.for_tenant(tenant_a).get()
        assert (row.alias, row.entity, row.source, row.created_by) == ("mel", "melanie", "operator", "operator:op-a")
        assert Fact.objects.for_tenant(tenant_a).get(pk=mel.pk).status == FactStatus.RETRACTED
        assert Fact.objects.for_tenant(tenant_a).get(pk=melanie.pk).confirmation_count == 2
    refused = op_client.post(
        "/admin/episodic/entityalias/add/", {"tenant": str(tenant_a.id), "alias": "Melly", "entity": "mel"}
    )
    assert refused.status_code == 200 and "is itself an alias" in refused.content.decode()


def test_learned_aliases_are_listed_read_only_and_other_tenants_hidden(op_client, tenant_a, tenant_b) -> None:
    with tenant_scope(tenant_a):
        learned = entity_alias_learn(tenant=tenant_a, alias="Mel", entity="Melanie", subject="conv-1")
    with tenant_scope(tenant_b):
        theirs = entity_alias_learn(tenant=tenant_b, alias="Deb", entity="Deborah", subject="conv-9")
    listing = op_client.get("/admin/episodic/entityalias/")
    assert [row.pk for row in listing.context["cl"].result_list] == [learned.pk]
    page = op_client.get(f"/admin/episodic/entityalias/{learned.pk}/change/")
    assert page.status_code == 200 and 'name="entity"' not in page.content.decode()
    assert op_client.get(f"/admin/episodic/entityalias/{theirs.pk}/change/").status_code == 302
