"""The fact review queue and the conflict audit: every decision goes through semantic's services and is
logged as a FactChange with the operator as actor; another tenant's ids change nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from semantic.models import ActorType, Fact, FactChange, FactChangeKind, FactStatus
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.scope import tenant_scope
from tests.factories.admin import Memory, page_body

pytestmark = pytest.mark.django_db

REVIEW = "/admin/semantic/fact/review/"
AUDIT = "/admin/semantic/factchange/"


def _pending(tenant: Any, subject: str, attribute: str, value: str) -> Fact:
    with tenant_scope(tenant):
        result = fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                subject=subject,
                entity=subject,
                attribute=attribute,
                value=value,
                statement=f"{subject} {attribute} is {value}.",
                category="preferences",
                confidence=0.2,
            ),
            actor=Actor(type=ActorType.CONSOLIDATION),
        )
    assert result.action == "pending"
    return result.fact


def _get(tenant: Any, fact_id: Any) -> Fact:
    with tenant_scope(tenant):
        return Fact.objects.get(pk=fact_id)


def _changes(tenant: Any, **filters: Any) -> list[FactChange]:
    with tenant_scope(tenant):
        return list(FactChange.objects.filter(**filters).order_by("id"))


def test_review_queue_shows_pending_facts_with_their_source_episodes(
    op_client: Client, memory_a: Memory, memory_b: Memory
) -> None:
    response = op_client.get(REVIEW)
    body = page_body(response)
    assert response.status_code == 200
    assert str(memory_a.pending_fact.id) in body
    assert "I think I work for Acme Corp now." in body  # the source episode's text
    assert memory_a.sessions[2].external_id in body  # and its session
    assert str(memory_b.pending_fact.id) not in body
    assert "bob" not in body


def test_approving_a_corrected_fact_logs_the_edit_and_the_decision_with_the_operator(
    op_client: Client, memory_a: Memory
) -> None:
    fact_id = memory_a.pending_fact.id
    response = op_client.post(
        REVIEW, {"decision": "approve", "fact": [str(fact_id)], f"value-{fact_id}": "Acme Corporation"}
    )
    assert response.status_code == 302
    fact = _get(memory_a.tenant, fact_id)
    assert (fact.status, fact.value) == (FactStatus.ACTIVE, "Acme Corporation")
    kinds = [(c.kind, c.actor_type, c.actor_id) for c in _changes(memory_a.tenant, fact_id=fact_id)]
    assert (FactChangeKind.EDITED, ActorType.OPERATOR, "op-a") in kinds
    assert (FactChangeKind.REVIEW_APPROVED, ActorType.OPERATOR, "op-a") in kinds


def test_rejecting_many_at_once_retracts_each_and_logs_each(op_client: Client, memory_a: Memory) -> None:
    tenant = memory_a.tenant
    others = [_pending(tenant, "alice", f"hobby_{i}", f"chess {i}") for i in range(3)]
    ids = [memory_a.pending_fact.id, *(f.id for f in others)]
    op_client.post(REVIEW, {"decision": "reject", "fact": [str(i) for i in ids]})
    for fact_id in ids:
        assert _get(tenant, fact_id).status == FactStatus.RETRACTED
        rejected = _changes(tenant, fact_id=fact_id, kind=FactChangeKind.REVIEW_REJECTED)
        assert [(c.actor_type, c.actor_id) for c in rejected] == [(ActorType.OPERATOR, "op-a")]
    assert "No fact is waiting for review." in op_client.get(REVIEW).content.decode()


def test_review_post_with_another_tenants_fact_changes_nothing(
    op_client: Client, memory_a: Memory, memory_b: Memory
) -> None:
    op_client.post(REVIEW, {"decision": "approve", "fact": [str(memory_b.pending_fact.id)]})
    assert _get(memory_b.tenant, memory_b.pending_fact.id).status == FactStatus.PENDING_REVIEW
    assert _changes(memory_b.tenant, actor_type=ActorType.OPERATOR) == []


def test_review_post_without_a_decision_changes_nothing(op_client: Client, memory_a: Memory) -> None:
    op_client.post(REVIEW, {"decision": "maybe", "fact": [str(memory_a.pending_fact.id), "not-a-uuid"]})
    assert _get(memory_a.tenant, memory_a.pending_fact.id).status == FactStatus.PENDING_REVIEW


def test_changelist_actions_approve_only_pending_facts(op_client: Client, memory_a: Memory) -> None:
    ids = [memory_a.pending_fact.id, memory_a.new_fact.id]
    response = op_client.post(
        "/admin/semantic/fact/",
        {"action": "approve_selected", "_selected_action": [str(i) for i in ids]},
        follow=True,
    )
    messages = [str(m) for m in response.context["messages"]]
    assert "Approved: 1." in messages
    assert any("not pending review" in m for m in messages)
    assert _get(memory_a.tenant, memory_a.pending_fact.id).status == FactStatus.ACTIVE
    assert _changes(memory_a.tenant, fact_id=memory_a.new_fact.id, actor_type=ActorType.OPERATOR) == []


def test_retract_action_keeps_the_history(op_client: Client, memory_a: Memory) -> None:
    op_client.post(
        "/admin/semantic/fact/", {"action": "retract_selected", "_selected_action": [str(memory_a.new_fact.id)]}
    )
    assert _get(memory_a.tenant, memory_a.new_fact.id).status == FactStatus.RETRACTED
    assert [c.kind for c in _changes(memory_a.tenant, fact_id=memory_a.new_fact.id)][-1] == FactChangeKind.RETRACTED


def test_revert_reinstates_the_superseded_value_through_the_merge_and_is_logged(
    op_client: Client, memory_a: Memory
) -> None:
    url = f"{AUDIT}{memory_a.supersession_id}/revert/"
    response = op_client.post(url, {"post": "yes", "next": f"{AUDIT}?entity=alice"})
    assert response.status_code == 302 and response["Location"].endswith("?entity=alice")
    with tenant_scope(memory_a.tenant):
        active = Fact.objects.get(entity="alice", attribute="city", status=FactStatus.ACTIVE)
        assert active.value == "Paris"
        assert Fact.objects.get(pk=memory_a.new_fact.id).status == FactStatus.SUPERSEDED
    reverts = _changes(memory_a.tenant, kind=FactChangeKind.REVERTED)
    assert reverts and {(c.actor_type, c.actor_id) for c in reverts} == {(ActorType.OPERATOR, "op-a")}


def test_one_revert_click_writes_one_audit_row(op_client: Client, memory_a: Memory) -> None:
    before = {c.pk for c in _changes(memory_a.tenant)}
    op_client.post(f"{AUDIT}{memory_a.supersession_id}/revert/", {"post": "yes"})
    written = [c for c in _changes(memory_a.tenant) if c.pk not in before]
    assert [(c.kind, c.old_value, c.new_value, c.actor_id) for c in written] == [
        (FactChangeKind.REVERTED, "Berlin", "Paris", "op-a")
    ]
    assert "newer value" not in written[0].reason
    listed = op_client.get(f"{AUDIT}?kind__exact=reverted").context["cl"].result_list
    assert [c.pk for c in listed] == [written[0].pk]


def test_the_revert_button_asks_for_confirmation_first(op_client: Client, memory_a: Memory) -> None:
    url = f"{AUDIT}{memory_a.supersession_id}/revert/"
    listed = op_client.get(AUDIT).content.decode()
    assert f'href="{url}"' in listed  # a link to the confirmation, not a submit button
    page = op_client.get(url, HTTP_REFERER=f"http://testserver{AUDIT}?entity=alice")
    body = page.content.decode()
    assert page.status_code == 200
    assert "Paris" in body and "Berlin" in body and 'name="post" value="yes"' in body
    assert f'value="{AUDIT}?entity=alice"' in body  # where to go back to
    assert _changes(memory_a.tenant, kind=FactChangeKind.REVERTED) == []
    done = op_client.post(url, {"post": "yes", "reason": "wrong extraction", "next": f"{AUDIT}?entity=alice"})
    assert done.status_code == 302 and done["Location"] == f"{AUDIT}?entity=alice"
    [row] = _changes(memory_a.tenant, kind=FactChangeKind.REVERTED)
    assert "wrong extraction" in row.reason
    off_site = op_client.post(url, {"post": "yes", "next": "https://evil.example/"})
    assert off_site["Location"] == AUDIT


def test_the_revert_action_confirms_before_it_reverts(op_client: Client, memory_a: Memory) -> None:
    data = {"action": "revert_selected", "_selected_action": [str(memory_a.supersession_id)]}
    asked = op_client.post(AUDIT, data)
    assert asked.status_code == 200 and 'name="post" value="yes"' in asked.content.decode()
    assert _changes(memory_a.tenant, kind=FactChangeKind.REVERTED) == []
    op_client.post(AUDIT, {**data, "post": "yes"})
    assert len(_changes(memory_a.tenant, kind=FactChangeKind.REVERTED)) == 1


def test_a_supersession_already_reverted_is_not_offered_and_a_second_revert_says_it_changed_nothing(
    op_client: Client, memory_a: Memory
) -> None:
    url = f"{AUDIT}{memory_a.supersession_id}/revert/"
    assert f'href="{url}"' in op_client.get(AUDIT).content.decode()
    op_client.post(url, {"post": "yes"})
    before = {c.pk for c in _changes(memory_a.tenant)}
    assert f'href="{url}"' not in op_client.get(AUDIT).content.decode()
    page = op_client.get(url).content.decode()
    assert "already the current value" in page and 'name="post" value="yes"' not in page
    again = op_client.post(url, {"post": "yes"}, follow=True)
    said = [str(m) for m in again.context["messages"]]
    assert not any(m.startswith("Reverted") for m in said), said
    assert any("Nothing to revert" in m and "Paris" in m for m in said), said
    action = {"action": "revert_selected", "_selected_action": [str(memory_a.supersession_id)], "post": "yes"}
    said = [str(m) for m in op_client.post(AUDIT, action, follow=True).context["messages"]]
    assert not any(m.startswith("Reverted") for m in said) and any("Nothing to revert" in m for m in said), said
    assert {c.pk for c in _changes(memory_a.tenant)} == before


def test_revert_action_refuses_what_is_not_a_supersession(op_client: Client, memory_a: Memory) -> None:
    created = _changes(memory_a.tenant, fact_id=memory_a.new_fact.id, kind=FactChangeKind.CREATED)[0]
    response = op_client.post(
        AUDIT, {"action": "revert_selected", "_selected_action": [str(created.pk)], "post": "yes"}, follow=True
    )
    assert any("only a supersession can be reverted" in str(m) for m in response.context["messages"])
    assert _get(memory_a.tenant, memory_a.new_fact.id).status == FactStatus.ACTIVE
    assert _changes(memory_a.tenant, kind=FactChangeKind.REVERTED) == []


def test_revert_view_answers_only_post_and_only_for_the_operators_tenant(
    op_client: Client, memory_a: Memory, memory_b: Memory
) -> None:
    assert op_client.get(f"{AUDIT}{memory_b.supersession_id}/revert/").status_code == 404
    assert op_client.post(f"{AUDIT}{memory_b.supersession_id}/revert/").status_code == 404
    assert _get(memory_b.tenant, memory_b.old_fact.id).status == FactStatus.SUPERSEDED


def test_revert_needs_the_change_fact_permission(client: Client, memory_a: Memory) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from tenants.services import membership_add

    viewer = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename__in=["view_fact", "view_factchange"]))
    membership_add(tenant=memory_a.tenant, user=viewer)
    client.force_login(viewer)
    assert client.post(f"{AUDIT}{memory_a.supersession_id}/revert/").status_code == 403
    assert "engram-revert" in client.get(AUDIT).content.decode()  # shown, but refused: the button is a form
    assert _get(memory_a.tenant, memory_a.old_fact.id).status == FactStatus.SUPERSEDED


def test_audit_filters_by_entity_attribute_kind_and_fact(op_client: Client, memory_a: Memory) -> None:
    def text(url: str) -> str:
        return op_client.get(url).content.decode().replace("<wbr>", "")  # the fact's wrap points

    body = text(f"{AUDIT}?entity=alice&attribute=city&kind__exact=superseded")
    assert f"{memory_a.supersession_id}/revert/" in body
    assert "alice.city" in body and "alice.employer" not in body
    assert "revert/" not in text(f"{AUDIT}?entity=nobody")
    by_fact = text(f"{AUDIT}?fact={memory_a.pending_fact.id}")
    assert "alice.employer" in by_fact and "alice.city" not in by_fact
    assert op_client.get(f"{AUDIT}?fact=not-a-uuid").status_code == 200


def test_editing_a_fact_in_the_admin_goes_through_fact_edit(op_client: Client, memory_a: Memory) -> None:
    fact = memory_a.new_fact
    url = f"/admin/semantic/fact/{fact.id}/change/"
    data = {"value": "Berlin-Mitte", "statement": fact.statement, "category": fact.category, "confidence": "0.95"}
    assert op_client.post(url, data).status_code == 302
    saved = _get(memory_a.tenant, fact.id)
    assert (saved.value, saved.confidence) == ("Berlin-Mitte", 0.95)
    edit = _changes(memory_a.tenant, fact_id=fact.id, kind=FactChangeKind.EDITED)
    assert [(c.old_value, c.new_value, c.actor_id) for c in edit] == [("Berlin", "Berlin-Mitte", "op-a")]


def test_an_invalid_edit_names_the_field_and_changes_nothing(op_client: Client, memory_a: Memory) -> None:
    fact = memory_a.new_fact
    data = {"value": "Rome", "statement": fact.statement, "category": "no-such-category", "confidence": "1.5"}
    response = op_client.post(f"/admin/semantic/fact/{fact.id}/change/", data)
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert set(errors) == {"category", "confidence"}
    assert _get(memory_a.tenant, fact.id).value == "Berlin"


def test_an_edit_that_clashes_is_reported_not_saved(op_client: Client, memory_a: Memory) -> None:
    tenant = memory_a.tenant
    with tenant_scope(tenant):
        a = fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                "alice", "alice", "language", "French", "alice speaks French.", "preferences", 0.9, cardinality="multi"
            ),
            actor=Actor(),
        ).fact
        fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                "alice", "alice", "language", "German", "alice speaks German.", "preferences", 0.9, cardinality="multi"
            ),
            actor=Actor(),
        )
    data = {"value": "German", "statement": a.statement, "category": a.category, "confidence": "0.9"}
    response = op_client.post(f"/admin/semantic/fact/{a.id}/change/", data, follow=True)
    assert any("Not saved" in str(m) for m in response.context["messages"])
    assert _get(tenant, a.id).value == "French"


def test_a_superseded_fact_cannot_be_edited(op_client: Client, memory_a: Memory) -> None:
    response = op_client.get(f"/admin/semantic/fact/{memory_a.old_fact.id}/change/")
    assert 'name="value"' not in response.content.decode()
    assert "history" in response.content.decode()
