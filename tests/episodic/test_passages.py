"""Passages: how an episode's content is split, and that every writer, the drain, the backfill and
erasure keep them with their episodes."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tokens import count_tokens
from episodic.models import Episode, Passage, PassageSentence, allow_episode_deletion
from episodic.passages import MAX_TOKENS, MIN_TOKENS, passages_create, split_passages
from episodic.tasks import embed_pending
from privacy import erasure
from privacy.services import erasure_request_create
from tenants.scope import tenant_scope
from tests.episodic.conftest import item
from tests.owner import as_owner

SENTENCES = [
    "We moved the billing service to a new cluster last spring.",
    "The migration took three weekends because the old database had no primary keys on two tables.",
    "Marta wrote the runbook and Joao reviewed every step of it twice.",
    "After the move, invoices were generated forty percent faster.",
    "The spare key to the boathouse is hidden under the blue flowerpot by the gate.",
    "Customers in Brazil asked for receipts in Portuguese, which we added in June.",
    "Our on-call rotation changed from weekly to fortnightly shifts.",
    "Nobody liked the new dashboard colours, so we switched back to the old palette.",
]


def long_text(repeat: int = 6) -> str:
    """About 100 sentences: several passages."""
    return " ".join(f"{s[:-1]} (note {i}.{j})." for i in range(repeat) for j, s in enumerate(SENTENCES))


def check_spans(content: str) -> None:
    spans = split_passages(content)
    assert spans
    previous_end = 0
    for span in spans:
        assert previous_end <= span.start <= span.end <= len(content)
        # Nothing but whitespace is left out between passages.
        assert content[previous_end : span.start].strip() == ""
        assert span.tokens == count_tokens(content[span.start : span.end])
        previous_end = span.end
    assert content[previous_end:].strip() == ""
    if len(spans) > 1:
        assert all(s.tokens <= MAX_TOKENS + 2 * MIN_TOKENS for s in spans)
        assert all(s.tokens >= MIN_TOKENS for s in spans[:-1])
    assert split_passages(content) == spans


def test_a_short_episode_is_one_passage_spanning_all_of_it() -> None:
    text = "  I prefer answers in Portuguese.  "
    assert [(s.start, s.end) for s in split_passages(text)] == [(0, len(text))]
    assert [(s.start, s.end) for s in split_passages("")] == [(0, 0)]


def test_a_long_episode_is_split_at_sentence_ends_into_passages_of_about_40_to_120_tokens() -> None:
    text = long_text()
    spans = split_passages(text)
    assert len(spans) >= count_tokens(text) // MAX_TOKENS
    for span in spans:
        passage = text[span.start : span.end]
        assert passage.endswith(")."), passage[-20:]
        assert MIN_TOKENS <= span.tokens <= MAX_TOKENS + MIN_TOKENS
    check_spans(text)


@pytest.mark.parametrize(
    "text",
    [
        "word " * 2000,
        "x" * 5000,
        "数据库迁移用了三个周末。" * 200,
        "Línea uno.\n\nLínea dos sin punto\n" * 150,
        'Why?! Because... it\'s "done." ' * 300,
    ],
    ids=["no-sentences", "one-long-run", "cjk", "newlines", "punctuation"],
)
def test_texts_without_sentences_or_spaces_are_still_cut_within_bounds(text: str) -> None:
    check_spans(text)


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=3000))
def test_any_text_is_covered_in_order_by_its_passages(text: str) -> None:
    check_spans(text)


@pytest.mark.django_db
def test_appending_writes_passages_and_the_drain_embeds_them_then_the_episode(append, tenant_a) -> None:
    content = long_text()
    short, long = append(tenant_a, [item("I prefer answers in Portuguese."), item(content)])
    with tenant_scope(tenant_a):
        passages = list(Passage.objects.for_tenant(tenant_a).filter(episode=long).order_by("position"))
        assert len(passages) > 3
        assert [p.content for p in passages] == [content[p.char_start : p.char_end] for p in passages]
        assert [p.last for p in passages] == [False] * (len(passages) - 1) + [True]
        assert all(p.embedding is None for p in passages)
        one = Passage.objects.for_tenant(tenant_a).get(episode=short)
        assert (one.char_start, one.char_end, one.token_count) == (0, len(short.content), short.token_count)
    report = embed_pending(tenant=tenant_a)
    assert report.embedded == len(passages) + 1
    with tenant_scope(tenant_a):
        assert not Passage.objects.for_tenant(tenant_a).filter(embedding__isnull=True).exists()
        assert not Episode.objects.for_tenant(tenant_a).filter(embedding__isnull=True).exists()
        one = Passage.objects.for_tenant(tenant_a).get(episode=short)
        stored = Episode.objects.for_tenant(tenant_a).get(pk=short.pk)
        assert list(stored.embedding) == pytest.approx(list(one.embedding))


@pytest.mark.django_db
def test_backfill_gives_old_episodes_passages_reusing_their_vector(append, tenant_a, capsys) -> None:
    first, second = append(tenant_a, [item("We deploy on AWS eu-west-1."), item(long_text(2))])
    embed_pending(tenant=tenant_a)
    with tenant_scope(tenant_a):
        # As stored before passages existed.
        with allow_episode_deletion():
            PassageSentence.objects.for_tenant(tenant_a).filter(episode_id__in=[first.pk, second.pk]).delete()
            Passage.objects.for_tenant(tenant_a).filter(episode_id__in=[first.pk, second.pk]).delete()
        vector = list(Episode.objects.for_tenant(tenant_a).get(pk=first.pk).embedding)
    out = StringIO()
    call_command("backfill_passages", tenant=tenant_a.slug, batch=1, stdout=out)
    assert "2 episodes split into passages" in out.getvalue()
    assert "2/2" in capsys.readouterr().err  # the progress bar
    with tenant_scope(tenant_a):
        one = Passage.objects.for_tenant(tenant_a).get(episode_id=first.pk)
        assert list(one.embedding) == pytest.approx(vector)
        assert Passage.objects.for_tenant(tenant_a).filter(episode_id=second.pk, embedding__isnull=True).count() > 1
    # The rest waits in the backlog that the worker drains; a second run has nothing to do.
    assert embed_pending(tenant=tenant_a).embedded > 1
    out = StringIO()
    call_command("backfill_passages", tenant=tenant_a.slug, stdout=out)
    assert "every episode has its passages" in out.getvalue()


@pytest.mark.django_db
def test_passages_of_another_tenant_are_invisible_and_erasure_leaves_none(append, tenant_a, tenant_b) -> None:
    append(tenant_a, [item(long_text(2), subject="yan")])
    append(tenant_b, [item(long_text(2), subject="yan")])
    with tenant_scope(tenant_a):
        assert Passage.objects.filter(tenant_id=tenant_b.id).count() == 0
        mine = Passage.objects.for_tenant(tenant_a).count()
    assert erasure.locate(tenant=tenant_a, subject="yan")["passages"] == mine > 1
    request = erasure_request_create(tenant=tenant_a, subject="yan")
    done = erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk))
    assert done is not None and done.counts["passages"] == mine
    assert erasure.locate(tenant=tenant_a, subject="yan")["passages"] == 0
    with tenant_scope(tenant_b):
        assert Passage.objects.for_tenant(tenant_b).count() == mine


PLANS = {
    "as planned": [],
    # The join that reads the episodes in heap order, as the planner chooses once the statistics say
    # the table is large: an updated row has moved behind the rows stored after it.
    "hash join over a scan": ["enable_nestloop", "enable_mergejoin", "enable_indexscan", "enable_bitmapscan"],
}


@pytest.mark.django_db
@pytest.mark.parametrize("plan", PLANS)
def test_passage_ids_follow_their_episodes_whatever_the_plan(append, tenant_a, plan) -> None:
    """Passage ids break ties between equal scores in the search, as episode ids do: stored in another
    order, the passage search ranked "printer" above "release" where the episode search did not (CI,
    2 December)."""
    stored = append(tenant_a, [item(s) for s in SENTENCES[:5]])
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        with allow_episode_deletion():
            Passage.objects.for_tenant(tenant_a).delete()
        for episode in (stored[0], stored[2]):
            cursor.execute("UPDATE episodic_episode SET embedding = embedding WHERE id = %s", [episode.pk])
        for knob in PLANS[plan]:
            cursor.execute(f"SET LOCAL {knob} = off")
        passages_create(tenant=tenant_a, episodes=list(Episode.objects.for_tenant(tenant_a).order_by("id")))
        for knob in PLANS[plan]:
            cursor.execute(f"RESET {knob}")
        by_id = list(Passage.objects.for_tenant(tenant_a).order_by("id").values_list("episode_id", flat=True))
    assert by_id == [e.pk for e in stored]


@pytest.mark.django_db(transaction=True)
def test_the_migration_marks_the_summary_passages_stored_before_it(append, tenant_a, tenant_b) -> None:
    """The migration's statement, run as the owner (as migrations run) over passages stored unmarked:
    the parts of summary episodes are marked in every tenant, and nothing else."""
    import importlib

    mark = importlib.import_module("episodic.migrations.0012_passage_summary").MARK
    stored = {}
    for tenant in (tenant_a, tenant_b):
        stored[tenant.id] = append(
            tenant,
            [
                item("We hiked the ridge at dawn.", session="s-1", external_id="t1"),
                item("user: We hiked the ridge at dawn.", session="s-1", kind="summary", external_id="engram:summary"),
            ],
        )
    # As they were before the column: nothing marked.
    as_owner("UPDATE episodic_passage SET summary = false", mark, why="the application role may not update passages")
    for tenant in (tenant_a, tenant_b):
        turn, summary = stored[tenant.id]
        with tenant_scope(tenant):
            marked = dict(Passage.objects.for_tenant(tenant).values_list("episode_id", "summary"))
        assert marked == {turn.id: False, summary.id: True}


@pytest.mark.django_db
def test_a_passage_stores_its_rendered_line_its_tokens_and_index_terms_and_the_backfill_restores_them(
    append, tenant_a, capsys
) -> None:
    from core.terms import terms
    from episodic.passages import passage_line

    short, long = append(
        tenant_a, [item("We  deploy on\nAWS eu-west-1.", role="assistant"), item(long_text(2), role="Marta")]
    )
    with tenant_scope(tenant_a):
        passages = list(Passage.objects.for_tenant(tenant_a).order_by("episode_id", "position"))
    assert len(passages) > 2
    first, *middle, last = [p for p in passages if p.episode_id == long.pk]
    assert passages[0].line == "assistant: We deploy on AWS eu-west-1."
    assert first.line.startswith("Marta: ") and first.line.endswith(" …") and "… " not in first.line
    assert last.line.startswith("Marta: … ") and not last.line.endswith(" …")
    stored = [(p.line, p.line_tokens, p.index_terms) for p in passages]
    for p in passages:
        assert p.line_tokens == count_tokens(f"- {p.line}")
        assert p.index_terms == terms(f"{'assistant' if p.episode_id == short.pk else 'Marta'} {p.content}")
    # As stored before the columns existed.
    with tenant_scope(tenant_a):
        Passage.objects.for_tenant(tenant_a).update(line="", line_tokens=0, index_terms=None)
    out = StringIO()
    call_command("backfill_passage_lines", tenant=tenant_a.slug, batch=2, stdout=out)
    assert f"{len(passages)} of {len(passages)} passages given their lines" in out.getvalue()
    assert f"{len(passages)}/{len(passages)}" in capsys.readouterr().err  # the progress bar
    with tenant_scope(tenant_a):
        again = list(Passage.objects.for_tenant(tenant_a).order_by("episode_id", "position"))
    assert [(p.line, p.line_tokens, p.index_terms) for p in again] == stored
    assert passage_line(role="", kind="tool_call", content="x", char_start=0, position=0, last=True).line == (
        "tool_call: x"
    )
    out = StringIO()
    call_command("backfill_passage_lines", tenant=tenant_a.slug, stdout=out)
    assert "every passage has its line" in out.getvalue()


def test_the_entity_and_topic_indexes_of_passages_name_the_subject(db: None) -> None:
    """The router's overlap channel reads one subject's passages that carry the query's entities or
    topics: an index without the subject made it read every passage of the subject to find them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'episodic_passage'")
        definitions = [row[0] for row in cursor.fetchall()]
    for column in ("entities", "topics"):
        assert any(d.endswith(f"USING gin (tenant_id, subject, {column})") for d in definitions), definitions
