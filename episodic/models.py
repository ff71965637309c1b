"""Episodic memory: sessions and their append-only, timestamped events."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar, cast

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import connection, models, transaction
from django.db.models.functions import Cast
from django.utils import timezone
from pgvector.django import BitField, HnswIndex, VectorField

from core.db import set_local
from core.embedding import EMBEDDING_DIM
from tenants.models import TenantManager, TenantModel, TenantQuerySet

# Columns an UPDATE may touch outside `allow_episode_deletion()`: derived data, filled in later. The
# application role's column privileges say the same (tenants/dbroles.py).
MUTABLE_EPISODE_FIELDS = frozenset({"embedding"})

_deletion_allowed: ContextVar[bool] = ContextVar("engram_episode_deletion", default=False)


class AppendOnlyError(RuntimeError):
    """An episode was about to be changed or deleted outside erasure or archiving."""


def _eraser_role() -> str | None:
    """The role this login may switch to for erasure: one it was granted WITH SET and does not inherit,
    that may delete episodes (tenants/dbroles.py grants one, to the worker's role alone). None for any
    other login: the application role (the web process) has none, and the owner needs no switch."""

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.rolname FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid"
            " WHERE m.member = (SELECT oid FROM pg_roles WHERE rolname = session_user)"
            " AND m.set_option AND NOT m.inherit_option"
            " AND has_table_privilege(r.oid, 'episodic_episode', 'DELETE')"
            " ORDER BY r.rolname LIMIT 1"
        )
        row = cursor.fetchone()
    return str(row[0]) if row else None


@contextmanager
def allow_episode_deletion() -> Iterator[None]:
    """The one way to delete or rewrite episodes (and sessions): erasure and archiving. Nothing
    cascades on the Django side (the caller deletes passages, fact sources and episodes first;
    consolidation.lifecycle.episodes_delete), and the deferred foreign keys refuse an orphan at commit. Opens a transaction (or a savepoint) and lifts both guards inside it, the
    ORM's and the database's (the application role has no UPDATE or DELETE on episodes; the block runs
    as the eraser role, which only the worker's login may switch to); both come back when the block ends."""
    token = _deletion_allowed.set(True)
    try:
        with transaction.atomic():
            role = _eraser_role()
            if role:
                set_local("role", role)
            try:
                yield
            finally:
                if role and not connection.needs_rollback:
                    set_local("role", "none")
    finally:
        _deletion_allowed.reset(token)


def deletion_allowed() -> bool:
    return _deletion_allowed.get()


def _refuse(what: str) -> None:
    if not deletion_allowed():
        raise AppendOnlyError(
            f"{what}: episodes are append-only (corrections are new episodes); only erasure and archiving "
            "may delete them, inside episodic.models.allow_episode_deletion()."
        )


class EpisodeQuerySet(TenantQuerySet["Episode"]):
    def update(self, **kwargs: Any) -> int:
        if not set(kwargs) <= MUTABLE_EPISODE_FIELDS:
            _refuse(f"Episode update of {sorted(set(kwargs) - MUTABLE_EPISODE_FIELDS)}")
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        _refuse("Episode delete")
        return super().delete()


class EpisodeManager(TenantManager["Episode"]):
    _queryset_class = EpisodeQuerySet

    def get_queryset(self) -> EpisodeQuerySet:
        return cast(EpisodeQuerySet, super().get_queryset())

    def for_tenant(self, tenant: Any) -> EpisodeQuerySet:
        return self.get_queryset().for_tenant(tenant)


class SessionQuerySet(TenantQuerySet["Session"]):
    def delete(self) -> tuple[int, dict[str, int]]:
        _refuse("Session delete")
        return super().delete()


class SessionManager(TenantManager["Session"]):
    _queryset_class = SessionQuerySet

    def get_queryset(self) -> SessionQuerySet:
        return cast(SessionQuerySet, super().get_queryset())

    def for_tenant(self, tenant: Any) -> SessionQuerySet:
        return self.get_queryset().for_tenant(tenant)


class SessionStatus(models.TextChoices):
    OPEN = "open"
    ENDED = "ended"
    INTERRUPTED = "interrupted"


class Outcome(models.TextChoices):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class Session(TenantModel):
    """One conversation or task run, named by the tenant's own external id."""

    external_id = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    agent = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=SessionStatus.choices, default=SessionStatus.OPEN)
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, null=True, blank=True)
    outcome_signal = models.FloatField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    episode_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    objects: ClassVar[SessionManager] = SessionManager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "external_id"), name="uniq_session_external_id")]
        indexes = [
            models.Index(fields=("tenant", "subject", "-started_at"), name="session_subject_started"),
            models.Index(fields=("tenant", "status", "ended_at"), name="session_status_ended"),
        ]

    def __str__(self) -> str:
        return self.external_id

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        _refuse("Session delete")
        return super().delete(*args, **kwargs)


