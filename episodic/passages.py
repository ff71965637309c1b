"""Passages: the parts of an episode's content that retrieval ranks.

An episode stays the unit of provenance; a passage is a sentence-aware slice of its content of about
MIN_TOKENS to MAX_TOKENS tokens, with its own embedding, full-text vector and token count, stored when
the episode is written. A short episode is one passage spanning all of it. Splitting is deterministic:
the same content always gives the same spans, so passages can be rebuilt from episodes at any time
(import, archive restore, the backfill command).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from django.db import connection, transaction
from django.db.models import Q, QuerySet

from core.embedding import get_embedder
from core.lines import line_tokens_of, said_line
from core.terms import terms
from core.tokens import count_tokens, encoding
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Episode, Passage
from tenants.models import Tenant
from tenants.scope import for_each_batch, tenant_scope

logger = logging.getLogger(__name__)

MIN_TOKENS = 40
MAX_TOKENS = 120

# A sentence ends at terminal punctuation (with any closing quotes or brackets) followed by space, at a
# line break, or after CJK terminal punctuation, which takes no space.
_BREAK = re.compile(r"[.!?…]+[\"'’”)\]]*\s+|\n\s*|[。！？]+[」』”)]*\s*")


@dataclass(frozen=True)
class PassageSpan:
    """Characters [start, end) of the episode's content, and the tokens of that text."""

    start: int
    end: int
    tokens: int


def _sentences(content: str) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    at = 0
    for match in _BREAK.finditer(content):
        if match.end() > at:
            out.append((at, match.end()))
            at = match.end()
    if at < len(content):
        out.append((at, len(content)))
    return out


def _trimmed(content: str, start: int, end: int) -> tuple[int, int]:
    while start < end and content[start].isspace():
        start += 1
    while end > start and content[end - 1].isspace():
        end -= 1
    return start, end


def _token_starts(content: str) -> list[int]:
    """The character offset where each cl100k token of `content` starts."""
    tokens = encoding().encode(content, disallowed_special=())
    _, offsets = encoding().decode_with_offsets(tokens)
    return list(offsets)


def _pieces(content: str) -> list[tuple[int, int, int]]:
    """Sentences as (start, end, tokens), a sentence longer than MAX_TOKENS cut at word boundaries
    (or anywhere, in a script without spaces) into pieces of at most MAX_TOKENS."""
    starts = _token_starts(content)
    out: list[tuple[int, int, int]] = []
    index = 0
    for s, e in _sentences(content):
        first = index
        while index < len(starts) and starts[index] < e:
            index += 1
        n = index - first
        if n <= MAX_TOKENS:
            out.append((s, e, n))
            continue
        piece_start, t = s, first
        while t < index:
            cut_token = min(t + MAX_TOKENS, index)
            cut = e if cut_token >= index else starts[cut_token]
            if cut < e:
                space = content.rfind(" ", piece_start + 1, cut + 1)
                if space > piece_start:
                    cut = space
                    while cut_token > t + 1 and starts[cut_token - 1] >= cut:
                        cut_token -= 1
            if cut <= piece_start:
                cut = starts[cut_token] if cut_token < index else e
            out.append((piece_start, cut, cut_token - t))
            piece_start, t = cut, cut_token
    return out


