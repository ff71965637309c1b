"""Precision and recall of the offline extractor on hand-labelled conversations.

A predicted fact matches a labelled one when the attributes are equal and the values are equal once
case, spacing, trailing punctuation and a leading article are ignored. Each label matches at most once.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from consolidation.extractors.rules import SPEAKER_ROLES, extract_from_text
from episodic.management.commands.import_conversations import locomo_items
from episodic.models import Episode

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "extraction" / "conversations.json"


def _norm(value: str) -> str:
    value = re.sub(r"\s+", " ", value.casefold()).strip().rstrip(".,;:!?")
    return re.sub(r"^(?:the|a|an|our|my)\s+", "", value)


@dataclasses.dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    false_positives: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)
    missed: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def load_conversations(path: Path = FIXTURES) -> list[dict[str, Any]]:
    data: dict[str, Any] = json.loads(path.read_text())
    conversations: list[dict[str, Any]] = data["conversations"]
    return conversations


def evaluate(conversations: list[dict[str, Any]]) -> Score:
    score = Score()
    for conv in conversations:
        predicted = [
            (f.attribute, _norm(f.value))
            for role, text in conv["turns"]
            if role in SPEAKER_ROLES
            for f in extract_from_text(text, conv["subject"])
        ]
        expected = [(attribute, _norm(value)) for attribute, value in conv["expected"]]
        remaining = list(expected)
        for fact in predicted:
            if fact in remaining:
                remaining.remove(fact)
                score.tp += 1
            else:
                score.fp += 1
                score.false_positives.append((conv["id"], *fact))
        score.fn += len(remaining)
        score.missed.extend((conv["id"], *fact) for fact in remaining)
    return score


# --- LoCoMo: an extractor judged against the dataset's own per-turn observations and session summaries

_DIA_ID = re.compile(r"D\d+:\d+")
LOCOMO_THRESHOLDS = (0.6, 0.7)


@dataclasses.dataclass
class LocomoFact:
    conversation: int
    dia_id: str
    speaker: str
    statement: str


@dataclasses.dataclass
class LocomoObservation:
    conversation: int
    speaker: str
    text: str
    dia_ids: frozenset[str]


@dataclasses.dataclass
class LocomoSession:
    conversation: int
    session: int
    gold_summary: str
    summary: str


@dataclasses.dataclass
class LocomoRun:
    """What an extractor produced on LoCoMo, beside the gold annotations, before any scoring."""

    facts: list[LocomoFact] = dataclasses.field(default_factory=list)
    observations: list[LocomoObservation] = dataclasses.field(default_factory=list)
    sessions: list[LocomoSession] = dataclasses.field(default_factory=list)
    turns: int = 0
    turns_by_conversation: dict[int, int] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class LocomoScore:
    conversations: list[int]
    turns: int
    observations: int
    facts: int
    # threshold -> (gold observations covered, facts matching a gold observation of their turn)
    covered: dict[float, int]
    matched: dict[float, int]
    summary_similarity: float
    sessions: int

    def coverage(self, threshold: float) -> float:
        return self.covered[threshold] / self.observations if self.observations else 0.0

    def precision(self, threshold: float) -> float:
        return self.matched[threshold] / self.facts if self.facts else 0.0


def _locomo_episode(episode_id: int, item: dict[str, Any]) -> Episode:
    """An unsaved episode of one LoCoMo turn (locomo_items), for an extractor to read."""
    return Episode(
        id=episode_id,
        subject=item["subject"],
        kind=item["kind"],
        role=item["role"],
        content=item["content"],
        payload=item["payload"],
        occurred_at=item["occurred_at"],
        external_id=item["external_id"],
    )


def locomo_run(
    conversations: list[dict[str, Any]], extractor: Any, *, tenant: Any, summaries: bool = True
) -> LocomoRun:
    """Run `extractor` over every LoCoMo session as the consolidator would (one subject per
    conversation, one call per session, episodes built exactly as import_conversations stores them,
    but never saved)."""

    run = LocomoRun()
    index = {str(sample["sample_id"]): i for i, sample in enumerate(conversations)}
    next_id = 1
    for sample_id, items in locomo_items(conversations):
        conv = index[sample_id]
        episodes = []
        dia_of: dict[int, tuple[str, str]] = {}
        for item in items:
            episode = _locomo_episode(next_id, item)
            dia_of[next_id] = (item["external_id"], item["role"])
            episodes.append(episode)
            next_id += 1
        run.turns += len(episodes)
        run.turns_by_conversation[conv] = run.turns_by_conversation.get(conv, 0) + len(episodes)
        result = extractor.extract(tenant=tenant, subject=sample_id, episodes=episodes)
        for candidate in result.candidates:
            for episode_id in candidate.source_episode_ids[:1]:
                dia_id, speaker = dia_of[episode_id]
                run.facts.append(LocomoFact(conv, dia_id, speaker, candidate.statement))
        if summaries:
            number = int(items[0]["session"].rsplit("_", 1)[1])
            gold = conversations[conv].get("session_summary", {}).get(f"session_{number}_summary", "")
            if gold:
                text = extractor.summarise(tenant=tenant, subject=sample_id, episodes=episodes).text
                run.sessions.append(LocomoSession(conv, number, gold, text))
    for conv, sample in enumerate(conversations):
        for per_speaker in sample.get("observation", {}).values():
            for speaker, observations in per_speaker.items():
                for text, evidence in observations:
                    dia_ids = frozenset(_DIA_ID.findall(json.dumps(evidence)))
                    if text.strip() and dia_ids:
                        run.observations.append(LocomoObservation(conv, speaker, text.strip(), dia_ids))
    return run


def locomo_score(
    run: LocomoRun,
    embedder: Any,
    *,
    thresholds: tuple[float, ...] = LOCOMO_THRESHOLDS,
    halves: list[list[int]],
) -> tuple[list[LocomoScore], list[tuple[float, int]]]:
    """Scores for each group of conversations in `halves`, and for every fact of run.facts its best
    cosine with a gold observation of its own turn and that observation's index (-1: none)."""
    import numpy as np

    fact_vectors = embedder.embed([f.statement for f in run.facts])
    obs_vectors = embedder.embed([o.text for o in run.observations])
    # Gold observations and facts meet only on the same conversation and turn.
    by_turn: dict[tuple[int, str], list[int]] = {}
    for i, obs in enumerate(run.observations):
        for dia_id in obs.dia_ids:
            by_turn.setdefault((obs.conversation, dia_id), []).append(i)
    best_for_obs = np.zeros(len(run.observations), dtype=np.float32)
    best_for_fact = np.zeros(len(run.facts), dtype=np.float32)
    best_obs = [-1] * len(run.facts)
    for f, fact in enumerate(run.facts):
        candidates = by_turn.get((fact.conversation, fact.dia_id), [])
        if not candidates:
            continue
        sims = obs_vectors[candidates] @ fact_vectors[f]
        best_for_fact[f] = float(sims.max())
        best_obs[f] = candidates[int(sims.argmax())]
        for j, sim in zip(candidates, sims, strict=True):
            best_for_obs[j] = max(best_for_obs[j], float(sim))
    summary_sims: list[tuple[int, float]] = []
    if run.sessions:
        generated = embedder.embed([s.summary or " " for s in run.sessions])
        gold = embedder.embed([s.gold_summary for s in run.sessions])
        for k, session in enumerate(run.sessions):
            sim = float(generated[k] @ gold[k]) if session.summary.strip() else 0.0
            summary_sims.append((session.conversation, sim))
    scores = []
    for group in halves:
        members = set(group)
        obs_idx = [i for i, o in enumerate(run.observations) if o.conversation in members]
        fact_idx = [i for i, f in enumerate(run.facts) if f.conversation in members]
        sims = [s for c, s in summary_sims if c in members]
        scores.append(
            LocomoScore(
                conversations=sorted(members),
                turns=sum(run.turns_by_conversation.get(c, 0) for c in members),
                observations=len(obs_idx),
                facts=len(fact_idx),
                covered={t: int(sum(best_for_obs[i] >= t for i in obs_idx)) for t in thresholds},
                matched={t: int(sum(best_for_fact[i] >= t for i in fact_idx)) for t in thresholds},
                summary_similarity=sum(sims) / len(sims) if sims else 0.0,
                sessions=len(sims),
            )
        )
    return scores, [(float(s), best_obs[i]) for i, s in enumerate(best_for_fact)]