# The external id of a session's summary episode (consolidation.services.session_summarise): the same
# text as Session.summary, which the router offers in its place.
SESSION_SUMMARY_EXTERNAL_ID = "engram:summary"


class EpisodeKind(models.TextChoices):
    MESSAGE = "message"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    DECISION = "decision"
    OBSERVATION = "observation"
    OUTCOME = "outcome"
    SUMMARY = "summary"


class Episode(TenantModel):
    """One event. Append-only: corrections are new episodes; erasure is the only deletion."""

    # Indexed by episode_session_seq, which also serves the foreign key.
    session = models.ForeignKey(
        Session, on_delete=models.DO_NOTHING, related_name="episodes", db_index=False, db_constraint=False
    )
    subject = models.CharField(max_length=255)
    agent = models.CharField(max_length=255, blank=True, default="")
    kind = models.CharField(max_length=16, choices=EpisodeKind.choices)
    role = models.CharField(max_length=64, blank=True, default="")
    content = models.TextField(blank=True, default="")
    payload = models.JSONField(default=dict, blank=True)
    entities = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    topics = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    occurred_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    content_hash = models.CharField(max_length=64)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, null=True, blank=True)
    outcome_signal = models.FloatField(null=True, blank=True)
    # Filled by the embedding backlog in a worker, never on the request path.
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects: ClassVar[EpisodeManager] = EpisodeManager()

    # What an episode records, in the order it is shown: every column but its id, tenant, session,
    # embedding and search vector. The API's shape, the admin, the archive and the bulk insert follow it.
    RECORD_FIELDS = (
        "subject", "agent", "kind", "role", "content", "payload", "entities", "topics", "occurred_at", "created_at",
        "external_id", "token_count", "content_hash", "outcome", "outcome_signal",
    )  # fmt: skip

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=("tenant", "session", "external_id"),
                condition=models.Q(external_id__isnull=False),
                name="uniq_episode_external_id",
            )
        ]
        indexes = [
            models.Index(fields=("tenant", "subject", "-occurred_at"), name="episode_subject_time"),
            models.Index(fields=("tenant", "session", "occurred_at"), name="episode_session_time"),
            # The turn before or after an episode in its session (the router's neighbours): one index
            # step each, where the foreign key's own index made it sort the whole session.
            models.Index(fields=("session", "occurred_at", "id"), name="episode_session_seq"),
            models.Index(fields=("tenant", "-created_at", "-id"), name="episode_created"),
            GinIndex(fields=("tenant", "entities"), name="episode_entities_gin"),
            GinIndex(fields=("tenant", "topics"), name="episode_topics_gin"),
            GinIndex(fields=("tenant", "search_vector"), name="episode_fts_gin"),
            models.Index(
                fields=("tenant", "id"), condition=models.Q(embedding__isnull=True), name="episode_embedding_backlog"
            ),
            HnswIndex(
                name="episode_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.pk}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            fields = kwargs.get("update_fields")
            if fields is None or not set(fields) <= MUTABLE_EPISODE_FIELDS:
                _refuse("Episode.save() of an existing row")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        _refuse("Episode.delete()")
        return super().delete(*args, **kwargs)


class Passage(TenantModel):
    """A sentence-aware part of an episode's content, the unit that retrieval ranks (episodic.passages).
    Derived from the episode when it is written, never edited: only its embedding is filled in later,
    and it goes when its episode goes (erasure, archiving). `entities` and `topics` are the episode's,
    so that every channel of the search reads one table."""

    episode = models.ForeignKey(
        Episode, on_delete=models.DO_NOTHING, related_name="passages", db_index=False, db_constraint=False
    )
    session = models.ForeignKey(
        Session, on_delete=models.DO_NOTHING, related_name="+", db_index=False, db_constraint=False
    )
    subject = models.CharField(max_length=255)
    occurred_at = models.DateTimeField()
    position = models.PositiveIntegerField()
    # The characters [char_start, char_end) of the episode's content that this passage is.
    char_start = models.PositiveIntegerField()
    char_end = models.PositiveIntegerField()
    # The episode's last passage: an excerpt that is not the last one is served with a trailing "…".
    last = models.BooleanField(default=True)
    content = models.TextField(blank=True, default="")
    token_count = models.PositiveIntegerField(default=0)
    # A part of a session's summary episode (SESSION_SUMMARY_EXTERNAL_ID): the router never offers one
    # (it offers the session's summary itself), so its search skips them rather than spend places on them.
    summary = models.BooleanField(default=False)
    # What a context needs of the passage that does not depend on the query, computed when it is written
    # (core.lines, core.terms): its line as rendered (with its episode's speaker, "…" where the episode
    # goes on), the tokens of that line with its list marker, and its index terms (the BM25 of the
    # router's re-ranking counts the query's terms in them). Empty line and null terms: not computed
    # yet (`manage.py backfill_passage_lines`).
    line = models.TextField(blank=True, default="")
    line_tokens = models.PositiveIntegerField(default=0)
    index_terms = ArrayField(models.TextField(), null=True, blank=True)
    entities = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    topics = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    # How many sentences the passage has, set with its embedding where the tenant keeps sentence vectors
    # (Tenant.keeps_sentence_vectors); where it has 2 or more, each one's vector is a PassageSentence.
    # Null: not looked at (a tenant that keeps none; or not yet: the embedding drain looks).
    sentence_count = models.PositiveSmallIntegerField(null=True, blank=True)
    # The embedding's signs, one bit a dimension (48 bytes): the vector channel's prefilter ranks a
    # subject's passages by Hamming distance on these before it re-scores the best few exactly
    # (episodic.selectors, ENGRAM["VECTOR_PREFILTER_CANDIDATES"]).
    embedding_code = models.GeneratedField(
        expression=Cast(models.Func("embedding", function="binary_quantize"), BitField(length=EMBEDDING_DIM)),
        output_field=BitField(length=EMBEDDING_DIM),
        db_persist=True,
    )
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("tenant", "episode", "position"), name="uniq_passage_position"),
        ]
        indexes = [
            # Covering for the prefilter: an index-only scan reads the subject's codes (about 130 bytes an
            # entry) and never the wide rows; the same index serves the subject's timeline.
            models.Index(
                fields=("tenant", "subject", "-occurred_at"),
                include=("embedding_code", "episode", "id"),
                name="passage_subject_codes",
            ),
            # The passage before or after another in its session (the router's neighbours).
            models.Index(
                fields=("tenant", "session", "occurred_at", "episode", "position"), name="passage_tenant_session_seq"
            ),
            # Led by the subject too: the router's overlap and text channels read one subject's passages
            # that carry the query's entities or topics, or match its words, which these find without
            # reading the subject's other rows (a GIN index serves any subset of its columns:
            # tenant-wide searches too).
            GinIndex(fields=("tenant", "subject", "entities"), name="passage_subject_entities_gin"),
            GinIndex(fields=("tenant", "subject", "topics"), name="passage_subject_topics_gin"),
            GinIndex(fields=("tenant", "subject", "search_vector"), name="passage_subject_fts_gin"),
            models.Index(
                fields=("tenant", "id"), condition=models.Q(embedding__isnull=True), name="passage_embedding_backlog"
            ),
            # Embedded, sentences not looked at: the drain's work for a tenant that starts keeping them.
            models.Index(
                fields=("tenant", "id"),
                condition=models.Q(embedding__isnull=False, sentence_count__isnull=True),
                name="passage_sentence_backlog",
            ),
            HnswIndex(
                name="passage_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"passage:{self.pk} of episode:{self.episode_id}"


class PassageSentence(TenantModel):
    """The vector of one sentence of a passage of several (episodic.passages._sentences), stored when the
    passage gets its own: history's pool reads the best sentence's cosine to the query beside the
    passage's (a passage's one vector dilutes the sentence that answers). A passage of one sentence has
    none: its vector is its sentence's. Derived, never edited but by a change of embedder, and it goes
    with its passage."""

    passage = models.ForeignKey(
        Passage, on_delete=models.DO_NOTHING, related_name="sentences", db_index=False, db_constraint=False
    )
    episode = models.ForeignKey(
        Episode, on_delete=models.DO_NOTHING, related_name="+", db_index=False, db_constraint=False
    )
    subject = models.CharField(max_length=255)
    position = models.PositiveSmallIntegerField()
    embedding = VectorField(dimensions=EMBEDDING_DIM)

    class Meta:
        constraints = [
            # Also the pool's lookup of a passage's sentences.
            models.UniqueConstraint(fields=("tenant", "passage", "position"), name="uniq_passage_sentence"),
        ]
        indexes = [models.Index(fields=("tenant", "episode"), name="passage_sentence_episode")]

    def __str__(self) -> str:
        return f"sentence {self.position} of passage:{self.passage_id}"


class AliasSource(models.TextChoices):
    OPERATOR = "operator"
    LEARNED = "learned"


class EntityAlias(TenantModel):
    """Another name of an entity: `alias` stands for `entity` ("mel" for "melanie"). Both are stored in
    the normal form of entity names (episodic.aliases.alias_key).

    An operator's alias (`subject` empty) holds for the whole tenant; a learned one, for the subject
    whose conversation showed it (`subject`, `source_episode_id`), and it is that subject's data."""

    alias = models.CharField(max_length=255)
    entity = models.CharField(max_length=255)
    source = models.CharField(max_length=8, choices=AliasSource.choices)
    subject = models.CharField(max_length=255, blank=True, default="")
    # No foreign key: archiving moves episodes to cold storage, and the alias outlives that.
    source_episode_id = models.BigIntegerField(null=True, blank=True)
    created_by = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name_plural = "entity aliases"
        constraints = [
            # One operator alias per name (subject ""), one learned alias per name and subject.
            models.UniqueConstraint(fields=("tenant", "alias", "subject"), name="uniq_entity_alias"),
            models.CheckConstraint(condition=~models.Q(alias=models.F("entity")), name="entity_alias_not_itself"),
            models.CheckConstraint(
                condition=models.Q(source=AliasSource.OPERATOR, subject="")
                | (models.Q(source=AliasSource.LEARNED) & ~models.Q(subject="")),
                name="entity_alias_source_subject",
            ),
        ]
        indexes = [
            models.Index(fields=("tenant", "entity"), name="entityalias_entity"),
            models.Index(fields=("tenant", "-created_at", "-id"), name="entityalias_created"),
        ]

    def __str__(self) -> str:
        return f"{self.alias} -> {self.entity}"