def split_passages(content: str) -> list[PassageSpan]:
    """The passages of an episode's content, in order. Sentences are gathered while a passage stays
    within MAX_TOKENS; a passage shorter than MIN_TOKENS takes the next sentence even past that (up
    to MAX_TOKENS + MIN_TOKENS), and a short tail joins the passage before it."""
    tokens = count_tokens(content)
    if tokens <= MAX_TOKENS:
        return [PassageSpan(0, len(content), tokens)]
    groups: list[list[tuple[int, int, int]]] = []
    size = 0
    for piece in _pieces(content):
        n = piece[2]
        if groups and (size + n <= MAX_TOKENS or (size < MIN_TOKENS and size + n <= MAX_TOKENS + MIN_TOKENS)):
            groups[-1].append(piece)
            size += n
        else:
            groups.append([piece])
            size = n
    if len(groups) > 1 and sum(p[2] for p in groups[-1]) < MIN_TOKENS:
        tail = groups.pop()
        groups[-1].extend(tail)
    out: list[PassageSpan] = []
    for group in groups:
        start, end = _trimmed(content, group[0][0], group[-1][1])
        if end > start:
            out.append(PassageSpan(start, end, count_tokens(content[start:end])))
    return out or [PassageSpan(0, len(content), tokens)]


_INSERT_SQL = """
INSERT INTO episodic_passage (tenant_id, episode_id, session_id, subject, occurred_at, position, char_start,
    char_end, last, content, token_count, summary, entities, topics, embedding, line, line_tokens, index_terms)
SELECT %s::uuid, v.episode_id, v.session_id, v.subject, v.occurred_at, v.position, v.char_start, v.char_end, v.last,
    v.content, v.token_count, e.external_id IS NOT DISTINCT FROM %s, e.entities, e.topics, v.embedding::vector,
    v.line, v.line_tokens, string_to_array(v.index_terms, ' ')
FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::timestamptz[], %s::integer[], %s::integer[],
    %s::integer[], %s::boolean[], %s::text[], %s::integer[], %s::text[], %s::text[], %s::integer[], %s::text[])
    WITH ORDINALITY
    AS v(episode_id, session_id, subject, occurred_at, position, char_start, char_end, last, content, token_count,
        embedding, line, line_tokens, index_terms, n)
JOIN episodic_episode e ON e.tenant_id = %s::uuid AND e.id = v.episode_id
ORDER BY v.n
ON CONFLICT (tenant_id, episode_id, position) DO NOTHING
"""


def _vector_literal(vector: Any) -> str | None:
    if vector is None:
        return None
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


@dataclass(frozen=True)
class PassageLine:
    """What a context reads of a passage that does not depend on the query (Passage.line, line_tokens,
    index_terms)."""

    line: str
    line_tokens: int
    index_terms: list[str]


def passage_line(*, role: str, kind: str, content: str, char_start: int, position: int, last: bool) -> PassageLine:
    """A passage's line as a context renders it (core.lines: its episode's speaker, "…" where the
    episode goes on), the tokens of that line, and the index terms of its speaker and text (core.terms)."""
    whole = position == 0 and last
    line = said_line(role or kind, content, opens=whole or char_start == 0, closes=last)
    return PassageLine(line=line, line_tokens=line_tokens_of(line), index_terms=terms(f"{role} {content}"))


def passage_rows(episodes: Iterable[Episode]) -> Iterator[tuple[Any, ...]]:
    """The passage rows of these stored episodes. A single-passage episode that already has an
    embedding (sent by the client, or computed before passages existed) passes it on."""
    for e in episodes:
        spans = split_passages(e.content)
        whole = len(spans) == 1
        for position, span in enumerate(spans):
            content = e.content[span.start : span.end]
            stored = passage_line(
                role=e.role,
                kind=e.kind,
                content=content,
                char_start=span.start,
                position=position,
                last=position == len(spans) - 1,
            )
            yield (
                e.pk,
                e.session_id,
                e.subject,
                e.occurred_at,
                position,
                span.start,
                span.end,
                position == len(spans) - 1,
                content,
                span.tokens if not whole else (e.token_count or span.tokens),
                _vector_literal(e.embedding) if whole else None,
                stored.line,
                stored.line_tokens,
                " ".join(stored.index_terms),
            )