# --- the hand-labelled sample (docs/benchmarks/extraction_sample.md)


def locomo_sample_draw(
    conversations: list[dict[str, Any]], extractor: Any, *, tenant: Any, size: int, seed: int
) -> list[dict[str, Any]]:
    """`size` facts drawn with a fixed seed from what `extractor` extracts on LoCoMo, each with the
    turn it came from (speaker, role, time, text), ready to be labelled by hand."""
    import random

    facts: list[dict[str, Any]] = []
    index = {str(sample["sample_id"]): i for i, sample in enumerate(conversations)}
    for sample_id, items in locomo_items(conversations):
        episodes = [_locomo_episode(n, item) for n, item in enumerate(items, start=1)]
        by_id = {e.id: e for e in episodes}
        for candidate in extractor.extract(tenant=tenant, subject=sample_id, episodes=episodes).candidates:
            turn = by_id[candidate.source_episode_ids[0]]
            facts.append(
                {
                    "source": "locomo",
                    "conversation": index[sample_id],
                    "turn_id": turn.external_id,
                    "role": turn.role,
                    "said_at": turn.occurred_at.isoformat(),
                    "turn": turn.content,
                    "attribute": candidate.attribute,
                    "value": candidate.value,
                    "statement": candidate.statement,
                }
            )
    picked = sorted(random.Random(seed).sample(range(len(facts)), min(size, len(facts))))
    return [{"id": i, **facts[i], "label": None, "reason": ""} for i in picked]


