"""Reads of semantic memory: lists, history, the entity graph and hybrid fact search.

"Believed at `as_of`" means valid time: a fact counts when `valid_from <= as_of < valid_to` and it was
not retracted or left pending. At the present (`as_of` None) that is exactly the active facts; in the
past it includes values that have since been superseded or have expired.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import uuid
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from core.db import array_literal, fetch_after_set_locals, fetch_prepared
from core.embedding import configure_vector_scan as configure_embedding_scan
from core.embedding import embed_one, vector_scan_settings
from core.errors import NotFound, ValidationProblem
from core.timestamps import epoch_us_sql, from_epoch_us
from episodic.aliases import NO_ALIASES, Aliases, aliases_for, has_aliases
from episodic.extraction import extract_entities_topics
from semantic.models import Fact, FactChange, FactChangeKind, FactStatus
from semantic.normalise import normalise_attribute, normalise_entity
from tenants.models import Tenant

HISTORICAL = (FactStatus.ACTIVE, FactStatus.SUPERSEDED, FactStatus.EXPIRED)

# Fusion weights of fact_search; the parts are each in [0, 1], so the score is too.
WEIGHTS = {"vector": 0.55, "text": 0.20, "confidence": 0.15, "recency": 0.10}
SCORE_PARTS = ("vector", "text", "confidence", "recency")
DEFAULT_HALF_LIFE_DAYS = 90.0
MAX_K = 100
# The HNSW candidate list: the first batch of an iterative scan. Below ~100, recall on 384-dimensional
# embeddings drops quickly (docs/benchmarks/semantic.md).
HNSW_EF_SEARCH = 100
TEXT_MATCH_CAP = 500
GRAPH_MAX_DEPTH = 3
GRAPH_MAX_NODES = 50
GRAPH_MAX_FACTS = 200


@dataclasses.dataclass
class ScoredFact:
    fact: Fact
    score: float
    score_parts: dict[str, float]


def _parse_id(fact_id: uuid.UUID | str) -> uuid.UUID:
    try:
        return fact_id if isinstance(fact_id, uuid.UUID) else uuid.UUID(str(fact_id))
    except ValueError:
        raise NotFound(f"Fact {fact_id} does not exist.") from None


def believed_at(as_of: datetime | None) -> Q:
    """The Q of facts believed at `as_of` (now when None)."""
    if as_of is None:
        return Q(status=FactStatus.ACTIVE, valid_from__lte=timezone.now())
    return Q(status__in=HISTORICAL, valid_from__lte=as_of) & (Q(valid_to__isnull=True) | Q(valid_to__gt=as_of))


def fact_get(*, tenant: Tenant, fact_id: uuid.UUID | str) -> Fact:
    fact = Fact.objects.filter(id=_parse_id(fact_id)).first()
    if fact is None:
        raise NotFound(f"Fact {fact_id} does not exist.")
    return fact


def needs_confirmation_q(*, horizons: dict[str, float], now: datetime) -> Q:
    """Active facts not confirmed within their category's horizon (days), or pending review."""
    default = horizons.get("other", 90.0)
    stale = Q()
    for category, days in horizons.items():
        stale |= Q(category=category, last_confirmed_at__lt=now - timedelta(days=days))
    stale |= ~Q(category__in=list(horizons)) & Q(last_confirmed_at__lt=now - timedelta(days=default))
    return (Q(status=FactStatus.ACTIVE) & stale) | Q(status=FactStatus.PENDING_REVIEW)


def entity_names(*, tenant: Tenant, entity: str, subject: str | None = None) -> list[str]:
    """Every name the entity is filed under: its canonical name first, then its aliases (for the
    subject: an operator's aliases and the subject's learned ones; episodic.aliases)."""
    if not has_aliases(tenant):
        return [normalise_entity(entity)]
    return aliases_for(tenant=tenant, names=[entity], subject=subject, groups=True).group(normalise_entity(entity))


