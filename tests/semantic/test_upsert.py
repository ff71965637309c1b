"""The merge: confirm, near-duplicate, conflict with history, out-of-order, multi-valued, review."""

from __future__ import annotations

import pytest

from core.errors import Conflict, NotFound, ValidationProblem
from semantic.models import Fact, FactChange, FactSource, FactStatus
from semantic.selectors import fact_history, fact_list, fact_search, facts_for_subject
from semantic.services import (
    embed_statements,
    fact_confirm,
    fact_edit,
    fact_expire,
    fact_mark_used,
    fact_retract,
    fact_revert,
    fact_review_decide,
    facts_decay,
    facts_upsert,
)
from tenants.scope import tenant_scope
from tests.factories.semantic import SemanticEpisodeFactory
from tests.semantic.conftest import ACTOR, at, candidate, set_config

pytestmark = pytest.mark.django_db


def _facts(tenant, **filters) -> list[Fact]:
    with tenant_scope(tenant):
        return list(Fact.objects.for_tenant(tenant).filter(**filters).order_by("valid_from", "recorded_at"))


def _reload(tenant, fact) -> Fact:
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).get(id=fact.id)


def _changes(tenant, fact) -> list[str]:
    with tenant_scope(tenant):
        return list(
            FactChange.objects.for_tenant(tenant).filter(fact=fact).order_by("id").values_list("kind", flat=True)
        )


def test_new_fact_is_created_active_and_logged(upsert, tenant_a) -> None:
    result = upsert(observed_at=at(1))
    assert result.action == "created"
    fact = result.fact
    assert (fact.entity, fact.attribute, fact.value, fact.status) == ("user-1", "database", "PostgreSQL", "active")
    assert fact.valid_from == at(1) and fact.valid_to is None
    assert fact.cardinality == "single"
    assert fact.embedding is not None
    assert _changes(tenant_a, fact) == ["created"]


def test_exact_duplicate_confirms_instead_of_duplicating(upsert, tenant_a) -> None:
    episode = SemanticEpisodeFactory(tenant=tenant_a)
    first = upsert(observed_at=at(1), confidence=0.6)
    second = upsert(
        value=" postgresql. ", statement="User runs postgresql.", confidence=0.7, source_episode_ids=[episode.id]
    )
    assert second.action == "confirmed"
    assert second.fact.id == first.fact.id
    assert len(_facts(tenant_a)) == 1
    fact = _facts(tenant_a)[0]
    assert fact.confidence == pytest.approx(1 - 0.4 * 0.3)
    assert fact.confirmation_count == 2
    assert fact.last_confirmed_at > first.fact.last_confirmed_at
    with tenant_scope(tenant_a):
        assert list(FactSource.objects.for_tenant(tenant_a).values_list("episode_id", flat=True)) == [episode.id]
        change = FactChange.objects.for_tenant(tenant_a).get(fact=fact, kind="confirmed")
    assert change.source_episode_ids == [episode.id]
    assert (change.old_confidence, change.new_confidence) == (pytest.approx(0.6), pytest.approx(0.88))


def test_near_duplicate_statement_confirms_the_existing_fact(upsert, tenant_a) -> None:
    set_config(tenant_a, dedupe_similarity=0.85)
    first = upsert(
        attribute="tools",
        value="Neovim 0.10",
        statement="The user writes code in Neovim 0.10 every day at work",
        cardinality="multi",
    )
    near = "The user writes code in Neovim 0.10 every day at work now"
    a, b = embed_statements([first.fact.statement, near])
    assert sum(x * y for x, y in zip(a, b, strict=True)) >= 0.85
    second = upsert(attribute="tools", value="Neovim 0.10 editor", statement=near, cardinality="multi")
    assert second.action == "confirmed" and second.fact.id == first.fact.id
    assert len(_facts(tenant_a)) == 1
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=first.fact, kind="confirmed")
    assert "near-duplicate" in change.reason