def passages_create(*, tenant: Tenant, episodes: Sequence[Episode]) -> int:
    """Store the passages of stored episodes (one INSERT for the batch; a passage already there is
    left as it is, so that this is safe to repeat). Ids are given in the order of `episodes` and their
    positions, whichever join the planner picks (a hash join reads the episodes in heap order): the
    search breaks ties between equal scores by id, as it does for episodes. Returns how many rows the
    batch had."""
    columns: list[list[Any]] = [[] for _ in range(14)]
    for row in passage_rows(episodes):
        for column, value in zip(columns, row, strict=True):
            column.append(value)
    if not columns[0]:
        return 0
    connection.ensure_connection()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(_INSERT_SQL, [tenant.id, SESSION_SUMMARY_EXTERNAL_ID, *columns, tenant.id])
    return len(columns[0])


_MISSING_SQL = """
SELECT e.id FROM episodic_episode e
WHERE e.tenant_id = %s AND e.id > %s
  AND NOT EXISTS (SELECT 1 FROM episodic_passage p WHERE p.tenant_id = e.tenant_id AND p.episode_id = e.id)
ORDER BY e.id LIMIT %s
"""


def passages_missing(*, tenant: Tenant) -> int:
    """How many of the tenant's episodes have no passages yet. Call inside the tenant's scope."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM episodic_episode e WHERE e.tenant_id = %s AND NOT EXISTS"
            " (SELECT 1 FROM episodic_passage p WHERE p.tenant_id = e.tenant_id AND p.episode_id = e.id)",
            [tenant.id],
        )
        return int(cursor.fetchone()[0])


def passages_backfill(*, tenant: Tenant, batch_size: int = 500, progress: Callable[[int], None] | None = None) -> int:
    """Give every episode of the tenant that has none its passages, batch by batch in id order, each
    batch its own transaction (safe to stop and run again). Passages of a one-passage episode take the
    episode's embedding; the others join the embedding backlog that the worker drains. Returns how many
    episodes were done."""
    done = 0
    after = 0
    while True:
        with tenant_scope(tenant):
            with connection.cursor() as cursor:
                cursor.execute(_MISSING_SQL, [tenant.id, after, batch_size])
                ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                return done
            passages_create(tenant=tenant, episodes=list(Episode.objects.filter(id__in=ids)))
        after = ids[-1]
        done += len(ids)
        if progress is not None:
            progress(len(ids))


_LINES_MISSING_SQL = """
SELECT p.id, e.role, e.kind, p.content, p.char_start, p.position, p.last
FROM episodic_passage p JOIN episodic_episode e ON e.tenant_id = p.tenant_id AND e.id = p.episode_id
WHERE p.tenant_id = %s AND p.id > %s AND p.index_terms IS NULL
ORDER BY p.id LIMIT %s
"""

_LINES_UPDATE_SQL = """
UPDATE episodic_passage p SET line = v.line, line_tokens = v.line_tokens,
    index_terms = string_to_array(v.index_terms, ' ')
FROM unnest(%s::bigint[], %s::text[], %s::integer[], %s::text[]) AS v(id, line, line_tokens, index_terms)
WHERE p.tenant_id = %s AND p.id = v.id
"""


def passage_lines_missing(*, tenant: Tenant) -> int:
    """How many of the tenant's passages have no stored line yet. Call inside the tenant's scope."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM episodic_passage WHERE tenant_id = %s AND index_terms IS NULL", [tenant.id]
        )
        return int(cursor.fetchone()[0])


def passage_lines_backfill(
    *, tenant: Tenant, batch_size: int = 1000, progress: Callable[[int], None] | None = None
) -> int:
    """Give every passage of the tenant that has none its line, line tokens and index terms
    (passage_line), batch by batch in id order, each batch its own transaction (safe to stop and run
    again). Returns how many passages were done."""
    done = 0
    after = 0
    while True:
        with tenant_scope(tenant), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(_LINES_MISSING_SQL, [tenant.id, after, batch_size])
                rows = cursor.fetchall()
                if not rows:
                    return done
                columns: list[list[Any]] = [[], [], [], []]
                for passage_id, role, kind, content, char_start, position, last in rows:
                    stored = passage_line(
                        role=role, kind=kind, content=content, char_start=char_start, position=position, last=last
                    )
                    for column, value in zip(
                        columns,
                        (passage_id, stored.line, stored.line_tokens, " ".join(stored.index_terms)),
                        strict=True,
                    ):
                        column.append(value)
                cursor.execute(_LINES_UPDATE_SQL, [*columns, tenant.id])
        after = rows[-1][0]
        done += len(rows)
        if progress is not None:
            progress(len(rows))


