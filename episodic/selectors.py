"""Reads of episodic memory: lists, sessions, the embedding backlog, and hybrid search."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    FloatField,
    Min,
    Q,
    QuerySet,
    Sum,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce
from pgvector.django import CosineDistance, VectorField

from core.db import array_literal, fetch_after_set_locals, fetch_prepared
from core.embedding import EMBEDDING_DIM, configure_vector_scan, embed_one, vector_scan_settings
from core.errors import NotFound, ValidationProblem
from core.rounding import rounded
from core.timestamps import EPOCH, epoch_us_sql, from_epoch_us
from episodic.aliases import Aliases, aliases_for, has_aliases
from episodic.extraction import MAX_ENTITY_CHARS, MAX_TOPIC_CHARS, extract_entities_topics, normalise_terms
from episodic.models import Episode, Passage, Session, SessionStatus
from episodic.validation import check_session_id
from tenants.models import Tenant

# Reciprocal rank fusion: each channel adds 1 / (RRF_K + rank). 60 is the constant of the original paper.
RRF_K = 60
CHANNEL_WEIGHTS = {"text": 1.0, "vector": 1.0, "overlap": 1.0}
CANDIDATES_PER_CHANNEL = 100
TEXT_MATCH_CAP = 2000
MAX_QUERY_TERMS = 32
HNSW_EF_SEARCH = 100
_TERM = re.compile(r"[\w]+", re.UNICODE)


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def entity_names(
    *, tenant: Tenant, entities: Sequence[str], subject: str | None = None, aliases: Aliases | None = None
) -> list[list[str]]:
    """For each distinct entity (normalised), every name an episode may carry it under: the name, its
    canonical name and the canonical name's other aliases (episodic.aliases). One query; none when no
    entity is given, the tenant has no aliases, or the caller gives `aliases` (aliases_for with groups,
    for these names and subject, or more)."""
    terms = normalise_terms(entities, max_chars=MAX_ENTITY_CHARS)
    if not terms or (aliases is None and not has_aliases(tenant)):
        return [[term] for term in terms]
    if aliases is None:
        aliases = aliases_for(tenant=tenant, names=terms, subject=subject, groups=True)
    return [normalise_terms([term, *aliases.group(term)], max_chars=MAX_ENTITY_CHARS) for term in terms]


def episode_list(
    *,
    tenant: Tenant,
    subject: str | None = None,
    session: str | Session | None = None,
    agent: str | None = None,
    kind: str | Sequence[str] | None = None,
    entity: str | None = None,
    topic: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[Episode]:
    """The tenant's episodes matching every given filter, newest first (by occurred_at, then id).
    `session` is the session's external id (or a Session); `since` is inclusive, `until` exclusive."""
    qs = Episode.objects.all()
    if subject is not None:
        qs = qs.filter(subject=subject)
    if isinstance(session, Session):
        qs = qs.filter(session_id=session.pk)
    elif session is not None:
        qs = qs.filter(session__tenant_id=tenant.id, session__external_id=session)
    if agent is not None:
        qs = qs.filter(agent=agent)
    kinds = _as_list(kind)
    if kinds:
        qs = qs.filter(kind__in=kinds)
    for names in entity_names(tenant=tenant, entities=[entity] if entity else [], subject=subject):
        qs = qs.filter(entities__contains=names) if len(names) == 1 else qs.filter(entities__overlap=names)
    if topic:
        qs = qs.filter(topics__contains=normalise_terms([topic], max_chars=MAX_TOPIC_CHARS))
    if since is not None:
        qs = qs.filter(occurred_at__gte=since)
    if until is not None:
        qs = qs.filter(occurred_at__lt=until)
    # The session's own tenant_id too: on Citus a join is routed to one shard only when every table in it is
    # pinned to the tenant.
    return qs.filter(session__tenant_id=tenant.id).select_related("session").order_by("-occurred_at", "-id")


def session_get(*, tenant: Tenant, external_id: str) -> Session:
    check_session_id(external_id)
    session = Session.objects.filter(external_id=external_id).first()
    if session is None:
        raise NotFound(f"No session {external_id!r}.")
    return session


@dataclass(frozen=True)
class SessionDetail:
    session: Session
    by_kind: dict[str, int]
    tokens: int
    first_event_at: datetime | None
    pending_embeddings: int


def session_detail(*, tenant: Tenant, external_id: str) -> SessionDetail:
    """The session with its counts: episodes by kind, tokens, episodes still waiting for an embedding."""
    session = session_get(tenant=tenant, external_id=external_id)
    rows = (
        Episode.objects.filter(session_id=session.pk)
        .values("kind")
        .annotate(n=Count("id"), tokens=Sum("token_count"), first=Min("occurred_at"))
        .order_by("kind")
    )
    pending = Episode.objects.filter(session_id=session.pk, embedding__isnull=True).count()
    firsts = [r["first"] for r in rows if r["first"] is not None]
    return SessionDetail(
        session=session,
        by_kind={r["kind"]: r["n"] for r in rows},
        tokens=sum(r["tokens"] or 0 for r in rows),
        first_event_at=min(firsts) if firsts else None,
        pending_embeddings=pending,
    )


def embedding_backlog(*, tenant: Tenant) -> int:
    """Episodes still waiting for an embedding (an index-only count on the partial backlog index)."""
    return Episode.objects.filter(embedding__isnull=True).count()


@dataclass(frozen=True)
class EpisodicStats:
    episodes: int
    sessions: int
    open_sessions: int
    embedding_backlog: int
    oldest_pending_created_at: datetime | None


def episodic_stats(*, tenant: Tenant) -> EpisodicStats:
    """Counts for /v1/stats and the admin: volume, open sessions, embedding backlog and its lag."""
    backlog = Episode.objects.filter(embedding__isnull=True)
    oldest = backlog.order_by("id").values_list("created_at", flat=True).first()
    sessions = Session.objects.aggregate(total=Count("id"), open=Count("id", filter=~Q(status=SessionStatus.ENDED)))
    return EpisodicStats(
        episodes=Episode.objects.count(),
        sessions=sessions["total"],
        open_sessions=sessions["open"],
        embedding_backlog=backlog.count(),
        oldest_pending_created_at=oldest,
    )


@dataclass(frozen=True)
class ScoredEpisode:
    episode: Episode
    score: float
    score_parts: dict[str, float] = field(default_factory=dict)


def _or_tsquery(text: str) -> str:
    """The query's words OR-ed for to_tsquery: a natural-language question rarely has every word in one
    event, so any word may match and ts_rank orders by how many and how well."""
    terms: list[str] = []
    for term in _TERM.findall(text.lower()):
        term = term.strip("_")
        if term and term not in terms:
            terms.append(term)
    return " | ".join(terms[:MAX_QUERY_TERMS])


def _check_dimension(vector: list[float]) -> list[float]:
    if len(vector) != EMBEDDING_DIM:
        raise ValidationProblem.at(
            "/query_embedding", f"Wrong dimension: {len(vector)}; the embedding dimension is {EMBEDDING_DIM}."
        )
    return vector