def test_one_value_written_another_way_confirms_whatever_the_statement(upsert, tenant_a) -> None:
    first = upsert(attribute="editor", value="Neovim 0.10", statement="The user writes code in Neovim 0.10.")
    second = upsert(attribute="editor", value="neovim v0.10", statement="Neovim (v0.10) is the editor.")
    assert second.action == "confirmed" and second.fact.id == first.fact.id
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=first.fact, kind="confirmed")
    assert change.reason == "same value, written 'neovim v0.10'."


@pytest.mark.parametrize("cardinality", ["single", "multi"])
def test_a_near_duplicate_statement_never_joins_two_values(upsert, tenant_a, cardinality: str) -> None:
    """Invariant 9: 15 is not 16, however alike the statements (the test embedder reads them as one)."""
    set_config(tenant_a, dedupe_similarity=0.5)
    a, b = embed_statements(["Our database is PostgreSQL 15.", "Our database is PostgreSQL 16."])
    assert sum(x * y for x, y in zip(a, b, strict=True)) >= 0.5
    first = upsert(attribute="database", value="PostgreSQL 15", statement="Our database is PostgreSQL 15.",
                   cardinality=cardinality, observed_at=at(1))  # fmt: skip
    second = upsert(attribute="database", value="PostgreSQL 16", statement="Our database is PostgreSQL 16.",
                    cardinality=cardinality, observed_at=at(2))  # fmt: skip
    assert second.fact.id != first.fact.id
    assert second.action == ("superseded" if cardinality == "single" else "created")
    active = [f.value for f in _facts(tenant_a, status="active")]
    assert active == (["PostgreSQL 16"] if cardinality == "single" else ["PostgreSQL 15", "PostgreSQL 16"])


def test_near_duplicate_does_not_cross_attributes(upsert, tenant_a) -> None:
    upsert(attribute="editor", value="Neovim", statement="The user likes Neovim a lot")
    other = upsert(attribute="favourite_editor", value="Neovim", statement="The user likes Neovim a lot")
    assert other.action == "created"


def test_newer_value_supersedes_older_and_keeps_history(upsert, tenant_a) -> None:
    old = upsert(value="PostgreSQL", observed_at=at(1)).fact
    result = upsert(value="MySQL", observed_at=at(5))
    assert result.action == "superseded"
    assert result.previous is not None and result.previous.id == old.id
    new = result.fact
    old = _reload(tenant_a, old)
    assert old.status == FactStatus.SUPERSEDED
    assert old.valid_to == at(5)
    assert old.superseded_by_id == new.id
    assert new.status == FactStatus.ACTIVE and new.valid_from == at(5)
    assert len(_facts(tenant_a, status="active")) == 1
    assert _changes(tenant_a, old) == ["created", "superseded"]
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=old, kind="superseded")
    assert (change.old_value, change.new_value, change.related_fact_id) == ("PostgreSQL", "MySQL", new.id)
    assert (change.actor_type, change.actor_id) == ("consolidation", "run-1")


def test_out_of_order_import_cannot_overwrite_a_newer_value(upsert, tenant_a) -> None:
    newer = upsert(value="MySQL", observed_at=at(5)).fact
    result = upsert(value="PostgreSQL", observed_at=at(1))
    assert result.action == "superseded"
    assert result.previous is None
    older = result.fact
    assert older.status == FactStatus.SUPERSEDED
    assert (older.valid_from, older.valid_to, older.superseded_by_id) == (at(1), at(5), newer.id)
    newer = _reload(tenant_a, newer)
    assert newer.status == FactStatus.ACTIVE
    assert [f.value for f in _facts(tenant_a, status="active")] == ["MySQL"]
    assert _changes(tenant_a, older) == ["created", "superseded"]