# --- embedding ------------------------------------------------------------------------------------
EMBED_TEXT_CHARS = 2000


def embedding_text(episode: Episode) -> str:
    """What an episode's vector stands for when its content is empty: a bare tool event's payload."""
    if episode.content.strip():
        return episode.content[:EMBED_TEXT_CHARS]
    return f"{episode.kind} {json.dumps(episode.payload, sort_keys=True, default=str)}"[:EMBED_TEXT_CHARS]


def _passage_texts(tenant: Tenant, batch: Sequence[Passage]) -> list[str]:
    bare = [p.episode_id for p in batch if not p.content.strip()]
    payloads = {}
    if bare:
        events = Episode.objects.filter(id__in=bare).only("id", "kind", "payload", "content")
        payloads = {e.id: embedding_text(e) for e in events}
    return [p.content if p.content.strip() else payloads.get(p.episode_id, "") for p in batch]


# An episode's vector is the mean of its passages' (the passage's own for a one-passage episode), once
# every passage has one; cosine search does not need it normalised.
_MEAN_SQL = """
UPDATE episodic_episode e SET embedding = p.v
FROM (
    SELECT episode_id, avg(embedding) AS v FROM episodic_passage
    WHERE tenant_id = %(tenant)s AND episode_id = ANY(%(ids)s::bigint[])
    GROUP BY episode_id HAVING count(*) = count(embedding)
) p
WHERE e.tenant_id = %(tenant)s AND e.id = p.episode_id"""
_FINISH_SQL = _MEAN_SQL + " AND e.embedding IS NULL"


def episodes_finish_embedding(*, tenant: Tenant, episode_ids: Sequence[int]) -> int:
    """Give each of these episodes whose passages all have a vector, and which has none yet, the mean
    of theirs. Returns how many episodes got one."""
    if not episode_ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(_FINISH_SQL, {"tenant": tenant.id, "ids": list(episode_ids)})
        return int(cursor.rowcount)


_STORE_SQL = """
UPDATE episodic_passage p SET embedding = v.embedding::vector, sentence_count = v.sentences
FROM unnest(%s::bigint[], %s::text[], %s::integer[]) AS v(id, embedding, sentences)
WHERE p.tenant_id = %s AND p.id = v.id
"""

# A sentence's vector again after a change of embedder (passages_reembed): the row is updated.
_SENTENCES_SQL = """
INSERT INTO episodic_passagesentence (tenant_id, passage_id, episode_id, subject, position, embedding)
SELECT p.tenant_id, p.id, p.episode_id, p.subject, v.position, v.embedding::vector
FROM unnest(%s::bigint[], %s::integer[], %s::text[]) WITH ORDINALITY AS v(passage_id, position, embedding, n)
JOIN episodic_passage p ON p.tenant_id = %s AND p.id = v.passage_id
ORDER BY v.n
ON CONFLICT (tenant_id, passage_id, position) DO UPDATE SET embedding = EXCLUDED.embedding
"""


def sentence_texts(content: str) -> list[str]:
    """A passage's sentences (_sentences, as split_passages cuts them), trimmed, the empty ones left out."""
    return [text for start, end in _sentences(content) if (text := content[start:end].strip())]