def fact_list(
    *,
    tenant: Tenant,
    entity: str | None = None,
    attribute: str | None = None,
    category: str | None = None,
    status: str | None = None,
    subject: str | None = None,
    as_of: datetime | None = None,
    needs_confirmation: bool = False,
    now: datetime | None = None,
) -> QuerySet[Fact]:
    """Facts by filter. Without `status` or `as_of`, the facts held now (active); `status="any"` lists
    every status; `as_of` restricts to what was believed then. `needs_confirmation` keeps the facts
    to put to the subject again: active ones not confirmed within their category's horizon (its
    decay half-life in the tenant's settings) and, unless a status is given, those waiting in
    pending_review because the evidence conflicted."""
    qs = Fact.objects.all()
    if needs_confirmation:
        qs = qs.filter(needs_confirmation_q(horizons=tenant.config.decay_half_life_days, now=now or timezone.now()))
        if status is None and as_of is None:
            status = "any"
    if status is not None and status != "any" and status not in FactStatus.values:
        raise ValidationProblem.at("/status", f"status must be one of {[*FactStatus.values, 'any']}.")
    if as_of is not None:
        qs = qs.filter(believed_at(as_of))
    if status is None and as_of is None:
        qs = qs.filter(status=FactStatus.ACTIVE)
    elif status is not None and status != "any":
        qs = qs.filter(status=status)
    if entity:
        qs = qs.filter(entity__in=entity_names(tenant=tenant, entity=entity, subject=subject))
    if attribute:
        qs = qs.filter(attribute=normalise_attribute(attribute))
    if category:
        qs = qs.filter(category=category)
    if subject:
        qs = qs.filter(subject=subject)
    return qs


def fact_history(*, tenant: Tenant, fact_id: uuid.UUID | str) -> list[FactChange]:
    """The fact's changes, oldest first (404 for a missing or another tenant's fact)."""
    fact = fact_get(tenant=tenant, fact_id=fact_id)
    return list(
        FactChange.objects.all()
        # A revert is logged once, on the fact it reinstated; the fact it displaced shows it too.
        .filter(Q(fact=fact) | Q(related_fact=fact, kind=FactChangeKind.REVERTED))
        # Fetched by a second statement that names the tenant, not joined on the fact id alone.
        .prefetch_related(Prefetch("related_fact", queryset=Fact.objects.all()))
        .order_by("created_at", "id")
    )


@dataclasses.dataclass(frozen=True)
class FactSourceRef:
    """One episode a fact came from, as the router and the API show it."""

    episode_id: int
    external_id: str | None
    occurred_at: datetime
    session: str


# Plain SQL with the ids as one array: the router asks for the sources of 50 facts on every context
# request, and building this join through the ORM cost more than running it.
_SOURCES_SQL = f"""
SELECT fs.fact_id, fs.episode_id, e.external_id, {epoch_us_sql("e.occurred_at")}, s.external_id
FROM semantic_factsource fs
JOIN episodic_episode e ON e.id = fs.episode_id AND e.tenant_id = fs.tenant_id
JOIN episodic_session s ON s.id = e.session_id AND s.tenant_id = e.tenant_id
WHERE fs.tenant_id = %s AND fs.fact_id = ANY(%s::uuid[])
ORDER BY e.occurred_at, fs.episode_id
"""  # noqa: S608


def fact_sources(*, tenant: Tenant, fact_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[FactSourceRef]]:
    """The provenance of many facts in one query, each fact's episodes in time order."""
    out: dict[uuid.UUID, list[FactSourceRef]] = {fact_id: [] for fact_id in fact_ids}
    if not fact_ids:
        return out
    rows = fetch_prepared(_SOURCES_SQL, [tenant.id, array_literal(fact_ids)])
    for fact_id, episode_id, external_id, occurred_us, session in rows:
        occurred_at = from_epoch_us(occurred_us)
        out[fact_id].append(FactSourceRef(episode_id, external_id, occurred_at, session))
    return out


def subject_facts_q(subject: str) -> Q:
    """The facts that are a subject's: those of its memory (`subject`, the exact string), and the
    tenant's own (subject-less) facts whose entity is exactly the subject id. Never another subject's
    memory, and never by folding the id: "DANAx" is not "danax" (DESIGN.md invariant 12)."""
    return Q(subject=subject) | Q(subject="", entity=subject)


def facts_for_subject(*, tenant: Tenant, subject: str, as_of: datetime | None = None) -> list[Fact]:
    """What is believed about a subject (subject_facts_q), most confident first."""
    return list(
        Fact.objects.filter(subject_facts_q(subject))
        .filter(believed_at(as_of))
        .defer("embedding", "search_vector")
        .order_by("-confidence", "-last_confirmed_at", "id")
    )


# --- the entity graph --------------------------------------------------------------------------------


@dataclasses.dataclass
class GraphNode:
    entity: str
    depth: int


@dataclasses.dataclass
class GraphEdge:
    source: str
    attribute: str
    target: str
    fact_id: uuid.UUID


@dataclasses.dataclass
class EntityGraph:
    entity: str
    depth: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    facts: list[Fact]
    truncated: bool