def test_observation_time_comes_from_the_source_episodes(upsert, tenant_a) -> None:
    newer_episode = SemanticEpisodeFactory(tenant=tenant_a, occurred_at=at(9))
    older_episode = SemanticEpisodeFactory(tenant=tenant_a, occurred_at=at(2))
    upsert(value="MySQL", source_episode_ids=[newer_episode.id])
    late = upsert(value="PostgreSQL", source_episode_ids=[older_episode.id])
    assert late.fact.status == FactStatus.SUPERSEDED
    assert late.fact.valid_from == at(2) and late.fact.valid_to == at(9)


def test_a_value_arriving_late_lands_between_its_neighbours(upsert, tenant_a) -> None:
    a = upsert(value="SQLite", observed_at=at(1)).fact
    c = upsert(value="MySQL", observed_at=at(10)).fact
    b = upsert(value="PostgreSQL", observed_at=at(5)).fact
    a = _reload(tenant_a, a)
    assert (a.valid_to, a.superseded_by_id) == (at(5), b.id)
    assert (b.valid_from, b.valid_to, b.superseded_by_id, b.status) == (at(5), at(10), c.id, "superseded")
    with tenant_scope(tenant_a):
        believed = {
            day: [f.value for f in facts_for_subject(tenant=tenant_a, subject="user-1", as_of=at(day))]
            for day in (0, 2, 7, 12)
        }
    assert believed == {0: [], 2: ["SQLite"], 7: ["PostgreSQL"], 12: ["MySQL"]}


def test_value_seen_again_after_a_late_arrival_splits_its_interval(upsert, tenant_a) -> None:
    upsert(value="SQLite", observed_at=at(1))
    upsert(value="SQLite", observed_at=at(8))  # the same value, observed again later
    late = upsert(value="PostgreSQL", observed_at=at(4))
    assert late.fact.status == FactStatus.SUPERSEDED
    assert (late.fact.valid_from, late.fact.valid_to) == (at(4), at(8))
    with tenant_scope(tenant_a):
        believed = {
            day: [f.value for f in facts_for_subject(tenant=tenant_a, subject="user-1", as_of=at(day))]
            for day in (2, 5, 9)
        }
        active = [f.value for f in fact_list(tenant=tenant_a)]
    assert believed == {2: ["SQLite"], 5: ["PostgreSQL"], 9: ["SQLite"]}
    assert active == ["SQLite"]


def test_same_value_observed_earlier_moves_its_start_back(upsert, tenant_a) -> None:
    a = upsert(value="SQLite", observed_at=at(1)).fact
    b = upsert(value="MySQL", observed_at=at(10)).fact
    result = upsert(value="MySQL", observed_at=at(6))
    assert result.action == "confirmed" and result.fact.id == b.id
    a = _reload(tenant_a, a)
    b = _reload(tenant_a, b)
    assert b.valid_from == at(6) and a.valid_to == at(6)


def test_multi_valued_attributes_accumulate(upsert, tenant_a) -> None:
    first = upsert(attribute="known_issues", value="Login times out", category="known_issues")
    second = upsert(attribute="known_issues", value="Export fails on large files", category="known_issues")
    again = upsert(attribute="known_issues", value="login times out", category="known_issues")
    assert [first.action, second.action, again.action] == ["created", "created", "confirmed"]
    assert first.fact.cardinality == "multi"
    assert sorted(f.value for f in _facts(tenant_a, status="active")) == [
        "Export fails on large files",
        "Login times out",
    ]


def test_category_default_and_candidate_override_of_cardinality(upsert, tenant_a) -> None:
    issue = upsert(attribute="printer_problem", value="jams", category="known_issues")
    assert issue.fact.cardinality == "multi"
    tag = upsert(attribute="database", value="Redis", cardinality="multi", entity="svc")
    upsert(attribute="database", value="PostgreSQL", entity="svc")  # stored cardinality wins over the map
    assert tag.fact.cardinality == "multi"
    assert len(_facts(tenant_a, entity="svc", status="active")) == 2
    with pytest.raises(ValidationProblem) as err:
        upsert(attribute="database", value="MySQL", entity="svc", cardinality="single")
    assert err.value.errors[0]["pointer"] == "/cardinality"