@dataclasses.dataclass
class LabelledCheck:
    labelled: int
    correct: int
    still_produced: int
    still_correct: int
    rows: list[tuple[dict[str, Any], bool]]

    @property
    def precision(self) -> float:
        return self.correct / self.labelled if self.labelled else 0.0

    @property
    def precision_still_produced(self) -> float:
        return self.still_correct / self.still_produced if self.still_produced else 0.0


def labelled_check(rows: list[dict[str, Any]], extractor: Any, *, tenant: Any) -> LabelledCheck:
    """Precision from the labels, and which labelled facts the extractor still produces from their
    turn today (same attribute and normalised value)."""
    from datetime import datetime

    rows = [r for r in rows if r.get("label") in {"correct", "incorrect"}]
    produced: dict[tuple[str, str, str], set[tuple[str, str]]] = {}
    out: list[tuple[dict[str, Any], bool]] = []
    for row in rows:
        key = (row["role"], row["said_at"], row["turn"])
        if key not in produced:
            episode = Episode(
                id=1,
                subject="sample",
                kind="message",
                role=row["role"],
                content=row["turn"],
                occurred_at=datetime.fromisoformat(row["said_at"]),
            )
            found = extractor.extract(tenant=tenant, subject="sample", episodes=[episode]).candidates
            produced[key] = {(c.attribute, _norm(c.value)) for c in found}
        out.append((row, (row["attribute"], _norm(row["value"])) in produced[key]))
    correct = sum(1 for r, _ in out if r["label"] == "correct")
    still = [(r, s) for r, s in out if s]
    return LabelledCheck(
        labelled=len(out),
        correct=correct,
        still_produced=len(still),
        still_correct=sum(1 for r, _ in still if r["label"] == "correct"),
        rows=out,
    )