def entity_graph(
    *,
    tenant: Tenant,
    entity: str,
    depth: int = 2,
    max_nodes: int = GRAPH_MAX_NODES,
    max_facts: int = GRAPH_MAX_FACTS,
) -> EntityGraph:
    """The entity's active facts and the entities related to it within `depth` hops (edges are
    followed both ways: "acme uses postgres" relates postgres to acme too). Breadth-first, one query
    per level, capped at `max_nodes` entities and `max_facts` facts (then `truncated` is true)."""
    names = entity_names(tenant=tenant, entity=entity)
    root = names[0]
    depth = max(1, min(int(depth), GRAPH_MAX_DEPTH))
    seen: dict[str, int] = {name: 0 for name in names}
    facts: dict[uuid.UUID, Fact] = {}
    edges: list[GraphEdge] = []
    truncated = False
    frontier = names
    for level in range(depth):
        if not frontier:
            break
        rows = list(
            Fact.objects.filter(status=FactStatus.ACTIVE)
            .filter(Q(entity__in=frontier) | Q(object_entity__in=frontier))
            .exclude(id__in=list(facts))
            .defer("embedding", "search_vector")
            .order_by("-confidence", "entity", "attribute", "id")[: max_facts - len(facts) + 1]
        )
        if len(facts) + len(rows) > max_facts:
            rows = rows[: max_facts - len(facts)]
            truncated = True
        nxt: list[str] = []
        for fact in rows:
            facts[fact.id] = fact
            if fact.object_entity:
                edges.append(GraphEdge(fact.entity, fact.attribute, fact.object_entity, fact.id))
                for neighbour in (fact.entity, fact.object_entity):
                    if neighbour in seen:
                        continue
                    if len(seen) >= max_nodes:
                        truncated = True
                        continue
                    seen[neighbour] = level + 1
                    nxt.append(neighbour)
        frontier = nxt
    return EntityGraph(
        entity=root,
        depth=depth,
        # The entity's other names are searched, not shown as entities of their own.
        nodes=[
            GraphNode(e, d) for e, d in sorted(seen.items(), key=lambda item: (item[1], item[0])) if e not in names[1:]
        ],
        edges=edges,
        facts=list(facts.values()),
        truncated=truncated,
    )


# --- hybrid search -----------------------------------------------------------------------------------

# plainto_tsquery ANDs the words; OR them so that a fact matching some words still ranks.
_TSQUERY = "replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery"


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


# Columns search_sql can return beside the ranking's: what the context router shows of a fact (times as
# core.timestamps microseconds: the statement returns hundreds of candidates for the k kept).
CARRIED_COLUMNS = {
    "statement": "f.statement",
    "confidence": "f.confidence",
    "valid_from_us": epoch_us_sql("f.valid_from"),
    "value": "f.value",
    "origin": "f.origin",
    "attribute": "f.attribute",
    # The fact replaced an earlier value of its attribute (an update): the context serves it first.
    "updates": (
        f"EXISTS (SELECT 1 FROM {Fact._meta.db_table} o WHERE o.tenant_id = f.tenant_id AND o.superseded_by_id = f.id)"  # noqa: S608 - a model's table name
    ),
}


@dataclasses.dataclass
class _SearchSQL:
    sql: str
    params: list[Any]


@dataclasses.dataclass(frozen=True)
class NamedEntities:
    """The entities a query names, for fact search: `names`, every name they are filed under (canonical
    names and aliases, episodic.aliases); `expansions`, the canonical names of the aliases the query
    wrote, which the text part also looks for ("Mel" finds statements about Melanie)."""

    names: tuple[str, ...] = ()
    expansions: tuple[str, ...] = ()


def _entity_names(entity: str | Sequence[str] | None) -> list[str]:
    if entity is None:
        return []
    return [normalise_entity(entity)] if isinstance(entity, str) else list(entity)