def test_low_confidence_fact_waits_for_review_and_is_not_served(upsert, tenant_a) -> None:
    active = upsert(value="PostgreSQL", observed_at=at(1)).fact
    result = upsert(value="MySQL", confidence=0.3, observed_at=at(3))
    assert result.action == "pending"
    assert result.fact.status == FactStatus.PENDING_REVIEW
    with tenant_scope(tenant_a):
        served = [f.value for f in facts_for_subject(tenant=tenant_a, subject="user-1")]
        found = [s.fact.value for s in fact_search(tenant=tenant_a, query="database MySQL", k=10)]
    assert served == ["PostgreSQL"]
    assert "MySQL" not in found
    with tenant_scope(tenant_a):
        approved = fact_review_decide(tenant=tenant_a, fact_id=result.fact.id, approve=True, actor=ACTOR)
    assert approved.status == FactStatus.ACTIVE
    active = _reload(tenant_a, active)
    assert (active.status, active.valid_to, active.superseded_by_id) == ("superseded", at(3), approved.id)
    assert _changes(tenant_a, approved) == ["created", "review_approved"]


def test_rejected_review_is_retracted_and_kept(upsert, tenant_a) -> None:
    pending = upsert(value="MySQL", confidence=0.1).fact
    with tenant_scope(tenant_a):
        rejected = fact_review_decide(tenant=tenant_a, fact_id=pending.id, approve=False, actor=ACTOR)
        with pytest.raises(Conflict):
            fact_review_decide(tenant=tenant_a, fact_id=pending.id, approve=True, actor=ACTOR)
    assert rejected.status == FactStatus.RETRACTED
    assert _changes(tenant_a, rejected) == ["created", "review_rejected"]


def test_a_repeated_pending_value_confirms_the_pending_fact(upsert, tenant_a) -> None:
    first = upsert(value="MySQL", confidence=0.2)
    second = upsert(value="mysql", confidence=0.3)
    assert second.action == "confirmed" and second.fact.id == first.fact.id
    assert second.fact.status == FactStatus.PENDING_REVIEW


def test_retraction_stops_serving_and_keeps_history(upsert, tenant_a) -> None:
    fact = upsert(value="PostgreSQL").fact
    with tenant_scope(tenant_a):
        retracted = fact_retract(tenant=tenant_a, fact_id=fact.id, actor=ACTOR)
        again = fact_retract(tenant=tenant_a, fact_id=fact.id, actor=ACTOR)
        assert facts_for_subject(tenant=tenant_a, subject="user-1") == []
        assert fact_search(tenant=tenant_a, query="PostgreSQL database") == []
    assert retracted.status == again.status == FactStatus.RETRACTED
    assert retracted.valid_to is not None
    assert _changes(tenant_a, fact) == ["created", "retracted"]
    # The slot is free again: a new value is created, not superseding anything.
    assert upsert(value="MySQL").action == "created"


def test_as_of_answers_what_was_believed_then(upsert, tenant_a) -> None:
    upsert(value="PostgreSQL", observed_at=at(1))
    upsert(value="MySQL", observed_at=at(5))
    with tenant_scope(tenant_a):
        then = fact_search(tenant=tenant_a, query="user database", as_of=at(3))
        now = fact_search(tenant=tenant_a, query="user database")
        listed_then = [f.value for f in fact_list(tenant=tenant_a, as_of=at(3))]
    assert [s.fact.value for s in then] == ["PostgreSQL"]
    assert [s.fact.value for s in now] == ["MySQL"]
    assert listed_then == ["PostgreSQL"]