@dataclass(frozen=True)
class EmbeddedPassages:
    """The vectors of a batch of passages, and of the sentences of those of 2 or more (`sentences`:
    passage id, position, vector), from one call of the embedder."""

    vectors: list[str | None]
    sentence_counts: list[int | None]
    sentences: list[tuple[int, int, str | None]]


def _embedded(
    tenant: Tenant, passages: Sequence[Passage], *, own: bool = True, sentences: bool | None = None
) -> EmbeddedPassages:
    """One call of the embedder for the passages (unless not `own`: their sentences only) and the
    sentences of those of 2 or more, where the tenant keeps them (`sentences`, by default
    `Tenant.keeps_sentence_vectors`); where it does not, their count stays null: not looked at."""
    if sentences is None:
        sentences = tenant.keeps_sentence_vectors
    texts = _passage_texts(tenant, passages) if own else []
    n = len(texts)
    counts: list[int | None] = []
    owners: list[tuple[int, int]] = []
    for passage in passages:
        if not sentences:
            counts.append(None)
            continue
        said = sentence_texts(passage.content)
        counts.append(len(said))
        if len(said) > 1:
            texts.extend(said)
            owners.extend((passage.pk, position) for position in range(len(said)))
    literals = [_vector_literal(vector) for vector in get_embedder().embed(texts)] if texts else []
    return EmbeddedPassages(
        vectors=literals[:n],
        sentence_counts=counts,
        sentences=[(pid, position, v) for (pid, position), v in zip(owners, literals[n:], strict=True)],
    )


def _store_embedded(*, tenant: Tenant, passages: Sequence[Passage], embedded: EmbeddedPassages) -> None:
    # One statement each, pinned to the tenant (on Citus, to its shard).
    with connection.cursor() as cursor:
        cursor.execute(_STORE_SQL, [[p.pk for p in passages], embedded.vectors, embedded.sentence_counts, tenant.id])
        if embedded.sentences:
            cursor.execute(_SENTENCES_SQL, [*map(list, zip(*embedded.sentences, strict=True)), tenant.id])


def _store_vectors(*, tenant: Tenant, passages: Sequence[Passage], embedded: EmbeddedPassages) -> None:
    _store_embedded(tenant=tenant, passages=passages, embedded=embedded)
    episodes_finish_embedding(tenant=tenant, episode_ids=sorted({p.episode_id for p in passages}))


def passages_embed(*, tenant: Tenant, passages: Sequence[Passage]) -> None:
    """Embed these passages (rows loaded with id, episode_id and content) and the sentences of those of
    2 or more, store their vectors, then the vectors of the episodes they complete."""
    if passages:
        _store_vectors(tenant=tenant, passages=passages, embedded=_embedded(tenant, passages))


# After a change of embedding file: every episode of the batch takes the mean of its passages' vectors
# again, whether it had one or not (once its last passage is done, the mean is of new vectors only).
_REFRESH_SQL = _MEAN_SQL


def passages_reembed(*, tenant: Tenant, batch_size: int = 256, progress: Callable[[int], None] | None = None) -> int:
    """Embed again, with today's embedder, every passage of the tenant that has a vector (and its
    sentences), batch by batch in id order, each batch its own transaction (safe to stop and run again),
    and refresh the vectors of their episodes. Vectors of two embedding files do not compare: a
    deployment that changes file (ENGRAM_EMBEDDING_INT8) runs this once. Passages without a vector are
    the backlog's. Returns how many passages were embedded."""

    def store(batch: list[Passage]) -> None:
        # A passage that has sentence vectors keeps them current, whether or not the tenant still adds them.
        looked = [p for p in batch if p.sentence_count is not None]
        for passages, sentences in ((looked, True), ([p for p in batch if p.sentence_count is None], None)):
            if passages:
                embedded = _embedded(tenant, passages, sentences=sentences)
                _store_embedded(tenant=tenant, passages=passages, embedded=embedded)
        with connection.cursor() as cursor:
            cursor.execute(_REFRESH_SQL, {"tenant": tenant.id, "ids": sorted({p.episode_id for p in batch})})

    return for_each_batch(
        tenant=tenant,
        rows=lambda: Passage.objects.filter(embedding__isnull=False).only(
            "id", "episode_id", "content", "sentence_count"
        ),
        each=store,
        batch_size=batch_size,
        progress=progress,
    )


