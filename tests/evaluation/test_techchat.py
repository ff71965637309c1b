"""The technical user-assistant set: deterministic under its seed, long turns of code, logs and lists,
every question's evidence the turn that holds its planted statement, updates newer after older."""

from __future__ import annotations

import importlib.metadata
from dataclasses import replace

import pytest

from core.tokens import count_tokens
from evaluation import techchat
from evaluation.recall import MULTI_SESSION, Conversation


def _fingerprint(convs: list[Conversation]) -> list[object]:
    return [(t.external_id, t.speaker, t.text, t.when) for c in convs for t in c.turns] + [
        q for c in convs for q in c.questions
    ]


def test_the_same_seed_gives_the_same_conversations_and_another_seed_others() -> None:
    first = techchat.generate(seed=29, conversations=2, min_tokens=8_000)
    assert _fingerprint(first) == _fingerprint(techchat.generate(seed=29, conversations=2, min_tokens=8_000))
    assert _fingerprint(first) != _fingerprint(techchat.generate(seed=30, conversations=2, min_tokens=8_000))


def test_the_digest_names_the_set_and_the_provenance_the_installed_sources() -> None:
    first = techchat.generate(seed=29, conversations=2, min_tokens=8_000)
    again = techchat.generate(seed=29, conversations=2, min_tokens=8_000)
    assert techchat.digest(first) == techchat.digest(again)
    again[1].turns[-1] = replace(again[1].turns[-1], text=again[1].turns[-1].text + ".")
    assert techchat.digest(first) != techchat.digest(again)
    assert techchat.digest(first) != techchat.digest(techchat.generate(seed=30, conversations=2, min_tokens=8_000))
    provenance = techchat.provenance(29)
    assert provenance.startswith("Python 3.")
    assert f"Django {importlib.metadata.version('Django')}" in provenance


@pytest.mark.slow
def test_conversations_are_long_with_turns_of_200_to_2000_tokens_of_code_logs_and_lists() -> None:
    conversations = techchat.generate(conversations=3)
    for conv in conversations:
        sizes = [count_tokens(t.text) for t in conv.turns]
        assert sum(sizes) >= techchat.MIN_TOKENS
        assert min(sizes) >= 200 and max(sizes) <= 2_000
        assert len({t.session for t in conv.turns}) >= 5
        text = "\n".join(t.text for t in conv.turns)
        assert "```python" in text and "Traceback (most recent call last):" in text and "\n- " in text
        # 11 planted questions, 2 of them updates: 30 conversations give 330 questions, 60 updates; and
        # 2 over many sessions, reported apart.
        planted = [q for q in conv.questions if not q.category.startswith(MULTI_SESSION)]
        assert len(planted) == 11 and len(conv.questions) == 13
        assert sum(bool(q.stale) for q in planted) == 2


@pytest.mark.slow
def test_every_question_cites_the_turn_that_holds_its_statement_and_updates_come_after_what_they_replace() -> None:
    for conv in techchat.generate(conversations=3):
        order = {t.external_id: i for i, t in enumerate(conv.turns)}
        turns = {t.external_id: t for t in conv.turns}
        kinds = set()
        for q in conv.questions:
            if q.category.startswith(MULTI_SESSION):
                continue
            (evidence,) = q.evidence
            said = turns[evidence.external_id]
            assert said.speaker == "user" and evidence.label in said.text
            kinds.add(q.category)
            if q.stale:
                (older,) = q.stale
                assert older.label in turns[older.external_id].text
                assert order[older.external_id] < order[evidence.external_id]
                assert turns[older.external_id].when < said.when
                between = [t for t in conv.turns[order[older.external_id] + 1 : order[evidence.external_id]]]
                assert any(t.speaker == "user" for t in between)
            # Each planted statement is said once: no other turn holds it.
            assert sum(evidence.label in t.text for t in conv.turns) == 1
        assert techchat.UPDATE in kinds and len(kinds) >= 3


@pytest.mark.slow
def test_questions_over_many_sessions_need_one_statement_of_each_of_at_least_four_sessions() -> None:
    kinds = set()
    for conv in techchat.generate(conversations=3):
        turns = {t.external_id: t for t in conv.turns}
        order = {t.external_id: i for i, t in enumerate(conv.turns)}
        planted = {
            e.external_id for q in conv.questions if not q.category.startswith(MULTI_SESSION) for e in q.evidence
        }
        stories = [q for q in conv.questions if q.category.startswith(MULTI_SESSION)]
        assert len(stories) == 2
        for q in stories:
            kinds.add(q.category)
            # Reported apart: never part of the overall figure.
            assert q.groups == (MULTI_SESSION, q.category)
            said = [turns[e.external_id] for e in q.evidence]
            assert len({t.session for t in said}) == len(said) >= techchat.MIN_STORY_SESSIONS
            assert all(t.speaker == "user" and e.label in t.text for t, e in zip(said, q.evidence, strict=True))
            # Told in order, in turns that hold no planted statement, each statement once.
            assert [order[e.external_id] for e in q.evidence] == sorted(order[e.external_id] for e in q.evidence)
            assert not planted & {e.external_id for e in q.evidence}
            assert all(sum(e.label in t.text for t in conv.turns) == 1 for e in q.evidence)
    assert len(kinds) >= 2


def test_the_set_does_not_depend_on_what_else_is_on_the_path(tmp_path, monkeypatch) -> None:
    # The project's own README and its client's, found through "." or PYTHONPATH, were read into the set:
    # the same checkout generated two versions of it under the same turn ids, depending on how it was run.
    before = techchat._readmes()
    paragraph = "A paragraph of a package nobody named, long enough to be read into the set's corpus. " * 3
    info = tmp_path / "stranger-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: stranger\nVersion: 1.0\n\n" + "\n\n".join([paragraph] * 5) + "\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "stranger" in {d.metadata["Name"] for d in importlib.metadata.distributions()}
    assert techchat._readmes() == before