@pytest.mark.parametrize(
    ("overrides", "pointer"),
    [
        ({"category": "gossip"}, "/category"),
        ({"confidence": 1.5}, "/confidence"),
        ({"confidence": -0.1}, "/confidence"),
        ({"statement": "   "}, "/statement"),
        ({"entity": ""}, "/entity"),
        ({"attribute": "!!!"}, "/attribute"),
        ({"value": ""}, "/value"),
        ({"cardinality": "many"}, "/cardinality"),
    ],
)
def test_bad_candidates_are_refused_and_write_nothing(upsert, tenant_a, overrides, pointer) -> None:
    with pytest.raises(ValidationProblem) as err:
        upsert(**overrides)
    assert pointer in [e["pointer"] for e in err.value.errors]
    assert _facts(tenant_a) == []


def test_tenant_extra_categories_are_accepted(upsert, tenant_a) -> None:
    set_config(tenant_a, extra_categories=["billing"])
    assert upsert(category="billing").fact.category == "billing"


def test_source_episode_of_another_tenant_or_subject_is_refused(upsert, tenant_a, tenant_b) -> None:
    theirs = SemanticEpisodeFactory(tenant=tenant_b)
    other_subject = SemanticEpisodeFactory(tenant=tenant_a, subject="user-2")
    mine = SemanticEpisodeFactory(tenant=tenant_a)
    with pytest.raises(ValidationProblem) as err:
        upsert(source_episode_ids=[mine.id, theirs.id])
    assert err.value.errors[0]["pointer"] == "/source_episode_ids/1"
    assert "does not exist" in err.value.errors[0]["detail"]
    with pytest.raises(ValidationProblem) as err:
        upsert(source_episode_ids=[other_subject.id])
    assert "another subject" in err.value.errors[0]["detail"]
    assert _facts(tenant_a) == []


def test_subject_is_taken_from_the_episodes_when_not_given(upsert, tenant_a) -> None:
    episode = SemanticEpisodeFactory(tenant=tenant_a, subject="user-7")
    assert upsert(subject="", source_episode_ids=[episode.id]).fact.subject == "user-7"


def test_value_naming_a_known_entity_becomes_an_edge(upsert, tenant_a) -> None:
    upsert(entity="postgres", attribute="runs_on", value="AWS", subject="")
    edge = upsert(entity="acme", attribute="database", value="Postgres", subject="")
    flagged = upsert(entity="acme", attribute="uses", value="Stripe billing", object_entity="Stripe", subject="")
    plain = upsert(entity="acme", attribute="plan", value="enterprise", subject="")
    assert edge.fact.object_entity == "postgres"
    assert flagged.fact.object_entity == "stripe"
    assert plain.fact.object_entity is None


def test_revert_reinstates_the_superseded_value(upsert, tenant_a) -> None:
    old = upsert(value="PostgreSQL", observed_at=at(1)).fact
    new = upsert(value="MySQL", observed_at=at(2)).fact
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=old, kind="superseded")
        result = fact_revert(tenant=tenant_a, change_id=change.id, actor=ACTOR)
        with pytest.raises(Conflict):
            fact_revert(
                tenant=tenant_a,
                change_id=FactChange.objects.for_tenant(tenant_a).get(fact=old, kind="created").id,
                actor=ACTOR,
            )
        with pytest.raises(NotFound):
            fact_revert(tenant=tenant_a, change_id=10**12, actor=ACTOR)
    assert result.action == "superseded"
    assert result.fact.value == "PostgreSQL" and result.fact.status == FactStatus.ACTIVE
    new = _reload(tenant_a, new)
    assert new.status == FactStatus.SUPERSEDED
    # One revert, one row: on the reinstated fact, naming the value it displaced.
    assert _changes(tenant_a, result.fact) == ["reverted"]
    assert _changes(tenant_a, old) == ["created", "superseded"]
    assert _changes(tenant_a, new) == ["created"]
    with tenant_scope(tenant_a):
        row = FactChange.objects.for_tenant(tenant_a).get(fact=result.fact)
        assert (row.old_value, row.new_value, row.related_fact_id) == ("MySQL", "PostgreSQL", new.id)
        assert f"revert of change {change.id}" in row.reason and "newer value" not in row.reason
        # The displaced fact's history tells it was replaced by the revert.
        assert [c.kind for c in fact_history(tenant=tenant_a, fact_id=new.id)] == ["created", "reverted"]


