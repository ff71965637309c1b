"""Episodes are append-only in the ORM and in PostgreSQL; erasure/archiving lifts both guards explicitly."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.utils import ProgrammingError

from episodic.models import AppendOnlyError, Episode, Passage, Session, allow_episode_deletion
from tenants.scope import tenant_scope
from tests.episodic.conftest import item

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(append, tenant_a) -> Episode:
    return append(tenant_a, [item("original")])[0]


def test_saving_an_existing_episode_is_refused(tenant_a, stored) -> None:
    with tenant_scope(tenant_a):
        episode = Episode.objects.for_tenant(tenant_a).get(pk=stored.pk)
        episode.content = "rewritten"
        with pytest.raises(AppendOnlyError):
            episode.save()
        with pytest.raises(AppendOnlyError):
            episode.save(update_fields=["content"])


def test_queryset_update_and_delete_are_refused(tenant_a, stored) -> None:
    with tenant_scope(tenant_a):
        with pytest.raises(AppendOnlyError):
            Episode.objects.for_tenant(tenant_a).update(content="rewritten")
        with pytest.raises(AppendOnlyError):
            Episode.objects.for_tenant(tenant_a).delete()
        with pytest.raises(AppendOnlyError):
            Episode.objects.for_tenant(tenant_a).get(pk=stored.pk).delete()
        with pytest.raises(AppendOnlyError):
            Session.objects.for_tenant(tenant_a).delete()
        with pytest.raises(AppendOnlyError):
            Session.objects.for_tenant(tenant_a).get().delete()
        assert Episode.objects.for_tenant(tenant_a).get(pk=stored.pk).content == "original"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE episodic_episode SET content = 'rewritten'",
        "UPDATE episodic_episode SET entities = '{x}'",
        "DELETE FROM episodic_episode",
    ],
)
def test_the_database_refuses_raw_rewrites_too(tenant_a, stored, sql) -> None:
    with tenant_scope(tenant_a):
        # The application role holds no UPDATE (but of the embedding) and no DELETE on episodes.
        with (
            pytest.raises(ProgrammingError, match="permission denied for table episodic_episode"),
            transaction.atomic(),
        ):
            with connection.cursor() as cursor:
                cursor.execute(sql)
        assert Episode.objects.for_tenant(tenant_a).get(pk=stored.pk).content == "original"


def test_a_raw_session_delete_cannot_orphan_episodes(tenant_a, stored) -> None:
    # In SQL the foreign key (deferred) refuses it.
    with tenant_scope(tenant_a):
        with pytest.raises(IntegrityError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("DELETE FROM episodic_session")
        assert Episode.objects.for_tenant(tenant_a).filter(pk=stored.pk).exists()


def test_an_orm_session_delete_cascades_nothing_and_cannot_orphan_episodes(tenant_a, stored) -> None:
    # Django's cascade would delete the episodes by session id alone (every shard on Citus); it does
    # nothing, so the deferred foreign key refuses the orphan when it is checked.
    with tenant_scope(tenant_a):
        with pytest.raises(IntegrityError), allow_episode_deletion():
            assert Session.objects.for_tenant(tenant_a).filter(subject="alice").delete()[0] == 1
            with transaction.atomic():
                connection.check_constraints()
        assert Episode.objects.for_tenant(tenant_a).filter(pk=stored.pk).exists()


def test_the_embedding_may_be_filled_in_later(tenant_a, stored) -> None:
    with tenant_scope(tenant_a):
        Episode.objects.for_tenant(tenant_a).filter(pk=stored.pk).update(embedding=[0.5] * 384)
        episode = Episode.objects.for_tenant(tenant_a).get(pk=stored.pk)
        episode.embedding = [0.25] * 384
        episode.save(update_fields=["embedding"])
        assert Episode.objects.for_tenant(tenant_a).get(pk=stored.pk).embedding[0] == 0.25


def test_erasure_context_allows_deletion_and_closes_again(tenant_a, stored) -> None:
    with tenant_scope(tenant_a):
        with allow_episode_deletion():
            # Nothing cascades: the passages and episodes go first, then their session.
            Passage.objects.for_tenant(tenant_a).delete()
            Episode.objects.for_tenant(tenant_a).delete()
            Session.objects.for_tenant(tenant_a).filter(subject="alice").delete()
        assert not Episode.objects.for_tenant(tenant_a).exists()
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(current_setting('app.allow_episode_deletion', true), '')")
            assert cursor.fetchone()[0] == ""


def test_guard_is_back_after_the_context(append, tenant_a) -> None:
    [episode] = append(tenant_a, [item("kept")])
    with tenant_scope(tenant_a):
        with allow_episode_deletion():
            pass
        with pytest.raises(AppendOnlyError):
            Episode.objects.for_tenant(tenant_a).filter(pk=episode.pk).delete()
        with pytest.raises(ProgrammingError), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("DELETE FROM episodic_episode")


def test_api_has_no_update_or_delete_of_episodes(api_a, stored) -> None:
    assert api_a.patch("/v1/episodes", {"content": "x"}, format="json").status_code == 405
    assert api_a.delete("/v1/episodes").status_code == 405
    assert api_a.put("/v1/episodes", {}, format="json").status_code == 405