def _rrf(ranked: Iterable[int], weight: float, into: dict[int, float]) -> None:
    for rank, episode_id in enumerate(ranked, start=1):
        into[episode_id] = into.get(episode_id, 0.0) + weight / (RRF_K + rank)


@dataclass(frozen=True)
class _Ranking:
    """The fused order of the pool, and what is needed to report each hit's raw channel values."""

    top: list[tuple[int, float]]
    search_query: SearchQuery | None
    vector: list[float] | None
    # Cosine similarity of the rows the vector channel found; the final fetch computes only the others'.
    similarity: dict[int, float]
    tsquery: str
    # The overlap of the query's entities (each as all its names) and topics (_overlap_sql), or None
    # when it has none.
    overlap: tuple[list[list[str]], list[str]] | None
    # The ranked table: episodes, or their passages.
    table: str = "episodic_episode"

    @property
    def ids(self) -> list[int]:
        return [episode_id for episode_id, _ in self.top]

    def annotate(self, qs: QuerySet[Episode]) -> QuerySet[Episode]:
        """text_rank, similarity and overlap of the ranked rows, for the final fetch."""
        if self.search_query is not None:
            qs = qs.annotate(text_rank=SearchRank(F("search_vector"), self.search_query, normalization=32))
        else:
            qs = qs.annotate(text_rank=Value(0.0, output_field=FloatField()))
        unknown = [i for i in self.ids if i not in self.similarity] if self.vector is not None else []
        if unknown:
            # Reading a vector back costs more than the rest of the row: only for the rows without one yet.
            qs = qs.annotate(
                similarity=Case(
                    When(id__in=unknown, then=Coalesce(1 - CosineDistance("embedding", self.vector), Value(0.0))),
                    default=Value(0.0),
                    output_field=FloatField(),
                )
            )
        else:
            qs = qs.annotate(similarity=Value(0.0, output_field=FloatField()))
        expr = _overlap_expression(*self.overlap, table=self.table) if self.overlap is not None else None
        return qs.annotate(overlap=expr if expr is not None else Value(0.0))

    def scored(
        self, fused: float, episode_id: int, text_rank: float | None, similarity: float | None, overlap: float | None
    ) -> tuple[float, dict[str, float]]:
        best = sum(CHANNEL_WEIGHTS.values()) / (RRF_K + 1)
        parts = {
            "text": round(float(text_rank or 0.0), 6),
            "vector": round(_finite(self.similarity.get(episode_id, similarity or 0.0)), 6),
            "overlap": round(float(overlap or 0.0), 6),
            "fused": round(fused, 6),
        }
        return round(fused / best, 6), parts


def _finite(value: float) -> float:
    return float(value) if math.isfinite(value) else 0.0