def test_a_second_revert_of_the_same_change_writes_nothing(upsert, tenant_a) -> None:
    old = upsert(value="PostgreSQL", observed_at=at(1)).fact
    upsert(value="MySQL", observed_at=at(2))
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=old, kind="superseded")
        first = fact_revert(tenant=tenant_a, change_id=change.id, actor=ACTOR)
        rows = FactChange.objects.for_tenant(tenant_a).count()
        again = fact_revert(tenant=tenant_a, change_id=change.id, actor=ACTOR)
        assert FactChange.objects.for_tenant(tenant_a).count() == rows
    assert (again.action, again.fact.id) == ("confirmed", first.fact.id)


def test_confirm_edit_expire_decay_and_use(upsert, tenant_a) -> None:
    fact = upsert(value="PostgreSQL", confidence=0.6).fact
    other = upsert(value="Redis", attribute="cache").fact
    with tenant_scope(tenant_a):
        confirmed = fact_confirm(tenant=tenant_a, fact_id=fact.id, actor=ACTOR)
        assert confirmed.confidence == pytest.approx(0.8)
        edited = fact_edit(
            tenant=tenant_a,
            fact_id=fact.id,
            actor=ACTOR,
            value="PostgreSQL 16",
            statement="The user runs PostgreSQL 16.",
        )
        assert edited.value_key == "postgresql 16"
        with pytest.raises(ValidationProblem):
            fact_edit(tenant=tenant_a, fact_id=fact.id, actor=ACTOR, category="nope")
        assert facts_decay(tenant=tenant_a, confidences={fact.id: 0.5, other.id: 0.95}, actor=ACTOR) == 1
        assert fact_mark_used(tenant=tenant_a, fact_ids=[fact.id, "not-a-uuid"]) == 1
        expired = fact_expire(tenant=tenant_a, fact_id=fact.id, actor=ACTOR)
        with pytest.raises(Conflict):
            fact_confirm(tenant=tenant_a, fact_id=fact.id, actor=ACTOR)
    assert expired.status == FactStatus.EXPIRED and expired.use_count == 1 and expired.confidence == 0.5
    assert _changes(tenant_a, fact) == ["created", "confirmed", "edited", "decayed", "expired"]
    with tenant_scope(tenant_a):
        change = FactChange.objects.for_tenant(tenant_a).get(fact=fact, kind="edited")
    assert (change.old_value, change.new_value) == ("PostgreSQL", "PostgreSQL 16")


def test_edit_to_a_value_already_held_is_a_conflict(upsert, tenant_a) -> None:
    a = upsert(attribute="likes", value="tea", category="preferences").fact
    upsert(attribute="likes", value="coffee", category="preferences")
    with tenant_scope(tenant_a), pytest.raises(Conflict):
        fact_edit(tenant=tenant_a, fact_id=a.id, actor=ACTOR, value="Coffee")


def test_batch_upsert_embeds_once_and_merges_in_order(tenant_a) -> None:
    with tenant_scope(tenant_a):
        results = facts_upsert(
            tenant=tenant_a,
            candidates=[candidate(value="PostgreSQL", observed_at=at(1)), candidate(value="MySQL", observed_at=at(2))],
            actor=ACTOR,
        )
    assert [r.action for r in results] == ["created", "superseded"]


def test_another_tenants_fact_is_not_found_by_services(upsert, tenant_a, tenant_b) -> None:
    fact = upsert(value="PostgreSQL").fact
    with tenant_scope(tenant_b):
        for call in (fact_confirm, fact_retract, fact_expire):
            with pytest.raises(NotFound):
                call(tenant=tenant_b, fact_id=fact.id, actor=ACTOR)
        assert fact_mark_used(tenant=tenant_b, fact_ids=[fact.id]) == 0
