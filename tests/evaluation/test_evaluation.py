"""The evaluation's own machinery: the long-turn builder, the knowledge-update generator, the
passage-level scorer, the halves, and memory_eval end to end with the test embedder."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from core.tokens import count_tokens, truncate_to_tokens
from evaluation import knowledge_updates
from evaluation.management.commands.memory_eval import served_items
from evaluation.recall import (
    Conversation,
    Evidence,
    Question,
    Served,
    ServedItem,
    ServedSource,
    Tally,
    Turn,
    build_long,
    evaluate,
    evidence_found,
    excerpt_spans,
    half_of,
    load_locomo,
    measure_latency,
    merge_turns,
    resolve_sources,
    shared_dataset,
)

LOCOMO_FILE = shared_dataset("locomo", "locomo10.json")
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
needs_locomo = pytest.mark.skipif(not LOCOMO_FILE.is_file(), reason="the LoCoMo file is not on this machine")


def _turns(session: str, texts: list[str], speaker: str = "Ann") -> list[Turn]:
    return [Turn(f"{session}#{i}", speaker, t, T0 + timedelta(seconds=i), session) for i, t in enumerate(texts)]


# --- the long-turn builder ---------------------------------------------------------------------
@needs_locomo
def test_long_episodes_keep_each_turns_span_and_stay_within_400_to_800_tokens_but_session_tails() -> None:
    conversations = load_locomo(LOCOMO_FILE)[:2]
    for conv in conversations:
        merged = merge_turns(conv.turns, sample_id=conv.sample_id)
        by_id = {t.external_id: t for t in conv.turns}
        seen = [dia for m in merged for dia, _, _ in m.turns]
        assert seen == [t.external_id for t in conv.turns]  # every turn once, in order
        for m in merged:
            for dia, start, end in m.turns:
                assert m.content[start:end] == f"{by_id[dia].speaker}: {by_id[dia].text}"
            assert m.tokens == count_tokens(m.content) <= 800
        last_of_session = {m.session: m.external_id for m in merged}
        short = [m for m in merged if m.tokens < 400]
        assert all(last_of_session[m.session] == m.external_id for m in short)
        assert len(short) < len(merged) / 2


@needs_locomo
def test_long_variant_is_deterministic_and_moves_evidence_to_the_turns_spans() -> None:
    first = build_long(load_locomo(LOCOMO_FILE)[:1])
    again = build_long(load_locomo(LOCOMO_FILE)[:1])
    assert first[0].turns == again[0].turns and first[0].questions == again[0].questions
    original = load_locomo(LOCOMO_FILE)[0]
    texts = {t.external_id: f"{t.speaker}: {t.text}" for t in original.turns}
    contents = first[0].contents()
    for before, after in zip(original.questions, first[0].questions, strict=True):
        assert [e.label for e in after.evidence] == [e.external_id for e in before.evidence]
        for e in after.evidence:
            assert e.span is not None
            assert contents[e.external_id][e.span[0] : e.span[1]] == texts[e.label]


def test_a_session_tail_joins_the_episode_before_when_both_fit() -> None:
    turns = _turns("c:session_1", ["word " * 120, "word " * 120, "word " * 120, "tail end"])
    merged = merge_turns(turns, sample_id="c", min_tokens=200, max_tokens=800)
    assert [m.turns[-1][0] for m in merged][-1] == "c:session_1#3"
    assert all(m.tokens <= 800 for m in merged)
    assert sum(len(m.turns) for m in merged) == 4
    # Sessions never share an episode.
    two = merge_turns(_turns("c:session_1", ["a b"]) + _turns("c:session_2", ["c d"]), sample_id="c")
    assert [m.external_id for m in two] == ["c:S1:E1", "c:S2:E1"]


# --- the knowledge-update set ------------------------------------------------------------------
def test_update_set_is_deterministic_under_its_seed() -> None:
    def fingerprint(convs: list[Conversation]) -> list[object]:
        return [(t.external_id, t.text) for c in convs for t in c.turns] + [q for c in convs for q in c.questions]

    assert fingerprint(knowledge_updates.generate(seed=7, conversations=20)) == fingerprint(
        knowledge_updates.generate(seed=7, conversations=20)
    )
    assert fingerprint(knowledge_updates.generate(seed=7, conversations=20)) != fingerprint(
        knowledge_updates.generate(seed=8, conversations=20)
    )


def test_update_set_states_then_changes_with_distractors_between_and_after() -> None:
    conversations = knowledge_updates.generate()
    assert len(conversations) >= 200
    attributes = set()
    phrasings = set()
    for conv in conversations:
        order = {t.external_id: i for i, t in enumerate(conv.turns)}
        text = {t.external_id: t.text for t in conv.turns}
        user = [t for t in conv.turns if t.speaker == "user"]
        assert conv.questions
        for q in conv.questions:
            (newer,), (older,) = q.evidence, q.stale
            assert order[older.external_id] < order[newer.external_id]
            assert conv.turns[order[older.external_id]].when < conv.turns[order[newer.external_id]].when
            assert older.label in text[older.external_id] and newer.label in text[newer.external_id]
            assert newer.label != older.label
            between = [t for t in user if order[older.external_id] < order[t.external_id] < order[newer.external_id]]
            after = [t for t in user if order[t.external_id] > order[newer.external_id]]
            assert between and after
            attributes.add(q.category)
            phrasings.add(text[newer.external_id].replace(newer.label, "{v}").replace(older.label, "{old}")[:30])
    assert len(attributes) >= 10
    assert len(phrasings) >= 40


# --- the passage-level scorer ------------------------------------------------------------------
CONTENT = "Ann: I moved to Lisbon.\nBob:   That is   great news!\nAnn: We also got a dog named Rex."


def _span_of(text: str) -> tuple[int, int]:
    start = CONTENT.index(text)
    return start, start + len(text)


def test_a_clipped_line_covers_the_prefix_it_serves() -> None:
    folded = " ".join(CONTENT.split())
    clipped = truncate_to_tokens(folded, 12) + "…"
    spans = excerpt_spans(CONTENT, f"message: {clipped}")
    assert len(spans) == 1 and spans[0][0] == 0
    end = spans[0][1]
    assert " ".join(CONTENT[:end].split()) == clipped.removesuffix("…")
    assert end < CONTENT.index("Ann: We also")


def test_an_excerpt_of_several_pieces_covers_each() -> None:
    spans = excerpt_spans(CONTENT, "Ann: I moved to Lisbon. … We also got a dog named Rex.")
    assert spans == [_span_of("Ann: I moved to Lisbon."), _span_of("We also got a dog named Rex.")]
    assert excerpt_spans(CONTENT, "a fact that is nowhere in it") == []


def test_evidence_is_found_only_where_a_served_span_overlaps_it() -> None:
    evidence = Evidence("e1", _span_of("Bob:   That is   great news!"))
    start, end = evidence.span or (0, 0)
    assert not evidence_found(evidence, [ServedSource("e1", 0, (0, start))]).found  # ends where it begins
    assert not evidence_found(evidence, [ServedSource("e1", 0, (end, len(CONTENT)))]).found
    assert not evidence_found(evidence, [ServedSource("e2", 0, (0, len(CONTENT)))]).found  # another episode
    partial = evidence_found(evidence, [ServedSource("e1", 3, (0, start + 1))])
    assert partial.found and not partial.strict and partial.position == 3
    whole = evidence_found(evidence, [ServedSource("e1", 1, (0, start + 4)), ServedSource("e1", 2, (start + 4, end))])
    assert whole.found and whole.strict and whole.position == 1


def test_a_source_span_wins_over_the_text_and_a_source_that_is_no_excerpt_counts_by_episode() -> None:
    contents = {"e1": CONTENT}
    evidence = Evidence("e1", _span_of("Ann: We also got a dog named Rex."))
    head = ServedItem("message: " + CONTENT[:20], 0, (("e1", None),))
    assert not evidence_found(evidence, resolve_sources([head], contents)).found
    with_span = ServedItem("message: " + CONTENT[:20], 0, (("e1", evidence.span),))
    assert evidence_found(evidence, resolve_sources([with_span], contents)).found
    fact = ServedItem("Ann owns a dog (Rex).", 5, (("e1", None),))
    by_episode = evidence_found(evidence, resolve_sources([fact], contents))
    assert by_episode.found and by_episode.fallback and by_episode.position == 5
    # Evidence without a span (one turn, one episode) is found by its episode.
    assert evidence_found(Evidence("e1"), resolve_sources([head], contents)).found


def test_newer_above_older_and_stale_only() -> None:
    q = Question("s", 0, "where?", "city", (Evidence("new"),), (Evidence("old"),))
    cases = {
        "newer first": [ServedSource("new", 1, None), ServedSource("old", 2, None)],
        "older first": [ServedSource("old", 1, None), ServedSource("new", 2, None)],
        "newer alone": [ServedSource("new", 4, None)],
        "older alone": [ServedSource("old", 4, None)],
        "neither": [ServedSource("other", 0, None)],
    }
    tallies = {}
    for name, served in cases.items():
        tallies[name] = Tally()
        tallies[name].add(q, served, tokens=10, latency_ms=None)
    above = {name: t.summary()["newer_above_older"] for name, t in tallies.items()}
    stale = {name: t.summary()["stale_only"] for name, t in tallies.items()}
    assert above == {"newer first": 1, "older first": 0, "newer alone": 1, "older alone": 0, "neither": 0}
    assert stale == {"newer first": 0, "older first": 0, "newer alone": 0, "older alone": 1, "neither": 0}


def test_served_items_are_placed_by_their_line_in_the_prompt_and_keep_source_spans() -> None:
    data = {
        "prompt": "## Recent activity\n### 8 May 2023\n- user: new value and more\n- user: old value\n- user: new value",
        "layers": {
            "procedural": [],
            "semantic": [],
            "episodic": [
                {"id": "n1", "text": "user: new value", "sources": [{"external_id": "n", "span": [0, 9]}]},
                {"id": "o1", "text": "user: old value", "sources": [{"external_id": "o"}, {"external_id": None}]},
            ],
        },
    }
    new, old = served_items(data)
    assert old.position < new.position  # the line `- user: new value`, not the one it begins
    assert new.sources == (("n", (0, 9)),) and old.sources == (("o", None),)


# --- halves ------------------------------------------------------------------------------------
def test_locomo_halves_are_conversations_0_to_4_and_5_to_9() -> None:
    assert [half_of(i, 10) for i in range(10)] == ["first"] * 5 + ["second"] * 5
    assert [half_of(i, 3) for i in range(3)] == ["first", "first", "second"]


def test_every_figure_is_reported_for_each_half_and_all() -> None:
    conversations = []
    for n in range(4):
        turns = _turns(f"c{n}:session_1", [f"fact number {n}", "filler words", f"other {n}"])
        questions = [Question(f"c{n}", 0, f"fact number {n}?", "single-hop", (Evidence(turns[0].external_id),))]
        conversations.append(Conversation(f"c{n}", turns, questions))

    def engram(q: Question, budget: int) -> Served:
        # Finds the evidence of the first two conversations only.
        hit = q.sample_id in ("c0", "c1")
        items = [ServedItem("x", 0, ((f"{q.sample_id}:session_1#0", None),))]
        return Served(items if hit else [], 5, 1.0, "")

    result = evaluate(conversations, [100], engram, methods=("engram", "bm25"))
    rows = {(r["method"], r["half"], r["group"]): r for r in result["results"]}
    assert rows[("engram", "first", "overall")]["recall_all"] == 1.0
    assert rows[("engram", "second", "overall")]["recall_all"] == 0.0
    assert rows[("engram", "all", "overall")]["recall_all"] == 0.5
    assert rows[("engram", "all", "single-hop")]["n"] == 4
    assert rows[("bm25", "first", "overall")]["n"] == 2
    assert result["halves"] == {"first": "conversations 0-1", "second": "conversations 2-3", "all": "all"}


def test_latency_tooling_alternates_cases_and_budgets() -> None:
    q = Question("s", 0, "q", "single-hop", (Evidence("e"),))
    calls: list[tuple[str, int]] = []

    def ask(case: str, question: Question, budget: int) -> int:
        calls.append((case, budget))
        return budget // 2

    result = measure_latency({"short": [q], "long": [q]}, [1000, 4000], ask, rounds=3, warmup=1)
    assert {(r["case"], r["budget"], r["n"], r["tokens_mean"]) for r in result["results"]} == {
        ("short", 1000, 3, 500), ("long", 1000, 3, 500), ("short", 4000, 3, 2000), ("long", 4000, 3, 2000),
    }  # fmt: skip
    assert calls[2:6] == [("short", 1000), ("long", 1000), ("short", 4000), ("long", 4000)]
    assert calls[6:10] == [("long", 4000), ("short", 4000), ("long", 1000), ("short", 1000)]


# --- end to end --------------------------------------------------------------------------------
# Committed for real: ending a session enqueues its consolidation when the transaction commits.
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_memory_eval_updates_writes_json_and_report_with_the_command(tmp_path: Path, settings) -> None:
    out, report = tmp_path / "updates.json", tmp_path / "updates.md"
    # An ablation's configuration is written into its results (router.parts).
    settings.ENGRAM = {**settings.ENGRAM, "PACKER_OFF": ["summaries"]}
    call_command(
        "memory_eval", "updates", "--conversations", "6", "--budgets", "1000", "--methods", "engram,bm25,dense",
        "--tenant", "upd-test", "--json", str(out), "--report", str(report), "--command-line", "bench/updates.py",
    )  # fmt: skip
    result = json.loads(out.read_text())
    rows = {(r["method"], r["half"], r["group"]): r for r in result["results"]}
    for method in ("engram", "bm25", "dense"):
        for half in ("first", "second", "all"):
            row = rows[(method, half, "overall")]
            assert 0 <= row["newer_above_older"] <= 1 and 0 <= row["stale_only"] <= 1
    assert rows[("engram", "all", "overall")]["tokens_mean"] <= 1000
    for method in ("engram", "bm25"):
        row = rows[(method, "all", "overall")]
        assert 0 <= row["grounded_recall_all"] <= row["recall_all"]
    assert result["packer_off"] == ["summaries"]
    scored = [r for r in result["scored"] if r["method"] == "engram"]
    assert len(scored) == rows[("engram", "all", "overall")]["n"]
    text = report.read_text()
    assert "Produced by `bench/updates.py`" in text and "newer above older (conversations 0-2)" in text
    assert "Packer parts switched off (ENGRAM_PACKER_OFF, router.parts): summaries" in text
    assert "grounded recall_all (all) | plain recall_all (all)" in text


@needs_locomo
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_memory_eval_locomo_long_scores_todays_clipped_episodes_by_what_they_serve(tmp_path: Path) -> None:
    out, report = tmp_path / "long.json", tmp_path / "long.md"
    call_command(
        "memory_eval", "locomo-long", "--dataset", str(LOCOMO_FILE), "--conversations", "1", "--questions", "15", "--budgets", "1000",
        "--methods", "engram", "--tenant", "long-test", "--json", str(out), "--report", str(report), "--no-consolidation",
    )  # fmt: skip
    row = next(
        r
        for r in json.loads(out.read_text())["results"]
        if (r["method"], r["half"], r["group"]) == ("engram", "all", "overall")
    )
    # Episodes only (no facts, no summaries): every served line was found in its episode (no fallback),
    # and serving a clipped prefix finds less than citing the episode would.
    assert row["found_by_fallback"] == 0
    assert row["recall_all"] < row["recall_all_episode"]
    # Every served line is an excerpt, so grounded and plain agree; LoCoMo's answers are looked for.
    assert row["grounded_recall_all"] == row["recall_all"]
    assert row["answers"] > 0 and 0 <= row["answer_containment"] <= 1
    text = report.read_text()
    assert "grounded recall_all (all)" in text and "plain recall_all (all)" in text and "answer containment" in text


@needs_locomo
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_memory_eval_latency_asks_short_and_long_turns_at_each_budget(tmp_path: Path) -> None:
    # The first conversation's first three sessions, which hold the evidence of its first three
    # questions: the command's work is the same, on an eighth of the turns to write and consolidate.
    sample = json.loads(LOCOMO_FILE.read_text(encoding="utf-8"))[0]
    kept = {f"session_{n}" for n in (1, 2, 3)}
    sample["conversation"] = {
        key: value
        for key, value in sample["conversation"].items()
        if not key.startswith("session_") or key.removesuffix("_date_time") in kept
    }
    dataset = tmp_path / "locomo-first-sessions.json"
    dataset.write_text(json.dumps([sample]), encoding="utf-8")
    out, report = tmp_path / "latency.json", tmp_path / "latency.md"
    call_command(
        "memory_eval", "latency", "--dataset", str(dataset), "--conversations", "1", "--questions", "3",
        "--budgets", "1000,4000", "--rounds", "2", "--json", str(out), "--report", str(report),
    )  # fmt: skip
    rows = {(r["case"], r["budget"]): r for r in json.loads(out.read_text())["results"]}
    assert set(rows) == {(c, b) for c in ("short turns", "long turns") for b in (1000, 4000)}
    assert all(r["n"] == 2 and r["p95_ms"] > 0 and r["tokens_mean"] <= r_budget for (_, r_budget), r in rows.items())
    assert "To be measured alone" in report.read_text()
