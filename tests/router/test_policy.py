"""The heuristic policy's ranking of history: who said it, which session it is in, and line length."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.tokens import count_tokens
from episodic.selectors import PassageColumns, PassageRow
from router.candidates.common import HeuristicWeights, clip
from router.candidates.episodic import (
    EpisodeHit,
    lexical_scores,
    named_speakers,
    passage_relevance,
    session_standing,
)
from router.timeframe import Timeframe
from tests.router.conftest import T0, remember

T = datetime(2024, 1, 1, tzinfo=UTC)


def _hit(pk: int, role: str, content: str, *, session: str = "s-1", vector: float = 0.5) -> EpisodeHit:
    row = PassageRow(
        id=pk,
        passage_id=pk,
        session=session,
        kind="message",
        role=role,
        content=content,
        occurred_at=T + timedelta(minutes=pk),
        external_id=f"e{pk}",
        content_hash=f"h{pk}",
    )
    return EpisodeHit(row=row, score=0.5, score_parts={"vector": vector})


def test_a_speaker_is_named_by_a_whole_word_of_the_query_whatever_the_case() -> None:
    roles = ["Maria", "John", "", "user"]
    assert named_speakers("What countries has maria been to?", roles) == {"maria"}
    assert named_speakers("Did John or MARIA go?", roles) == {"john", "maria"}
    # A role inside a longer word is not named.
    assert named_speakers("Johnson's report", roles) == frozenset()
    assert named_speakers("what did the user ask for?", roles) == {"user"}


def test_a_session_with_several_matches_stands_above_one_stray_match() -> None:
    standing = session_standing([("a", 0.9), ("a", 0.8), ("a", 0.7), ("b", 1.0), ("c", 0.1)], top=3)
    assert standing["a"] == 1.0
    assert standing["b"] == pytest.approx(1.0 / 2.4)
    assert standing["c"] < standing["b"] < standing["a"]


@given(st.lists(st.tuples(st.sampled_from("abcde"), st.floats(0, 10)), min_size=1, max_size=40), st.integers(1, 5))
def test_session_standing_is_a_share_of_the_best_session(scores, top) -> None:
    standing = session_standing(scores, top=top)
    assert set(standing) == {s for s, _ in scores}
    assert all(0.0 <= v <= 1.0 for v in standing.values())
    if any(score > 0 for _, score in scores):
        assert max(standing.values()) == pytest.approx(1.0)


def test_naming_a_speaker_puts_their_lines_first() -> None:
    hits = [
        _hit(1, "John", "We had a trip to Spain and loved it", vector=0.55),
        _hit(2, "Maria", "My trip to Spain was short", vector=0.5),
    ]
    w = HeuristicWeights()
    unnamed = passage_relevance("a trip to Spain", hits, w=w)
    assert unnamed[1] > unnamed[2]
    named = passage_relevance("Where did Maria go on her trip to Spain?", hits, w=w)
    assert named[2] > named[1]
    assert max(named.values()) == pytest.approx(1.0)


def test_lines_of_the_session_about_the_topic_beat_a_stray_match_elsewhere() -> None:
    hits = [
        _hit(1, "user", "the garden needs new tomato plants", session="garden"),
        _hit(2, "user", "tomato seedlings went in the garden beds", session="garden"),
        _hit(3, "user", "garden tomato harvest was small this year", session="garden"),
        _hit(4, "user", "tomato garden", session="elsewhere"),
    ]
    relevance = passage_relevance("tomato garden", hits, w=HeuristicWeights())
    assert relevance[4] < max(relevance[1], relevance[2], relevance[3])


@given(
    st.lists(
        st.tuples(st.sampled_from(["Maria", "John", "user", ""]), st.text("ab cd", max_size=30), st.floats(-1, 1)),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from(["maria ab", "cd", "John cd ab", "nothing"]),
)
def test_relevance_is_between_zero_and_one(rows, query) -> None:
    hits = [_hit(i, role, text, session=f"s{i % 3}", vector=v) for i, (role, text, v) in enumerate(rows)]
    relevance = passage_relevance(query, hits, w=HeuristicWeights())
    assert set(relevance) == {h.row.id for h in hits}
    assert all(0.0 <= v <= 1.0 for v in relevance.values())


def _relevance_one_hit_at_a_time(query, hits, w, frame):  # type: ignore[no-untyped-def]
    """passage_relevance as it was written before the pool became columns: the reference."""
    lexical = [float(x) for x in lexical_scores(query, PassageColumns.of_rows(hits))]
    best_lexical = max(lexical) or 1.0
    vectors = [h.score_parts.get("vector", 0.0) for h in hits]
    low, high = min(vectors), max(vectors)
    named = named_speakers(query, (h.row.role for h in hits))
    raw = {}
    for h, lex, vec in zip(hits, lexical, vectors, strict=True):
        value = w.fusion_lexical * lex / best_lexical + w.fusion_vector * (
            (vec - low) / (high - low) if high > low else 0.0
        )
        if named and h.row.role.casefold() not in named:
            value *= w.other_speaker_factor
        raw[h.row.passage_id] = max(value, 0.0) + 1e-4 * h.score
    if frame is not None and any(frame.contains(h.row.occurred_at) for h in hits):
        for h in hits:
            if not frame.contains(h.row.occurred_at):
                raw[h.row.passage_id] *= w.time_outside_factor
    standing = session_standing(
        ((h.row.session or f"#{h.row.id}", raw[h.row.passage_id]) for h in hits), top=w.session_top
    )
    for h in hits:
        raw[h.row.passage_id] *= 1.0 - w.session_weight + w.session_weight * standing[h.row.session or f"#{h.row.id}"]
    top = max(raw.values()) or 1.0
    return {passage_id: value / top for passage_id, value in raw.items()}


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Maria", "John", "user", ""]),
            st.text("ab cd", max_size=30),
            st.floats(-1, 1),
            st.floats(0, 1),
            st.sampled_from(["s0", "s1", "s2", ""]),
            st.integers(0, 60 * 24 * 9),
        ),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(["maria ab", "cd", "John cd ab", "nothing"]),
    st.integers(1, 5),
    st.sampled_from([None, (2, 5), (None, 3), (4, None), (20, 30)]),
)
def test_the_pools_relevance_in_arrays_is_the_one_computed_hit_by_hit_to_the_bit(rows, query, top, days) -> None:
    hits = []
    for i, (role, text, vector, score, session, minutes) in enumerate(rows):
        hit = _hit(i + 1, role, text, session=session, vector=vector)
        hit.row.occurred_at = T + timedelta(minutes=minutes)
        hit.score = score
        hits.append(hit)
    frame = (
        None
        if days is None
        else Timeframe(
            phrase="then",
            start=None if days[0] is None else T + timedelta(days=days[0]),
            end=None if days[1] is None else T + timedelta(days=days[1]),
        )
    )
    w = HeuristicWeights(session_top=top)
    got = passage_relevance(query, hits, w=w, frame=frame)
    expected = _relevance_one_hit_at_a_time(query, hits, w, frame)
    assert list(got) == list(expected)
    assert [v.hex() for v in got.values()] == [v.hex() for v in expected.values()]


@pytest.mark.django_db
def test_the_context_prefers_the_named_speakers_line_at_a_tight_budget(tenant_a, ask) -> None:
    remember(
        tenant_a,
        [
            ("John", "We go on holiday to Spain every year"),
            ("Maria", "My holiday in Spain was short but sunny"),
            ("John", "Portugal has the best pastries"),
        ],
        start=T0,
    )
    budgets = {"reserve": 0, "procedural": 0, "semantic": 0, "working": 0, "episodic": 32}
    body = ask(query="Where did Maria go on holiday?", max_tokens=100, budgets=budgets)
    assert [item["text"] for item in body["layers"]["episodic"]] == ["Maria: My holiday in Spain was short but sunny"]
    body = ask(query="Where did they go on holiday?", max_tokens=100, budgets=budgets)
    assert [item["text"][:5] for item in body["layers"]["episodic"]] == ["John:"]


@pytest.mark.parametrize("text", ["word " * 200_000, "x" * 500_000, "数据库" * 100_000, "a\u0301" * 100_000])
def test_a_clip_fits_its_limit_and_reads_only_the_head_of_a_long_text(text: str) -> None:
    clipped = clip(text, 300)
    assert clipped.endswith("…") and count_tokens(clipped) <= 300
    assert len(clipped) <= 300 * 16 + 1
    assert clip("short text", 300) == "short text"


@pytest.mark.django_db
def test_a_context_request_extracts_the_querys_entities_once(tenant_a, ask, monkeypatch) -> None:
    from episodic import extraction

    remember(tenant_a, ["I met Maria in Lisbon.", "Maria likes the harbour."])
    query = "Where did Maria meet Jonas in Lisbon?"
    seen: list[str] = []
    extract = extraction.extract_with_config

    def counted(*, text: str, config):  # type: ignore[no-untyped-def]
        seen.append(text)
        return extract(text=text, config=config)

    monkeypatch.setattr(extraction, "extract_with_config", counted)
    body = ask(query=query)
    assert "Maria" in body["prompt"]
    assert seen.count(query) == 1