def _search_filters(
    *,
    tenant: Tenant,
    at: datetime,
    subject: str | None,
    entity: str | Sequence[str] | None,
    category: str | None,
    as_of: datetime | None,
    named: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    where = ["tenant_id = %s", "valid_from <= %s"]
    params: list[Any] = [tenant.id, at]
    if as_of is None:
        where.append("status = 'active'")
    else:
        where.append("status IN ('active', 'superseded', 'expired') AND (valid_to IS NULL OR valid_to > %s)")
        params.append(as_of)
    if subject and named:
        # The subject's facts (subject_facts_q), and the tenant's own facts (no subject's) about an
        # entity the query names. Another subject's memory stays closed: its "John" need not be this
        # subject's, and "DANAx" is not "danax".
        where.append("(subject = %s OR (subject = '' AND (entity = %s OR entity = ANY(%s))))")
        params += [subject, subject, list(named)]
    elif subject:
        where.append("(subject = %s OR (subject = '' AND entity = %s))")
        params += [subject, subject]
    names = _entity_names(entity)
    if len(names) == 1:
        where.append("entity = %s")
        params.append(names[0])
    elif names:
        where.append("entity = ANY(%s)")
        params.append(names)
    if category:
        where.append("category = %s")
        params.append(category)
    return " AND ".join(where), params


def _text_part(filters: str, params: list[Any], query: str, pool: int) -> tuple[str, list[Any]]:
    # Ranking reads every match from the heap; a query of common words can match a large share of a
    # big tenant, so at most TEXT_MATCH_CAP matches are ranked (the vector part still sees all).
    sql = (
        f"SELECT id, NULL::float8 AS d, ts_rank(search_vector, {_TSQUERY}) AS r FROM ("  # noqa: S608
        f"SELECT id, search_vector FROM semantic_fact WHERE {filters} AND search_vector @@ {_TSQUERY} LIMIT %s"
        ") m ORDER BY 3 DESC LIMIT %s"
    )
    return sql, [query, *params, query, TEXT_MATCH_CAP, pool]


def search_sql(
    *,
    tenant: Tenant,
    query: str,
    vector: Sequence[float] | None,
    pool: int,
    subject: str | None,
    entity: str | Sequence[str] | None,
    category: str | None,
    as_of: datetime | None,
    carry: Sequence[str] = (),
    at: datetime | None = None,
    named: Sequence[str] = (),
) -> _SearchSQL:
    """The one statement of fact_search: the top `pool` by cosine distance (HNSW) and the top `pool`
    by full-text rank (GIN), united, with both measures computed for every candidate. Values are
    bound client-side (Django's default), so PostgreSQL plans with the real vector and filters:
    a custom plan, never a generic one that would lose the HNSW index. `carry`: columns of
    CARRIED_COLUMNS returned after the ranking's six, for a reader that needs no model instances.
    `entity`: one name, or every name of the entity. `named`: the names of the entities the query names
    (NamedEntities.names): their facts are candidates too, the most confident first."""
    at = at or as_of or timezone.now()
    filters, params = _search_filters(
        tenant=tenant, at=at, subject=subject, entity=entity, category=category, as_of=as_of, named=named
    )

    # Each part's measure is computed where the part ranks by it and carried out with the id; the
    # outer select computes only the measures a candidate lacks (the text rank of one found by vector
    # alone, and the other way round), and returns what the ranking needs: fact_search then loads only
    # the k facts it keeps, as model instances. The candidates' rows are read by key (`= ANY(ARRAY(...))`):
    # joined to the tenant's facts, a few dozen candidates made the planner scan every fact of the
    # tenant, and every fact again for `updates` (on LoCoMo a third of the statement's backend CPU).
    ctes: list[str] = []
    cte_params: list[Any] = []
    literal = _vector_literal(vector) if vector is not None else None
    if literal is not None:
        ctes.append(
            f"v AS (SELECT id, embedding <=> %s::vector AS d, NULL::float4 AS r FROM semantic_fact "  # noqa: S608
            f"WHERE {filters} AND embedding IS NOT NULL ORDER BY 2 LIMIT %s)"
        )
        cte_params += [literal, *params, pool]
    if query.strip():
        text_sql, text_params = _text_part(filters, params, query, pool)
        ctes.append(f"t AS ({text_sql})")
        cte_params += text_params
    if named:
        ctes.append(
            f"n AS (SELECT id, NULL::float8 AS d, NULL::float4 AS r FROM semantic_fact WHERE {filters} "  # noqa: S608
            "AND entity = ANY(%s) ORDER BY confidence DESC, last_confirmed_at DESC LIMIT %s)"
        )
        cte_params += [*params, list(named), pool]
    if not ctes:
        # No query at all: the most confident facts that match the filters.
        ctes.append(
            f"b AS (SELECT id, NULL::float8 AS d, NULL::float4 AS r FROM semantic_fact WHERE {filters} "  # noqa: S608
            "ORDER BY confidence DESC, last_confirmed_at DESC LIMIT %s)"
        )
        cte_params += [*params, pool]
    names = [cte.split(" ", 1)[0] for cte in ctes]
    union = " UNION ALL ".join(f"SELECT id, d, r FROM {n}" for n in names)  # noqa: S608
    distance = "coalesce(c.d, f.embedding <=> %s::vector)" if literal is not None else "NULL::float8"
    rank = f"coalesce(c.r, ts_rank(f.search_vector, {_TSQUERY}))" if query.strip() else "0::float4"
    select_params: list[Any] = [at] + ([literal] if literal is not None else []) + ([query] if query.strip() else [])
    unknown = sorted(set(carry) - CARRIED_COLUMNS.keys())
    if unknown:
        raise ValueError(f"not a carried column: {unknown}")
    carried = "".join(f", {CARRIED_COLUMNS[name]}" for name in carry)
    sql = (
        f"WITH {', '.join(ctes)}, c AS (SELECT id, min(d) AS d, max(r) AS r FROM ({union}) u GROUP BY id) "  # noqa: S608
        f"SELECT f.id, f.category, f.confidence, extract(epoch FROM %s - f.last_confirmed_at)::float8 AS age, "
        f"{distance} AS search_distance, {rank} AS search_rank{carried} "
        "FROM semantic_fact f JOIN c ON c.id = f.id WHERE f.tenant_id = %s AND f.id = ANY(ARRAY(SELECT id FROM c))"
    )
    return _SearchSQL(sql=sql, params=[*cte_params, *select_params, tenant.id])


def configure_vector_scan(*, ef_search: int) -> None:
    """core.embedding.configure_vector_scan with the fact search's floor of ef_search."""
    configure_embedding_scan(ef_search=ef_search, floor=HNSW_EF_SEARCH)


def _names_of(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None,
    entity: str | None,
    entities: Sequence[str] | None,
    aliases: Aliases | None = None,
) -> tuple[NamedEntities, list[str] | None]:
    """The entities the query names (the extractor's, episodic.extraction) and every name of the
    `entity` filter, through the aliases that hold for the subject: one query, none when the query
    names nothing and no entity is asked for, or when the tenant has never had an alias."""
    found = list(entities) if entities is not None else []
    if entities is None and query.strip():
        found = extract_entities_topics(tenant=tenant, text=query)[0]
    if not found and not entity:
        return NamedEntities(), None
    if aliases is None:
        aliases = (
            aliases_for(tenant=tenant, names=[*found, *([entity] if entity else [])], subject=subject, groups=True)
            if has_aliases(tenant)
            else NO_ALIASES
        )
    written = query.casefold()
    names: dict[str, None] = {}
    expansions: dict[str, None] = {}
    for term in found:
        group = aliases.group(term)
        names.update(dict.fromkeys(group))
        if group[0] != normalise_entity(term) and group[0] not in written:
            expansions[group[0]] = None
    return (
        NamedEntities(names=tuple(names), expansions=tuple(expansions)),
        aliases.group(entity) if entity else None,
    )


def _ranked_search(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None,
    entity: str | None,
    category: str | None,
    k: int,
    min_score: float,
    as_of: datetime | None,
    query_embedding: list[float] | Future[list[float]] | None,
    carry: Sequence[str] = (),
    entities: Sequence[str] | None = None,
    aliases: Aliases | None = None,
) -> list[tuple[float, uuid.UUID, dict[str, float], tuple[Any, ...]]]:
    """The top k of the search statement, ranked: (score, fact id, score parts, carried values). One
    round trip: the statement ranks by vector and by text together, and the vector scan's settings go
    in front of it. `entities`: the query's entities when the caller has extracted them already."""
    k = max(1, min(int(k), MAX_K))
    pool = max(4 * k, 40)
    query = query or ""
    at = as_of or timezone.now()
    # The scan settings are transaction-local: open a transaction only when the caller has none.
    with contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic():
        named, entity_group = _names_of(
            tenant=tenant, query=query, subject=subject, entity=entity, entities=entities, aliases=aliases
        )
        # The query as the text part reads it: with the canonical names of the aliases it wrote.
        words = " ".join([query, *named.expansions]) if query.strip() else query
        vector: Sequence[float] | None
        if isinstance(query_embedding, Future):
            vector = query_embedding.result()
        else:
            vector = query_embedding
        if vector is None and query.strip():
            vector = embed_one(query)
        statement = search_sql(
            tenant=tenant,
            query=words,
            vector=vector,
            pool=pool,
            carry=carry,
            at=at,
            subject=subject,
            entity=entity_group,
            category=category,
            as_of=as_of,
            named=named.names,
        )
        scan = vector_scan_settings(ef_search=pool, floor=HNSW_EF_SEARCH) if vector is not None else {}
        rows = fetch_after_set_locals(scan, statement.sql, statement.params)
    if not rows:
        return []

    half_lives = tenant.config.decay_half_life_days
    best_rank = max(float(row[5] or 0.0) for row in rows)
    w_vector, w_text, w_confidence, w_recency = (WEIGHTS[name] for name in SCORE_PARTS)
    ranked: list[tuple[float, str, uuid.UUID, tuple[float, ...], tuple[Any, ...]]] = []
    # Hundreds of candidates for the k kept: each part is rounded for those k only.
    for fact_id, category_, confidence, age_seconds, distance, rank, *carried in rows:
        age_days = max(0.0, age_seconds / 86400.0)
        half_life = float(half_lives.get(category_, DEFAULT_HALF_LIFE_DAYS)) or DEFAULT_HALF_LIFE_DAYS
        parts = (
            max(0.0, 1.0 - float(distance)) if distance is not None and math.isfinite(distance) else 0.0,
            float(rank or 0.0) / best_rank if best_rank > 0 else 0.0,
            float(confidence),
            0.5 ** (age_days / half_life),
        )
        score = w_vector * parts[0] + w_text * parts[1] + w_confidence * parts[2] + w_recency * parts[3]
        if score >= min_score:
            ranked.append((round(score, 6), str(fact_id), fact_id, parts, tuple(carried)))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    return [
        (score, fact_id, {n: round(v, 6) for n, v in zip(SCORE_PARTS, parts, strict=True)}, carried)
        for score, _, fact_id, parts, carried in ranked[:k]
    ]


def fact_search(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    entity: str | None = None,
    category: str | None = None,
    k: int = 10,
    min_score: float = 0.0,
    as_of: datetime | None = None,
    query_embedding: list[float] | None = None,
) -> list[ScoredFact]:
    """Facts believed at `as_of` ranked by a fusion of vector similarity, full-text rank, confidence
    and recency (WEIGHTS). Each part is in [0, 1] and returned in `score_parts`; the text part is the
    rank relative to the best text match among the candidates."""
    top = _ranked_search(
        tenant=tenant,
        query=query,
        subject=subject,
        entity=entity,
        category=category,
        k=k,
        min_score=min_score,
        as_of=as_of,
        query_embedding=query_embedding,
    )
    facts = Fact.objects.defer("embedding", "search_vector").in_bulk([r[1] for r in top])
    return [
        ScoredFact(fact=facts[fact_id], score=score, score_parts=parts)
        for score, fact_id, parts, _ in top
        if fact_id in facts
    ]


@dataclasses.dataclass(frozen=True)
class ScoredFactRow:
    """A fact_search result as the few columns a context line needs, read with the ranking."""

    id: uuid.UUID
    statement: str
    valid_from: datetime
    confidence: float
    score: float
    score_parts: dict[str, float]
    value: str
    origin: str
    attribute: str = ""
    updates: bool = False


def fact_search_rows(
    *,
    tenant: Tenant,
    query: str,
    subject: str | None = None,
    k: int = 10,
    as_of: datetime | None = None,
    query_embedding: list[float] | Future[list[float]] | None = None,
    entities: Sequence[str] | None = None,
    aliases: Aliases | None = None,
) -> list[ScoredFactRow]:
    """fact_search for the context router: the same ranking, with the statement and valid_from read by
    the search statement itself instead of loading model instances in a second query. `entities`: the
    query's entities, when the caller has extracted them (episodic.extraction) already; `aliases`: their
    aliases for `subject` (episodic.aliases.aliases_for with groups), when the caller has looked them up."""
    top = _ranked_search(
        tenant=tenant,
        query=query,
        subject=subject,
        entity=None,
        category=None,
        k=k,
        min_score=0.0,
        as_of=as_of,
        query_embedding=query_embedding,
        carry=("statement", "valid_from_us", "confidence", "value", "origin", "attribute", "updates"),
        entities=entities,
        aliases=aliases,
    )
    return [
        ScoredFactRow(
            id=fact_id,
            statement=statement,
            valid_from=from_epoch_us(valid_from_us),
            confidence=confidence,
            score=score,
            score_parts=parts,
            value=value,
            origin=origin,
            attribute=attribute,
            updates=bool(updates),
        )
        for score, fact_id, parts, (statement, valid_from_us, confidence, value, origin, attribute, updates) in top
    ]