def vector_prefilter_candidates(pool: int) -> int:
    """How many passages the Hamming prefilter hands to exact re-scoring (0: the exact scan alone):
    ENGRAM["VECTOR_PREFILTER_CANDIDATES"] for the channel's default pool of 100, proportionally more
    for a bigger pool (the router asks for up to 400), so that the tail of the pool is re-scored as
    well as its head; never fewer than the pool."""
    per_hundred = int(settings.ENGRAM["VECTOR_PREFILTER_CANDIDATES"])
    if per_hundred <= 0:
        return 0
    return max(pool, -(-per_hundred * pool // CANDIDATES_PER_CHANNEL))


@dataclass(frozen=True)
class _PassageScope:
    """The passages a search ranks, as SQL over `episodic_passage`: written out rather than compiled by
    the ORM on every request (the router's search is one statement a request over thousands of rows;
    compiling querysets for it cost more CPU than the rest of its Python). The tenant is named in
    every condition, as row-level security and Citus both want."""

    tenant: Tenant
    subject: str | None = None
    until: datetime | None = None
    excluded_episodes: tuple[int, ...] = ()
    # Parts of sessions' summary episodes are left out of what is ranked (Passage.summary).
    skip_summaries: bool = False

    def where(self, alias: str, *, index_only: bool = False) -> str:
        """The scope's conditions on `alias`; with `index_only`, only those the covering index
        passage_subject_codes can answer (the prefilter's shortlist and its gate read no wide row, and
        the rows they pass are filtered in full when they are read)."""
        conditions = [f"{alias}.tenant_id = %(tenant)s"]
        if self.subject is not None:
            conditions.append(f"{alias}.subject = %(subject)s")
        if self.until is not None:
            conditions.append(f"{alias}.occurred_at < %(until)s")
        if self.excluded_episodes:
            conditions.append(f"NOT ({alias}.episode_id = ANY(%(excluded)s::bigint[]))")
        if self.skip_summaries and not index_only:
            conditions.append(f"NOT {alias}.summary")
        return " AND ".join(conditions)

    def params(self, **more: Any) -> dict[str, Any]:
        return {
            "tenant": self.tenant.id,
            "subject": self.subject,
            "until": self.until,
            "excluded": array_literal(self.excluded_episodes),
            **more,
        }


def _named(sql: str, params: Sequence[Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """`sql` with its positional placeholders named `prefix0`, `prefix1`, ..., and its params by name."""
    pieces = sql.split("%s")
    if len(pieces) != len(params) + 1:
        raise ValueError("one param per placeholder")
    named = {f"{prefix}{i}": value for i, value in enumerate(params)}
    text = pieces[0] + "".join(f"%({prefix}{i})s{piece}" for i, piece in enumerate(pieces[1:]))
    return text, named


def _passage_text_channel(scope: _PassageScope) -> str:
    """The text channel over passages as a CTE body: the TEXT_MATCH_CAP most recent matches of
    %(tsquery)s, ranked by ts_rank, the best %(pool)s with their rank `n` (from 1)."""
    return (
        "SELECT u.id, u.n FROM unnest(ARRAY("  # noqa: S608
        f"SELECT m.id FROM (SELECT p.id, p.search_vector FROM episodic_passage p WHERE {scope.where('p')}"
        " AND p.search_vector @@ to_tsquery('english'::regconfig, %(tsquery)s)"
        " ORDER BY p.occurred_at DESC, p.id DESC LIMIT %(cap)s) m"
        " ORDER BY ts_rank(m.search_vector, to_tsquery('english'::regconfig, %(tsquery)s), 32) DESC, m.id DESC"
        " LIMIT %(pool)s)) WITH ORDINALITY AS u(id, n)"
    )


def _passage_overlap_channel(
    scope: _PassageScope, overlap: tuple[list[list[str]], list[str]], params: dict[str, Any]
) -> str | None:
    """The entity/topic overlap channel over passages as a CTE body (the passages that carry one of
    the query's entities or topics, by how many, newest first; the best %(pool)s with their rank `n`),
    its parameters added to `params`; None when the query has neither."""
    scored = _overlap_sql(*overlap, table="p")
    if scored is None:
        return None
    entities, topics = overlap
    names = [name for group in entities for name in group]
    carries = []
    if names:
        carries.append("p.entities && %(overlap_names)s::varchar[]")
    if topics:
        carries.append("p.topics && %(overlap_topics)s::varchar[]")
    expression, expression_params = _named(*scored, prefix="overlap_")
    params.update(expression_params, overlap_names=names, overlap_topics=topics)
    return (
        "SELECT u.id, u.n FROM unnest(ARRAY("  # noqa: S608
        f"SELECT p.id FROM episodic_passage p WHERE {scope.where('p')} AND ({' OR '.join(carries)})"
        f" ORDER BY {expression} DESC, p.occurred_at DESC, p.id DESC LIMIT %(pool)s)) WITH ORDINALITY AS u(id, n)"
    )


def _passage_vector_channel(scope: _PassageScope, prefilter: int) -> tuple[str, str]:
    """The vector channel over passages: the CTE `q` holding the query's vector (%(vector)s, sent once:
    a 384-float literal is 8 kB of statement to quote and parse) and, with a prefilter, its binary
    code, computed once rather than per row; and a CTE body of the %(pool)s passages of `scope`
    nearest by cosine distance, with their `distance` and their rank `n` (nearest first, ties: newest
    id; a stored vector without a direction, whose distance is NaN, is unrelated and left out).

    With `prefilter` and more than `prefilter` coded passages in scope, the candidates are the
    `prefilter` passages nearest by Hamming distance between binary codes, read from the covering index
    passage_subject_codes without touching the wide rows, and only they are re-scored by cosine. With
    fewer the scan is exact. Both branches are gated by the same count (at most prefilter + 1 index
    entries, asked once in the CTE `gate`), so that only one runs; both compute their distances exactly: `+ 0` keeps the planner from
    serving their order from the HNSW index, whose iterative scan hands rows over in relaxed order (a
    sort that trusted it as presorted served misordered neighbours on small tables). Without
    `prefilter`, the HNSW index may serve the scan, as a large subject wants."""
    distance = "p.embedding <=> (SELECT v FROM q)"
    exact = (
        "SELECT p.id, {distance} AS distance FROM episodic_passage p"  # noqa: S608
        f" WHERE {scope.where('p')} AND p.embedding IS NOT NULL{{gate}} ORDER BY 2, 1 DESC LIMIT %(pool)s"
    )
    if not prefilter:
        q = "q AS (SELECT %(vector)s::vector AS v)"
        nearest = exact.format(distance=distance, gate="")
    else:
        # Asked once for both branches (a CTE read twice is computed once).
        gate = (
            "gate AS (SELECT EXISTS (SELECT 1 FROM episodic_passage c"  # noqa: S608
            f" WHERE {scope.where('c', index_only=True)}"
            " AND c.embedding_code IS NOT NULL OFFSET %(prefilter)s LIMIT 1) AS many)"
        )
        many = "(SELECT many FROM gate)"
        shortlist = (
            f"SELECT c.id FROM episodic_passage c WHERE {scope.where('c', index_only=True)}"  # noqa: S608
            " AND c.embedding_code IS NOT NULL"
            " ORDER BY c.embedding_code <~> (SELECT code FROM q), c.id DESC LIMIT %(prefilter)s"
        )
        # = ANY(ARRAY(...)), not IN (...): the shortlist runs once, first, and the re-scoring is one probe
        # of the primary key per candidate whatever the statistics say (with IN and a stale row estimate,
        # the planner may walk the tenant's whole key instead).
        rescored = (
            f"SELECT p.id, ({distance}) + 0 AS distance FROM episodic_passage p"  # noqa: S608
            f" WHERE p.tenant_id = %(tenant)s{' AND NOT p.summary' if scope.skip_summaries else ''}"
            f" AND {many} AND p.id = ANY(ARRAY({shortlist}))"
            " ORDER BY 2, 1 DESC LIMIT %(pool)s"
        )
        q = (
            "s AS (SELECT %(vector)s::vector AS v),"  # noqa: S608
            f" q AS (SELECT v, binary_quantize(v)::bit({EMBEDDING_DIM}) AS code FROM s), {gate}"
        )
        nearest = f"({exact.format(distance=f'({distance}) + 0', gate=f' AND NOT {many}')}) UNION ALL ({rescored})"
    ranked = (
        "SELECT x.id, x.distance, row_number() OVER (ORDER BY x.distance, x.id DESC) AS n"  # noqa: S608
        f" FROM ({nearest}) x WHERE x.distance <> 'NaN'::float8"
    )
    return q, ranked


def _nearest(*, base: QuerySet[Any], vector: list[float], pool: int) -> list[tuple[int, float]]:
    """The pool rows of `base` nearest to `vector` by cosine distance, nearest first (ties: newest id);
    passages have their own channel with a binary prefilter (_passage_vector_channel)."""
    return list(
        base.filter(embedding__isnull=False)
        .annotate(distance=CosineDistance("embedding", vector))
        .order_by("distance", "-id")
        .values_list("id", "distance")[:pool]
    )


def _query_overlap(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None,
    entities: Sequence[str] | None,
    topics: Sequence[str] | None,
    extracted: tuple[Sequence[str], Sequence[str]] | None,
    aliases: Aliases | None = None,
) -> tuple[list[list[str]], list[str]] | None:
    """What the overlap channel looks for: the query's entities (each as all its names, counted once:
    "mel" or "melanie") and topics, from the extractor unless `extracted` gives them, plus `entities`
    and `topics`; None when there are none."""
    if extracted is not None:
        query_entities, query_topics = list(extracted[0]), list(extracted[1])
    else:
        query_entities, query_topics = extract_entities_topics(tenant=tenant, text=query) if query else ([], [])
    wanted_entities: list[list[str]] = []
    for names in entity_names(
        tenant=tenant, entities=[*query_entities, *(entities or ())], subject=subject, aliases=aliases
    ):
        if not any(set(names) == set(other) for other in wanted_entities):
            wanted_entities.append(names)
    wanted_topics = normalise_terms([*query_topics, *(topics or ())], max_chars=MAX_TOPIC_CHARS)
    if not wanted_entities and not wanted_topics:
        return None
    return wanted_entities, wanted_topics


def _query_vector(query: str, query_embedding: list[float] | Future[list[float]] | None) -> list[float] | None:
    if isinstance(query_embedding, Future):
        return _check_dimension(query_embedding.result())
    return query_embedding if query_embedding is not None else (embed_one(query) if query.strip() else None)


def _rank(
    *,
    tenant: Tenant,
    subject: str | None,
    base: QuerySet[Episode],
    query: str,
    entities: Sequence[str] | None,
    topics: Sequence[str] | None,
    limit: int,
    query_embedding: list[float] | Future[list[float]] | None,
    exclude_ids: Iterable[int] | None,
) -> _Ranking:
    if limit < 1:
        raise ValidationProblem.at("/limit", "Must be at least 1.")
    if isinstance(query_embedding, list):
        _check_dimension(query_embedding)
    base = base.order_by()
    excluded = set(exclude_ids or ())
    if excluded:
        base = base.exclude(id__in=excluded)
    pool = max(limit, CANDIDATES_PER_CHANNEL)

    fused: dict[int, float] = {}
    tsquery = _or_tsquery(query)
    search_query = SearchQuery(tsquery, search_type="raw", config="english") if tsquery else None
    if search_query is not None:
        # Ranking reads every match it ranks; a query of common words can match most of a subject's
        # history, so the TEXT_MATCH_CAP most recent matches are ranked (the vector channel sees all).
        matches = base.filter(search_vector=search_query).order_by("-occurred_at", "-id")
        inner, params = matches.values("id", "search_vector")[:TEXT_MATCH_CAP].query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT m.id FROM ({inner}) m ORDER BY ts_rank(m.search_vector, "  # noqa: S608
                "to_tsquery('english'::regconfig, %s), 32) DESC, m.id DESC LIMIT %s",
                [*params, tsquery, pool],
            )
            text_ids = [row[0] for row in cursor.fetchall()]
        _rrf(text_ids, CHANNEL_WEIGHTS["text"], fused)

    overlap = _query_overlap(
        tenant=tenant, query=query, subject=subject, entities=entities, topics=topics, extracted=None
    )
    table = base.model._meta.db_table
    if overlap is not None:
        wanted_entities, wanted_topics = overlap
        any_name = [name for names in wanted_entities for name in names]
        carries = Q(entities__overlap=any_name) if any_name else Q(pk__in=[])
        if wanted_topics:
            carries |= Q(topics__overlap=wanted_topics)
        overlap_ids = list(
            base.filter(carries)
            .annotate(overlap=_overlap_expression(wanted_entities, wanted_topics, table=table))
            .order_by("-overlap", "-occurred_at", "-id")
            .values_list("id", flat=True)[:pool]
        )
        _rrf(overlap_ids, CHANNEL_WEIGHTS["overlap"], fused)

    vector = _query_vector(query, query_embedding)
    similarity: dict[int, float] = {}
    if vector is not None:
        # The scan settings are transaction-local: open a transaction only when the caller has none.
        with contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic():
            configure_vector_scan(ef_search=pool, floor=HNSW_EF_SEARCH)
            nearest = _nearest(base=base, vector=vector, pool=pool)
        # A stored vector without a direction (zero, or beyond 32-bit floats) has a NaN distance: unrelated.
        nearest = [(episode_id, distance) for episode_id, distance in nearest if not math.isnan(distance)]
        similarity = {episode_id: 1 - distance for episode_id, distance in nearest}
        _rrf((episode_id for episode_id, _ in nearest), CHANNEL_WEIGHTS["vector"], fused)

    top = sorted(fused.items(), key=lambda kv: (-kv[1], -kv[0]))[:limit]
    return _Ranking(
        top=top,
        search_query=search_query,
        vector=vector,
        similarity=similarity,
        tsquery=tsquery,
        overlap=overlap,
        table=table,
    )


def episode_search(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    session: str | Session | None = None,
    agent: str | None = None,
    kinds: Sequence[str] | None = None,
    entities: Sequence[str] | None = None,
    topics: Sequence[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: int = 20,
    query_embedding: list[float] | Future[list[float]] | None = None,
    exclude_ids: Iterable[int] | None = None,
    entity: str | None = None,
    topic: str | None = None,
) -> list[ScoredEpisode]:
    """Hybrid ranking of the episodes that pass the filters: full-text (ts_rank over the tsvector, of
    the TEXT_MATCH_CAP most recent matches), vector (cosine similarity of the stored embedding to the query's), and entity/topic overlap (the
    query's own entities and topics, from the extractor, plus `entities`/`topics`), fused by
    reciprocal rank. `entity`/`topic` are hard filters as in episode_list; `entities`/`topics` only
    rank. score_parts: text, vector, overlap (each channel's raw value, 0 when absent) and fused.
    `query_embedding` may be a future: it is awaited when the vector channel runs, after the lexical
    ones, so that the model call overlaps them. Deterministic for the same stored state: ties break on
    the episode id."""
    base = episode_list(
        tenant=tenant,
        subject=subject,
        session=session,
        agent=agent,
        kind=kinds,
        entity=entity,
        topic=topic,
        since=since,
        until=until,
    )
    ranking = _rank(
        tenant=tenant,
        subject=subject,
        base=base,
        query=query,
        entities=entities,
        topics=topics,
        limit=limit,
        query_embedding=query_embedding,
        exclude_ids=exclude_ids,
    )
    # The vectors stay in the database: parsing 384 floats a row costs more than the rest of the row.
    rows = ranking.annotate(
        Episode.objects.filter(id__in=ranking.ids, session__tenant_id=tenant.id)
        .select_related("session")
        .defer("embedding", "search_vector")
        .annotate(has_embedding=ExpressionWrapper(Q(embedding__isnull=False), output_field=BooleanField()))
    )
    by_id = {e.id: e for e in rows}
    out: list[ScoredEpisode] = []
    for episode_id, fused in ranking.top:
        if (e := by_id.get(episode_id)) is not None:
            # The annotations of ranking.annotate.
            raw = [getattr(e, name) for name in ("text_rank", "similarity", "overlap")]
            score, parts = ranking.scored(fused, episode_id, *raw)
            out.append(ScoredEpisode(episode=e, score=score, score_parts=parts))
    return out


# Rows are plain slotted dataclasses, not frozen ones: a context request builds several hundred, and a
# frozen dataclass sets each field through object.__setattr__ (5 us a row against 1 us).
@dataclass(slots=True)
class EpisodeRow:
    """The few columns of an episode that a context line and its source need. `payload` is read for
    the recent events only (procedure matching looks at their tool calls)."""

    id: int
    session: str
    kind: str
    role: str
    content: str
    occurred_at: datetime
    external_id: str | None
    content_hash: str
    # Tokens of `content` (cl100k), counted at ingestion: the line's cost (router.pricing.said_tokens).
    token_count: int = 0
    payload: dict[str, Any] = field(default_factory=dict)


# An EpisodeRow's columns over `episodic_episode e` and its session `episodic_session s`. occurred_at
# comes as microseconds since the epoch: Django's loader for timestamptz runs in Python, and a context
# request reads hundreds of rows.
ROW_COLUMNS = (
    f"e.id, s.external_id, e.kind, e.role, e.content, {epoch_us_sql('e.occurred_at')},"
    " e.external_id, e.content_hash, e.token_count"
)


def _row_fields(values: Sequence[Any]) -> dict[str, Any]:
    """EpisodeRow's fields from the columns of ROW_COLUMNS (which PASSAGE_COLUMNS begins with)."""
    return {
        "id": values[0],
        "session": values[1] or "",
        "kind": values[2],
        "role": values[3],
        "content": values[4],
        "occurred_at": from_epoch_us(values[5]),
        "external_id": values[6],
        "content_hash": values[7],
        "token_count": values[8],
    }


def _row(values: Sequence[Any], payload: Any = None) -> EpisodeRow:
    if isinstance(payload, str):
        payload = json.loads(payload)
    return EpisodeRow(**_row_fields(values), payload=payload or {})


_FAR_FUTURE = datetime(9999, 1, 1, tzinfo=UTC)
# The session's id first, so that its latest events are one backward step in episode_session_seq
# rather than the whole session sorted.
_RECENT_SQL = f"""
SELECT {ROW_COLUMNS}, e.payload
FROM episodic_episode e JOIN episodic_session s ON s.id = e.session_id AND s.tenant_id = e.tenant_id
WHERE e.session_id = (SELECT id FROM episodic_session WHERE tenant_id = %(tenant)s AND external_id = %(session)s)
  AND e.tenant_id = %(tenant)s AND e.occurred_at < %(until)s
ORDER BY e.occurred_at DESC, e.id DESC
LIMIT %(limit)s
"""  # noqa: S608


def episode_rows_recent(
    *, tenant: Tenant, session: str, until: datetime | None = None, limit: int = 40
) -> list[EpisodeRow]:
    """The latest events of a session, newest first, as rows (the router reads hundreds a request)."""
    found = _fetch(_RECENT_SQL, tenant=tenant, until=until, limit=limit, session=session)
    return [_row(values, payload) for *values, payload in found]


_LATEST_SQL = f"""
SELECT {ROW_COLUMNS}
FROM episodic_episode e JOIN episodic_session s ON s.id = e.session_id AND s.tenant_id = e.tenant_id
WHERE e.tenant_id = %(tenant)s AND e.subject = %(subject)s AND e.occurred_at < %(until)s
ORDER BY e.occurred_at DESC, e.id DESC
LIMIT %(limit)s
"""  # noqa: S608


def episode_rows_latest(
    *, tenant: Tenant, subject: str, until: datetime | None = None, limit: int = 5
) -> list[EpisodeRow]:
    """The subject's latest events in any session, newest first (index episode_subject_time)."""
    return [_row(values) for values in _fetch(_LATEST_SQL, tenant=tenant, until=until, limit=limit, subject=subject)]


def _fetch(sql: str, *, tenant: Tenant, until: datetime | None, limit: int, **params: Any) -> list[tuple[Any, ...]]:
    """The rows of one of the latest-events statements: events before `until` (or ever), `limit` of them."""
    with connection.cursor() as cursor:
        cursor.execute(sql, {"tenant": tenant.id, "until": until or _FAR_FUTURE, "limit": limit, **params})
        return cursor.fetchall()


@dataclass(slots=True)
class PassageRow(EpisodeRow):
    """A passage with the columns of its episode that a context line needs: `id`, `kind`, `role`,
    `external_id` are the episode's; `content`, `token_count` and `occurred_at` the passage's.
    `content_hash` is the episode's for a passage that is the whole episode, else it names the passage
    within it (identical episodes split identically)."""

    passage_id: int = 0
    position: int = 0
    char_start: int = 0
    char_end: int = 0
    last: bool = True
    # The passage's line as a context renders it and its tokens (episodic.passages.passage_line); ""
    # where it was not stored yet.
    line: str = ""
    line_tokens: int = 0

    @property
    def whole(self) -> bool:
        return self.position == 0 and self.last


@dataclass(slots=True)
class ScoredPassageRow:
    row: PassageRow
    score: float
    score_parts: dict[str, float]
    # How often each of the asked terms (`count_terms`) is among the passage's index terms, and how many
    # index terms it has; None where they were not stored yet.
    term_counts: list[int] | None = None
    terms_length: int | None = None


# A PassageRow's columns over `episodic_passage p`, its episode `e` and its session `s`.
PASSAGE_COLUMNS = (
    f"e.id, s.external_id, e.kind, e.role, p.content, {epoch_us_sql('p.occurred_at')},"
    " e.external_id, e.content_hash, p.token_count, p.id, p.position, p.char_start, p.char_end, p.last,"
    " p.line, p.line_tokens"
)
# The passage's columns and its episode's that a PassageRow needs (history's pool reads them in its
# `top`), and PASSAGE_COLUMNS over them, with the session `s`.
_TOP_COLUMNS = (
    "p.id, p.tenant_id, p.episode_id, p.session_id, {content} AS content, p.occurred_at, p.token_count, p.position,"
    " p.char_start, p.char_end, p.last, p.line, p.line_tokens"
)
# A passage's content where its reader needs it when it reads the stored line and index terms (the
# router): a line not stored is made from the content, a passage's term counts not stored are counted
# in it.
_CONTENT_WHERE_UNSTORED = "CASE WHEN p.line = '' OR p.index_terms IS NULL THEN p.content ELSE '' END"
_TOP_EPISODE_COLUMNS = "e.kind, e.role, e.external_id AS episode_external_id, e.content_hash"
_TOP_PASSAGE_COLUMNS = (
    f"p.episode_id, s.external_id, p.kind, p.role, p.content, {epoch_us_sql('p.occurred_at')},"
    " p.episode_external_id, p.content_hash, p.token_count, p.id, p.position, p.char_start, p.char_end, p.last,"
    " p.line, p.line_tokens"
)
PASSAGE_JOINS = (
    "JOIN episodic_episode e ON e.tenant_id = p.tenant_id AND e.id = p.episode_id"
    " JOIN episodic_session s ON s.tenant_id = p.tenant_id AND s.id = p.session_id"
)


def _passage_row(values: Sequence[Any]) -> PassageRow:
    # Field by field rather than through _row_fields' dict: a context request reads up to 400.
    position, last = values[10], values[13]
    return PassageRow(
        id=values[0],
        session=values[1] or "",
        kind=values[2],
        role=values[3],
        content=values[4],
        occurred_at=from_epoch_us(values[5]),
        external_id=values[6],
        content_hash=values[7] if position == 0 and last else f"{values[7]}:{position}",
        token_count=values[8],
        payload={},
        passage_id=values[9],
        position=position,
        char_start=values[11],
        char_end=values[12],
        last=last,
        line=values[14],
        line_tokens=values[15],
    )


@dataclass(frozen=True)
class PassagePool:
    """A ranked pool of passages, and the summaries of the sessions it draws on: session -> (summary,
    started_at), for the sessions of the pool that have one."""

    rows: list[ScoredPassageRow]
    summaries: dict[str, tuple[str, datetime]]


@dataclass(frozen=True, slots=True)
class PassageColumns:
    """A ranked pool of passages as columns, in rank order (passage_pool_columns): a list per field of
    PassageRow and of its score (the score parts rounded as ScoredPassageRow has them), so that a
    reader can compute over the pool a column at a time and build a row only where it needs one
    (`row`, `scored_row`). `summaries` as PassagePool has them."""

    episode_id: list[int]
    session: list[str]
    kind: list[str]
    role: list[str]
    # "" where the pool was read with `stored_lines` and the passage's line and index terms are stored.
    content: list[str]
    # Microseconds since the epoch (core.timestamps), and as datetimes.
    occurred_us: list[int]
    occurred_at: list[datetime]
    external_id: list[str | None]
    content_hash: list[str]
    token_count: list[int]
    passage_id: list[int]
    position: list[int]
    char_start: list[int]
    char_end: list[int]
    last: list[bool]
    line: list[str]
    line_tokens: list[int]
    score: list[float]
    text: list[float]
    vector: list[float]
    overlap: list[float]
    fused: list[float]
    term_counts: list[list[int] | None]
    terms_length: list[int | None]
    summaries: dict[str, tuple[str, datetime]]
    # The best sentence cosine of each row (passage_pool_columns' `sentences`), None when not read.
    sentence: list[float] | None = None

    def __len__(self) -> int:
        return len(self.passage_id)

    def row(self, i: int) -> PassageRow:
        return PassageRow(
            id=self.episode_id[i],
            session=self.session[i],
            kind=self.kind[i],
            role=self.role[i],
            content=self.content[i],
            occurred_at=self.occurred_at[i],
            external_id=self.external_id[i],
            content_hash=self.content_hash[i],
            token_count=self.token_count[i],
            payload={},
            passage_id=self.passage_id[i],
            position=self.position[i],
            char_start=self.char_start[i],
            char_end=self.char_end[i],
            last=self.last[i],
            line=self.line[i],
            line_tokens=self.line_tokens[i],
        )

    def score_parts(self, i: int) -> dict[str, float]:
        parts = {"text": self.text[i], "vector": self.vector[i], "overlap": self.overlap[i], "fused": self.fused[i]}
        if self.sentence is not None:
            parts["sentence"] = self.sentence[i]
        return parts

    def scored_row(self, i: int) -> ScoredPassageRow:
        length = self.terms_length[i]
        return ScoredPassageRow(
            row=self.row(i),
            score=self.score[i],
            score_parts=self.score_parts(i),
            term_counts=self.term_counts[i] if length is not None else None,
            terms_length=length,
        )

    @classmethod
    def of_rows(cls, rows: Sequence[ScoredPassageRow]) -> PassageColumns:
        """The columns of rows made otherwise (tests, a pool read row by row)."""
        return cls(
            episode_id=[h.row.id for h in rows],
            session=[h.row.session for h in rows],
            kind=[h.row.kind for h in rows],
            role=[h.row.role for h in rows],
            content=[h.row.content for h in rows],
            occurred_us=[(h.row.occurred_at - EPOCH) // _MICROSECOND for h in rows],
            occurred_at=[h.row.occurred_at for h in rows],
            external_id=[h.row.external_id for h in rows],
            content_hash=[h.row.content_hash for h in rows],
            token_count=[h.row.token_count for h in rows],
            passage_id=[h.row.passage_id for h in rows],
            position=[h.row.position for h in rows],
            char_start=[h.row.char_start for h in rows],
            char_end=[h.row.char_end for h in rows],
            last=[h.row.last for h in rows],
            line=[h.row.line for h in rows],
            line_tokens=[h.row.line_tokens for h in rows],
            score=[h.score for h in rows],
            text=[h.score_parts.get("text", 0.0) for h in rows],
            vector=[h.score_parts.get("vector", 0.0) for h in rows],
            overlap=[h.score_parts.get("overlap", 0.0) for h in rows],
            fused=[h.score_parts.get("fused", 0.0) for h in rows],
            term_counts=[h.term_counts for h in rows],
            terms_length=[h.terms_length if h.term_counts is not None else None for h in rows],
            summaries={},
        )


_MICROSECOND = timedelta(microseconds=1)


def passage_search_rows(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    until: datetime | None = None,
    limit: int = 20,
    query_embedding: list[float] | Future[list[float]] | None = None,
    exclude_episode_ids: Iterable[int] | None = None,
    summaries: bool = True,
    extracted: tuple[Sequence[str], Sequence[str]] | None = None,
    count_terms: Sequence[str] = (),
) -> list[ScoredPassageRow]:
    """The hybrid ranking of episode_search over passages (the same three channels and fusion), as
    typed rows with their episode's columns: a long episode is found by the part that matches, and
    the part is what gets served. Without `summaries`, the parts of sessions' summary episodes are
    not ranked (they take no place of the `limit`). `extracted`: the query's entities and topics
    (episodic.extraction), when the caller has extracted them already. `count_terms`: index terms
    (core.terms) whose counts in each passage's stored index terms come back with it, with their number,
    counted by the database from what was stored when the passage was written."""
    return passage_pool(
        tenant=tenant,
        query=query,
        subject=subject,
        until=until,
        limit=limit,
        query_embedding=query_embedding,
        exclude_episode_ids=exclude_episode_ids,
        summaries=summaries,
        extracted=extracted,
        count_terms=count_terms,
    ).rows


def passage_pool(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    until: datetime | None = None,
    limit: int = 20,
    query_embedding: list[float] | Future[list[float]] | None = None,
    exclude_episode_ids: Iterable[int] | None = None,
    summaries: bool = True,
    extracted: tuple[Sequence[str], Sequence[str]] | None = None,
    count_terms: Sequence[str] = (),
    aliases: Aliases | None = None,
) -> PassagePool:
    """passage_pool_columns as rows."""
    columns = passage_pool_columns(
        tenant=tenant,
        query=query,
        subject=subject,
        until=until,
        limit=limit,
        query_embedding=query_embedding,
        exclude_episode_ids=exclude_episode_ids,
        summaries=summaries,
        extracted=extracted,
        count_terms=count_terms,
        aliases=aliases,
    )
    return PassagePool(rows=[columns.scored_row(i) for i in range(len(columns))], summaries=columns.summaries)


def passage_pool_columns(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    until: datetime | None = None,
    limit: int = 20,
    query_embedding: list[float] | Future[list[float]] | None = None,
    exclude_episode_ids: Iterable[int] | None = None,
    summaries: bool = True,
    extracted: tuple[Sequence[str], Sequence[str]] | None = None,
    count_terms: Sequence[str] = (),
    aliases: Aliases | None = None,
    stored_lines: bool = False,
    sentences: bool = False,
) -> PassageColumns:
    """passage_search_rows with the summaries of the pool's sessions, in one statement: the three
    channels, their fusion by reciprocal rank, the scored rows of the top `limit` and their sessions'
    summaries are computed by the database and come back in one round trip, with the vector scan's
    settings sent before it. The fusion adds the channels' terms in the order episode_search adds
    them (text, overlap, vector), so that its sums, and the order of ties, are the same to the bit.
    `aliases`: the aliases of the query's entities for `subject`, when the caller has looked them up.
    `stored_lines`: the caller reads a passage's stored line and its term counts (`count_terms`)
    rather than its content, so a passage's content comes back only where either is not stored ("",
    the empty string, elsewhere): the router's pool is 250 rows at 1,000 tokens, and their content
    would be read from the database and decoded for nothing. `sentences`: each row's best sentence
    cosine to the query (PassageSentence, read by key in the same scan), the passage's own where it has
    one sentence; None without."""
    if limit < 1:
        raise ValidationProblem.at("/limit", "Must be at least 1.")
    if isinstance(query_embedding, list):
        _check_dimension(query_embedding)
    scope = _PassageScope(
        tenant=tenant,
        subject=subject,
        until=until,
        excluded_episodes=tuple(exclude_episode_ids or ()),
        skip_summaries=not summaries,
    )
    pool = max(limit, CANDIDATES_PER_CHANNEL)
    tsquery = _or_tsquery(query)
    overlap = _query_overlap(
        tenant=tenant, query=query, subject=subject, entities=None, topics=None, extracted=extracted, aliases=aliases
    )
    vector = _query_vector(query, query_embedding)
    prefilter = vector_prefilter_candidates(pool) if vector is not None else 0
    params = scope.params(
        tsquery=tsquery,
        cap=TEXT_MATCH_CAP,
        pool=pool,
        limit=limit,
        prefilter=prefilter,
        vector=VectorField().get_prep_value(vector) if vector is not None else None,
        rrf_k=RRF_K,
        **{f"weight_{name}": weight for name, weight in CHANNEL_WEIGHTS.items()},
        **{f"term{i}": term for i, term in enumerate(count_terms)},
    )
    ctes: list[str] = []
    channels: list[str] = []
    if vector is not None:
        q, nearest = _passage_vector_channel(scope, prefilter)
        ctes.append(q)
    if tsquery:
        ctes.append(f"text AS ({_passage_text_channel(scope)})")
        channels.append("text")
    overlap_channel = _passage_overlap_channel(scope, overlap, params) if overlap is not None else None
    if overlap_channel is not None:
        ctes.append(f"overlap AS ({overlap_channel})")
        channels.append("overlap")
    if vector is not None:
        ctes.append(f"vector AS ({nearest})")
        channels.append("vector")
    if not channels:
        return _pool_columns([], sentences=sentences)
    # Each channel's term weight / (RRF_K + rank), added left to right from 0 as _rrf adds them; one
    # aggregate over the channels' rows, each id at most once per channel.
    terms = [f"max(c.{name})" for name in channels]
    fused = "0::float8" + "".join(f" + coalesce({term}, 0)" for term in terms)
    rows_ = " UNION ALL ".join(
        "SELECT id, "  # noqa: S608
        + ", ".join(
            f"%(weight_{name})s::float8 / (%(rrf_k)s + n)" if name == channel else "NULL::float8" for name in channels
        )
        + (", distance" if channel == "vector" else ", NULL::float8")
        + f" FROM {channel}"
        for channel in channels
    )
    ctes.append(
        f"fused AS (SELECT c.id, {fused} AS fused, max(c.distance) AS distance"  # noqa: S608
        f" FROM ({rows_}) c({', '.join(['id', *channels, 'distance'])}) GROUP BY c.id ORDER BY 2 DESC, 1 DESC LIMIT %(limit)s)"
    )
    text_rank = (
        "ts_rank(p.search_vector, to_tsquery('english'::regconfig, %(tsquery)s), 32)" if tsquery else "0::float8"
    )
    # Reading a vector back costs more than the rest of the row: the channel's distance where it has one.
    similarity = (
        "CASE WHEN p.id = ANY(ARRAY(SELECT id FROM fused WHERE distance IS NULL))"
        " THEN COALESCE(1 - (p.embedding <=> (SELECT v FROM q)), 0) END"
        if vector is not None
        else "NULL::float8"
    )
    overlap_value = "0::float8"
    if overlap is not None and (scored := _overlap_sql(*overlap, table="p")) is not None:
        overlap_value, overlap_params = _named(*scored, prefix="value_")
        params.update(overlap_params)
    term_counts = (
        "ARRAY["
        + ", ".join(f"cardinality(array_positions(p.index_terms, %(term{i})s::text))" for i in range(len(count_terms)))
        + "]::int[]"
        if count_terms
        else "'{}'::int[]"
    )
    top_columns = _TOP_COLUMNS.format(content=_CONTENT_WHERE_UNSTORED if stored_lines else "p.content")
    # Read by the unique key's index where the row is scored, as its similarity is: no round trip more.
    sentence = (
        "(SELECT max(1 - (t.embedding <=> (SELECT v FROM q))) FROM episodic_passagesentence t"
        " WHERE t.tenant_id = p.tenant_id AND t.passage_id = p.id)"
        if sentences and vector is not None
        else "NULL::float8"
    )
    # The top's rows are read by key and scored where they are read: only the scores and the columns of
    # a line go up to the joins (a passage's vector, text search vector and index terms, carried through
    # them, cost the database more than the rest of the statement; `OFFSET 0` keeps the scores in the
    # scan). Then each row's episode by its key: joined above the top as a set read by key, the planner
    # (which expects a handful of rows from `= ANY(ARRAY(...))`) looped over one set for each row of
    # the other.
    ctes.append(
        f"top AS (SELECT p.*, {_TOP_EPISODE_COLUMNS} FROM (SELECT {text_rank} AS text_rank,"  # noqa: S608
        f" {similarity} AS similarity, {sentence} AS sentence, {overlap_value} AS overlap, {term_counts} AS term_counts,"
        f" cardinality(p.index_terms) AS terms_length, {top_columns} FROM episodic_passage p"
        " WHERE p.tenant_id = %(tenant)s AND p.id = ANY(ARRAY(SELECT id FROM fused)) OFFSET 0) p"
        " JOIN episodic_episode e ON e.tenant_id = p.tenant_id AND e.id = p.episode_id)"
    )
    # A session's summary once, on its first row of the top.
    summary = (
        "CASE WHEN s.summary <> '' AND p.id = ANY(ARRAY(SELECT min(id) FROM top GROUP BY session_id))"  # noqa: S608
        f" THEN s.summary END, {epoch_us_sql('s.started_at')}"
    )
    sql = (
        f"WITH {', '.join(ctes)} SELECT f.fused, f.distance, p.text_rank, p.similarity, p.overlap,"  # noqa: S608
        f" p.term_counts, p.terms_length, {summary}, {_TOP_PASSAGE_COLUMNS}, p.sentence"
        " FROM fused f JOIN top p ON p.id = f.id"
        " JOIN episodic_session s ON s.tenant_id = p.tenant_id AND s.id = p.session_id"
        " ORDER BY f.fused DESC, f.id DESC"
    )
    settings_ = vector_scan_settings(ef_search=pool, floor=HNSW_EF_SEARCH) if vector is not None else {}
    # The scan settings are transaction-local: open a transaction only when the caller has none.
    with contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic():
        found = fetch_after_set_locals(settings_, sql, params)
    return _pool_columns(found, sentences=sentences)


def _pool_columns(found: Sequence[Sequence[Any]], *, sentences: bool = False) -> PassageColumns:
    """The pool statement's rows (passage_pool_columns) as columns: transposed at once, the score parts
    rounded a column at a time (core.rounding: as round() rounds each)."""
    best = sum(CHANNEL_WEIGHTS.values()) / (RRF_K + 1)
    width = 9 + 16 + 1
    columns: list[Sequence[Any]] = list(zip(*found, strict=True)) if found else [()] * width
    fused_column = [float(v) for v in columns[0]]
    position, last = list(columns[19]), list(columns[22])
    occurred_us = list(columns[14])
    session = [v or "" for v in columns[10]]
    session_summaries: dict[str, tuple[str, datetime]] = {}
    for i in [i for i, v in enumerate(columns[7]) if v is not None]:
        session_summaries[session[i]] = (columns[7][i], from_epoch_us(columns[8][i]))
    lengths = list(columns[6])
    vector = rounded(
        [
            _finite(1 - distance if distance is not None else (similarity or 0.0))
            for distance, similarity in zip(columns[1], columns[3], strict=True)
        ],
        6,
    )
    return PassageColumns(
        episode_id=list(columns[9]),
        session=session,
        kind=list(columns[11]),
        role=list(columns[12]),
        content=list(columns[13]),
        occurred_us=occurred_us,
        # from_epoch_us, without its call and keywords (hundreds a request).
        occurred_at=[EPOCH + timedelta(0, 0, us) for us in occurred_us],
        external_id=list(columns[15]),
        content_hash=[h if p == 0 and t else f"{h}:{p}" for h, p, t in zip(columns[16], position, last, strict=True)],
        token_count=list(columns[17]),
        passage_id=list(columns[18]),
        position=position,
        char_start=list(columns[20]),
        char_end=list(columns[21]),
        last=last,
        line=list(columns[23]),
        line_tokens=list(columns[24]),
        score=rounded([fused / best for fused in fused_column], 6),
        text=rounded([float(v or 0.0) for v in columns[2]], 6),
        vector=vector,
        sentence=rounded([_finite(v) if v is not None else w for v, w in zip(columns[25], vector, strict=True)], 6)
        if sentences
        else None,
        overlap=rounded([float(v or 0.0) for v in columns[4]], 6),
        fused=rounded(fused_column, 6),
        term_counts=[c if n is not None else None for c, n in zip(columns[5], lengths, strict=True)],
        terms_length=lengths,
        summaries=session_summaries,
    )


def passage_first_mention(*, tenant: Tenant, subject: str, word: str, until: datetime) -> datetime | None:
    """When the subject's history first mentions `word`, before `until`: the earliest passage whose
    full-text vector matches it under the English stemmer ("move" finds "moved" and "moving"); None
    when none does or the word is a stop word."""
    return Passage.objects.filter(
        subject=subject,
        occurred_at__lt=until,
        search_vector=SearchQuery(word, config="english", search_type="plain"),
    ).aggregate(first=Min("occurred_at"))["first"]


_PASSAGE_NEIGHBOURS_SQL = f"""
SELECT h.anchor, {PASSAGE_COLUMNS}
FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS h(anchor, pos)
JOIN episodic_passage a ON a.id = h.anchor AND a.tenant_id = %(tenant)s
CROSS JOIN LATERAL (
    (SELECT x.* FROM episodic_passage x
     WHERE x.tenant_id = %(tenant)s AND x.session_id = a.session_id
       AND (x.occurred_at, x.episode_id, x.position) < (a.occurred_at, a.episode_id, a.position)
     ORDER BY x.occurred_at DESC, x.episode_id DESC, x.position DESC LIMIT 1)
    UNION ALL
    (SELECT x.* FROM episodic_passage x
     WHERE x.tenant_id = %(tenant)s AND x.session_id = a.session_id
       AND (x.occurred_at, x.episode_id, x.position) > (a.occurred_at, a.episode_id, a.position)
       AND x.occurred_at < %(until)s
     ORDER BY x.occurred_at, x.episode_id, x.position LIMIT 1)
) p
{PASSAGE_JOINS}
WHERE NOT (p.id = ANY(%(known)s::bigint[]))
ORDER BY h.pos, p.occurred_at, p.episode_id, p.position
"""  # noqa: S608


def passage_rows_neighbours(
    *, tenant: Tenant, passage_ids: Sequence[int], until: datetime | None = None, known: Sequence[int] = ()
) -> list[tuple[int, PassageRow]]:
    """The passage before and the passage after each anchor in its session (within a long episode,
    its neighbouring parts; at an episode's edge, the turn before or after), as (anchor passage id,
    row), in the anchors' order. A neighbour among `known` (passages the caller holds already: the
    router's pool) is left out, not replaced by the next one: most neighbours of the best hits are in
    the pool (on LoCoMo 56 of 77 at 1,000 tokens), and their episodes, sessions and columns were read
    for nothing.

    Anchors and neighbours are filtered by tenant (one shard on Citus); a neighbour is one step in
    the index passage_tenant_session_seq, led by (tenant_id, session_id), each. With the session alone first
    in the index, a tenant condition had let the planner AND two indexes and read the whole tenant
    (seconds on a tenant of 1,000,000 episodes, measured on episodes)."""
    if not passage_ids:
        return []
    rows = fetch_prepared(
        _PASSAGE_NEIGHBOURS_SQL,
        {
            "ids": array_literal(passage_ids),
            "tenant": tenant.id,
            "until": until or _FAR_FUTURE,
            "known": array_literal(known),
        },
    )
    return [(anchor, _passage_row(values)) for anchor, *values in rows]


def passage_similarities(*, tenant: Tenant, passage_ids: Sequence[int]) -> dict[tuple[int, int], float]:
    """Cosine similarity of each pair (a, b), a < b, of these passages that both have an embedding; the
    vectors stay in the database (one query over at most a few dozen ids)."""
    ids = sorted(set(passage_ids))
    if len(ids) < 2:
        return {}
    rows = fetch_prepared(
        "SELECT a.id, b.id, 1 - (a.embedding <=> b.embedding) FROM episodic_passage a"
        " JOIN episodic_passage b ON b.tenant_id = a.tenant_id AND b.id = ANY(%(ids)s::bigint[]) AND b.id > a.id"
        " WHERE a.tenant_id = %(tenant)s AND a.id = ANY(%(ids)s::bigint[])"
        " AND a.embedding IS NOT NULL AND b.embedding IS NOT NULL",
        {"ids": array_literal(ids), "tenant": tenant.id},
    )
    return {(a, b): float(sim) for a, b, sim in rows}


# How many distinct names of the row's array are among the asked ones, as an INTERSECT of the two would
# count them, but without a set operation per row (an INTERSECT builds and drops a hash table for each).
# How many of the query's names (distinct) the row's array carries: the query's few names looked up in
# the row's array, not the row's names sorted to count the distinct ones the query has (the same count).
_INTERSECTION = "(SELECT count(*) FROM unnest(%s::varchar[]) AS asked(name) WHERE asked.name = ANY({table}.{column}))"


def _overlap_sql(entities: list[list[str]], topics: list[str], *, table: str) -> tuple[str, list[Any]] | None:
    """The share of the query's entities and topics that an episode of `table` carries (0 to 1), in SQL.
    An entity is carried under any of its names (`entities`: each entity's names)."""
    total = len(entities) + len(topics)
    if total == 0:
        return None
    parts = []
    params: list[Any] = []
    if entities and all(len(names) == 1 for names in entities):
        parts.append(_INTERSECTION.format(table=table, column="entities"))
        params.append(list(dict.fromkeys(names[0] for names in entities)))
    elif entities:
        parts += [f"({table}.entities && %s::varchar[])::int" for _ in entities]
        params += entities
    if topics:
        parts.append(_INTERSECTION.format(table=table, column="topics"))
        params.append(list(dict.fromkeys(topics)))
    return f"(({' + '.join(parts)})::float / {total})", params


def _overlap_expression(entities: list[list[str]], topics: list[str], *, table: str) -> Any:
    overlap = _overlap_sql(entities, topics, table=table)
    if overlap is None:
        return None
    sql, params = overlap
    return ExpressionWrapper(RawSQL(sql, params), output_field=FloatField())  # noqa: S611