@dataclass
class SentenceBackfill:
    passages: int = 0
    several: int = 0
    vectors: int = 0


def passage_sentences_missing(*, tenant: Tenant) -> int:
    """How many of the tenant's embedded passages were not looked at for sentences yet. Call inside the
    tenant's scope."""
    return passages_without_sentences().count()


def passages_sentences_embed(*, tenant: Tenant, passages: Sequence[Passage]) -> tuple[int, int]:
    """Give these embedded passages (rows loaded with id, episode_id and content) their sentence count and
    the vectors of their sentences where they have 2 or more; their own vectors are left as they are.
    Returns (passages of several sentences, sentence vectors stored)."""
    embedded = _embedded(tenant, passages, own=False, sentences=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE episodic_passage p SET sentence_count = v.n FROM unnest(%s::bigint[], %s::integer[])"
            " AS v(id, n) WHERE p.tenant_id = %s AND p.id = v.id",
            [[p.pk for p in passages], embedded.sentence_counts, tenant.id],
        )
        if embedded.sentences:
            cursor.execute(_SENTENCES_SQL, [*map(list, zip(*embedded.sentences, strict=True)), tenant.id])
    return sum(1 for n in embedded.sentence_counts if n is not None and n > 1), len(embedded.sentences)


# Embedded, sentences not looked at (the partial index passage_sentence_backlog answers it).
WITHOUT_SENTENCES = Q(embedding__isnull=False, sentence_count__isnull=True)


def passages_without_sentences() -> QuerySet[Passage]:
    """The embedded passages not looked at for sentences yet (of the tenant in scope)."""
    return Passage.objects.filter(WITHOUT_SENTENCES)


def passage_sentences_backfill(
    *, tenant: Tenant, batch_size: int = 256, progress: Callable[[int], None] | None = None
) -> SentenceBackfill:
    """Give every embedded passage of the tenant that was not looked at its sentence count, and the
    vectors of its sentences where it has 2 or more (its own vector is left as it is), batch by batch in
    id order, each batch its own transaction (safe to stop and run again)."""
    report = SentenceBackfill()

    def store(batch: list[Passage]) -> None:
        several, vectors = passages_sentences_embed(tenant=tenant, passages=batch)
        report.passages += len(batch)
        report.several += several
        report.vectors += vectors

    for_each_batch(
        tenant=tenant,
        rows=lambda: passages_without_sentences().only("id", "episode_id", "content"),
        each=store,
        batch_size=batch_size,
        progress=progress,
    )
    return report


def passages_embed_inline(*, tenant: Tenant, episode_ids: Sequence[int], max_passages: int) -> int:
    """Read-your-writes: embed the passages of a small write in the request that stores it, so that it
    is found by meaning as soon as it is committed. A write of more than `max_passages` passages (an
    import) is left to the backlog, as is a write whose embedding fails: the worker embeds it later.
    Returns how many passages were embedded."""
    if max_passages <= 0 or not episode_ids:
        return 0
    pending = list(
        Passage.objects.filter(episode_id__in=list(episode_ids), embedding__isnull=True)
        .order_by("id")
        .only("id", "episode_id", "content")[: max_passages + 1]
    )
    if not pending or len(pending) > max_passages:
        return 0
    try:
        embedded = _embedded(tenant, pending)
    except Exception:  # the write stands; the backlog drain embeds it
        logger.warning("inline embedding failed; %s passages left to the backlog", len(pending), exc_info=True)
        return 0
    _store_vectors(tenant=tenant, passages=pending, embedded=embedded)
    return len(pending)
