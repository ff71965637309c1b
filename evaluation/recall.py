"""Evidence recall of the context, scored at passage level, on LoCoMo, its long-turn variant and a
knowledge-update set, next to BM25, dense retrieval, a recent window and full replay.

Every question is asked of POST /v1/context (subject = the conversation, query = the question) at each
budget. A question's evidence is a list of `Evidence`: an episode (its external_id) and, when the
evidence is a part of a longer episode, the character span [start, end) of that part in the episode's
content. What the context serves is read from each item's sources:

- `sources[i].span = [start, end]`, when present, is the part of the episode's content the item
  serves (a passage served as an excerpt names its episode and its span; an item that serves several
  passages of one episode lists one source per passage);
- without a span, the item's text is looked up in the episode's content (today the router serves an
  episode's content clipped to its first tokens, whitespace folded, after a `speaker: ` prefix, with an
  ellipsis where it was cut): the parts found are what it covers;
- a source whose item text is not a part of the episode (a fact, a session summary) covers the whole
  episode: the episode-level fallback, counted apart in the reports (`found by fallback`).

Evidence without a span (one turn, one episode) is found when any source names the episode. Evidence
with a span is found when a served span of its episode overlaps it by at least one character; `strict`
figures ask that the served spans cover all of it.

Grounded figures (the headline, `grounded_*`) count a source only when its item restates the evidence
turn (evaluation.grounding): a verbatim excerpt of the episode passes at once (a source with a span
whose item's text is found in the episode's content, or an item whose text is), any other item only
where one of its lines restates the turn (the evidence's span of the episode when it has one). Plain
figures (`recall_*`) take every source at its word, as before. Answer containment
(`answer_containment`, questions with a gold answer) asks whether the prompt holds every content term of
the answer.

Baselines pack whole stored units (turns, or merged episodes in the long-turn variant), one line each
with its date, into the same budget, counted with the same tokenizer.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from core.cpu import postgres_cpu_seconds
from core.tokens import count_tokens
from evaluation.grounding import answer_terms, contains_answer, content_terms, item_lines, lines_restate
from router.rendering import format_day

_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_WORD = re.compile(r"\w+")
_SPEAKER_PREFIX = re.compile(r"^[^:\n]{1,64}: ")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
MULTI_SESSION = "multi-session"
METHODS = ("engram", "engram-episodic", "bm25", "dense", "recent", "full")
# The ablation: the same context request with every layer, and with `layers: ["episodic", "working"]`.
ENGRAM_MODES = ("engram", "engram-episodic")
EPISODIC_ONLY_LAYERS = ("episodic", "working")
METHOD_LABELS = {
    "engram": "engram, all layers",
    "engram-episodic": "engram, episodic + working only",
    "full": "full replay",
}
HALVES = ("first", "second", "all")
# The figure every report leads with; the plain reading (`recall_all`) stands beside it.
HEADLINE = "grounded_recall_all"
ELLIPSIS = "…"

Span = tuple[int, int]


# --- data --------------------------------------------------------------------------------------
def shared_dataset(*parts: str) -> Path:
    """A file of the team's shared datasets: `shared/datasets/...` beside the checkout, or beside a
    parent of it (a git worktree sits a level deeper); the first that exists, else the one beside."""
    here = Path(__file__).resolve().parent.parent
    candidates = [parent / "shared" / "datasets" / Path(*parts) for parent in here.parents]
    return next((c for c in candidates if c.is_file()), candidates[0])


@dataclass(frozen=True)
class Turn:
    """One stored episode: a LoCoMo turn, a merged run of turns, or a generated message."""

    external_id: str
    speaker: str
    text: str
    when: datetime
    session: str = ""

    def line(self) -> str:
        said = f"{self.speaker}: {self.text}" if self.speaker else self.text
        return f"[{format_day(self.when)}] {' '.join(said.split())}"


@dataclass(frozen=True)
class Evidence:
    """An episode, and the part of its content that holds the evidence (None: all of it)."""

    external_id: str
    span: Span | None = None
    label: str = ""


@dataclass(frozen=True)
class Question:
    sample_id: str
    index: int
    text: str
    category: str
    evidence: tuple[Evidence, ...]
    # Knowledge updates: the older statement that the evidence replaces.
    stale: tuple[Evidence, ...] = ()
    # The gold answer (LoCoMo), for answer containment; "" when the set has none.
    answer: str = ""

    @property
    def groups(self) -> tuple[str, ...]:
        if self.category == CATEGORIES[5]:
            return ("adversarial",)
        # Questions over many sessions are reported apart (evaluation.techchat.STORYLINES), so the overall
        # figure stays comparable with the sets' earlier runs.
        if self.category.startswith(MULTI_SESSION):
            return (MULTI_SESSION, self.category)
        return ("overall", self.category)


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]

    def contents(self) -> dict[str, str]:
        return {t.external_id: t.text for t in self.turns}

    def evidence_terms(self) -> dict[Evidence, frozenset[str]]:
        """The content terms of each evidence turn of this conversation's questions (evidence_turn_terms),
        what the grounded rule reads. One conversation's only: LoCoMo's turn ids (D1:3, ...) repeat in
        every conversation, so a map over several would read some questions in another's turns."""
        contents = self.contents()
        return {e: evidence_turn_terms(e, contents) for q in self.questions for e in q.evidence}


def _when(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def normalise_evidence(raw: Iterable[str], known: set[str]) -> tuple[str, ...]:
    """'D8:6; D9:17' -> D8:6, D9:17; 'D:11:26' -> D11:26; 'D30:05' -> D30:5; ids not in the
    conversation are dropped."""
    out: list[str] = []
    for item in raw:
        for session, turn in _EVIDENCE.findall(str(item)):
            dia = f"D{int(session)}:{int(turn)}"
            if dia in known and dia not in out:
                out.append(dia)
    return tuple(out)


def load_locomo(path: Path) -> list[Conversation]:
    """One Turn per LoCoMo turn, as `import_conversations --format locomo` stores it (the photo caption
    in the text, the session `<sample_id>:session_<n>`, a second between turns)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        conv = sample["conversation"]
        sample_id = str(sample["sample_id"])
        turns: list[Turn] = []
        numbered = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key)) and isinstance(conv[key], list)
        )
        for _, key in numbered:
            started = _when(conv[f"{key}_date_time"])
            for offset, turn in enumerate(conv[key]):
                text = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    text = f"{text} [shares a photo: {turn['blip_caption']}]".strip()
                turns.append(
                    Turn(
                        str(turn["dia_id"]),
                        str(turn["speaker"]),
                        text,
                        started + timedelta(seconds=offset),
                        f"{sample_id}:{key}",
                    )
                )
        known = {t.external_id for t in turns}
        questions = []
        for index, qa in enumerate(sample["qa"]):
            evidence = normalise_evidence(qa.get("evidence", []), known)
            category = CATEGORIES[int(qa["category"])]
            # Adversarial questions have no answer in the conversation (their `adversarial_answer` is a trap).
            answer = qa.get("answer") if category != CATEGORIES[5] else None
            if evidence:
                questions.append(
                    Question(
                        sample_id,
                        index,
                        str(qa["question"]),
                        category,
                        tuple(Evidence(dia, None, dia) for dia in evidence),
                        answer="" if answer is None else str(answer),
                    )
                )
        out.append(Conversation(sample_id, turns, questions))
    return out


def half_of(index: int, count: int) -> str:
    """Conversations 0 .. ceil(n/2)-1 are the first half (LoCoMo: 0-4), the rest the second (5-9)."""
    return "first" if index < (count + 1) // 2 else "second"


def half_label(conversations: Sequence[Conversation], half: str) -> str:
    n = len(conversations)
    cut = (n + 1) // 2
    if half == "first":
        return f"conversations 0-{cut - 1}"
    if half == "second":
        return f"conversations {cut}-{n - 1}"
    return "all"


# --- the long-turn variant ---------------------------------------------------------------------
@dataclass(frozen=True)
class MergedEpisode:
    external_id: str
    session: str
    content: str
    when: datetime
    tokens: int
    # (dia_id, start, end): each original turn's line `speaker: text` in the content.
    turns: tuple[tuple[str, int, int], ...]


def merge_turns(
    turns: Sequence[Turn], *, sample_id: str, min_tokens: int = 400, max_tokens: int = 800
) -> list[MergedEpisode]:
    """Consecutive turns of each session merged into episodes of min_tokens to max_tokens (cl100k).

    Each turn becomes the line `speaker: text`; lines are joined by a newline. Within a session an
    episode closes at a target drawn in [min_tokens, max_tokens] from a generator seeded by the session,
    or before a turn that would take it past max_tokens. A session's last episode may be shorter than
    min_tokens (it is merged into the one before when both fit in max_tokens); a single turn longer than
    max_tokens stays whole. Deterministic: the same file gives the same episodes.
    """
    sessions: dict[str, list[Turn]] = {}
    for turn in turns:
        sessions.setdefault(turn.session, []).append(turn)
    out: list[MergedEpisode] = []
    for session, members in sessions.items():
        rng = random.Random(f"locomo-long:{session}")
        groups: list[list[Turn]] = []
        current: list[Turn] = []
        target = rng.randint(min_tokens, max_tokens)
        for turn in members:
            candidate = [*current, turn]
            size = count_tokens(_merged_text(candidate))
            if current and size > max_tokens:
                groups.append(current)
                current, target = [turn], rng.randint(min_tokens, max_tokens)
                size = count_tokens(_merged_text(current))
            else:
                current = candidate
            if size >= target:
                groups.append(current)
                current, target = [], rng.randint(min_tokens, max_tokens)
        if current:
            if groups and count_tokens(_merged_text([*groups[-1], *current])) <= max_tokens:
                groups[-1] = [*groups[-1], *current]
            else:
                groups.append(current)
        number = session.rsplit("_", 1)[-1]
        for k, group in enumerate(groups, start=1):
            content = _merged_text(group)
            spans = []
            start = 0
            for turn in group:
                line = _turn_line(turn)
                spans.append((turn.external_id, start, start + len(line)))
                start += len(line) + 1
            out.append(
                MergedEpisode(
                    external_id=f"{sample_id}:S{number}:E{k}",
                    session=session,
                    content=content,
                    when=group[0].when,
                    tokens=count_tokens(content),
                    turns=tuple(spans),
                )
            )
    return out


def _turn_line(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def _merged_text(turns: Sequence[Turn]) -> str:
    return "\n".join(_turn_line(t) for t in turns)


def build_long(
    conversations: Sequence[Conversation], *, min_tokens: int = 400, max_tokens: int = 800
) -> list[Conversation]:
    """The long-turn variant: the same questions, their evidence turns now spans of merged episodes."""
    out = []
    for conv in conversations:
        merged = merge_turns(conv.turns, sample_id=conv.sample_id, min_tokens=min_tokens, max_tokens=max_tokens)
        where = {dia: Evidence(m.external_id, (s, e), dia) for m in merged for dia, s, e in m.turns}
        questions = [
            Question(
                q.sample_id,
                q.index,
                q.text,
                q.category,
                tuple(where[e.external_id] for e in q.evidence),
                answer=q.answer,
            )
            for q in conv.questions
        ]
        # No speaker: an episode holds the lines of both, each with its own.
        turns = [Turn(m.external_id, "", m.content, m.when, m.session) for m in merged]
        out.append(Conversation(conv.sample_id, turns, questions))
    return out


def episode_items(conversations: Sequence[Conversation]) -> Iterable[dict[str, Any]]:
    """The stored units as items of POST /v1/episodes (for `import_conversations --format jsonl`)."""
    for conv in conversations:
        for turn in conv.turns:
            yield {
                "subject": conv.sample_id,
                "session": turn.session,
                "kind": "message",
                "role": turn.speaker,
                "content": turn.text,
                "occurred_at": turn.when.isoformat(),
                "external_id": turn.external_id,
            }


# --- what a context serves, and scoring --------------------------------------------------------
@dataclass(frozen=True)
class ServedItem:
    """One item of a context: its text, its place in the prompt (0 first) and its sources, each
    (external_id, span or None)."""

    text: str
    position: int
    sources: tuple[tuple[str, Span | None], ...]


@dataclass(frozen=True)
class Served:
    """What one context request served: its items, its tokens, its latency (None when not timed) and
    the prompt as the model would read it."""

    items: list[ServedItem]
    tokens: int
    latency_ms: float | None
    prompt: str


@dataclass(frozen=True)
class ServedSource:
    external_id: str
    position: int
    # The part of the episode served; None: the whole episode by fallback.
    span: Span | None
    # None: the item is a verbatim excerpt of the episode (grounded at once); else the content terms of
    # each line of the item, which ground an evidence turn only where one of them restates it.
    lines: tuple[frozenset[str], ...] | None = None


@lru_cache(maxsize=4096)
def _folded(content: str) -> tuple[str, list[int]]:
    """The content with runs of whitespace folded to one space and trimmed, as the router renders it,
    and for each character of it the index of the character of the content it comes from."""
    chars: list[str] = []
    origin: list[int] = []
    pending_space = False
    for i, ch in enumerate(content):
        if ch.isspace():
            pending_space = bool(chars)
            continue
        if pending_space:
            chars.append(" ")
            origin.append(i - 1)
            pending_space = False
        chars.append(ch)
        origin.append(i)
    return "".join(chars), origin


def excerpt_spans(content: str, text: str) -> list[Span]:
    """The parts of `content` that `text` serves: the text is cut at ellipses, each piece (after a
    leading `speaker: ` prefix if the piece is not found with it) is looked up in the whitespace-folded
    content. Pieces not found add nothing; no piece found gives []."""
    folded, origin = _folded(content)
    spans: list[Span] = []
    for raw in text.split(ELLIPSIS):
        piece = " ".join(raw.replace("\ufffd", " ").split())
        if len(piece) < 2:
            continue
        at = folded.find(piece)
        if at < 0 and (m := _SPEAKER_PREFIX.match(piece)):
            piece = piece[m.end() :]
            at = folded.find(piece) if len(piece) >= 2 else -1
        if at < 0:
            continue
        spans.append((origin[at], origin[at + len(piece) - 1] + 1))
    return spans


def resolve_sources(items: Sequence[ServedItem], contents: Mapping[str, str]) -> list[ServedSource]:
    """Each source's span: its own, else the parts of its episode that the item's text serves, else the
    whole episode (fallback, span None). Sources of episodes outside `contents` are kept, by episode.
    A source is verbatim (`lines` None) when the item's text is an excerpt of the episode's content;
    the others keep the item's lines, to be grounded against the evidence turn."""
    out: list[ServedSource] = []
    for item in items:
        lines: tuple[frozenset[str], ...] | None = None
        for external_id, span in item.sources:
            content = contents.get(external_id)
            found = excerpt_spans(content, item.text) if content is not None else []
            if not found and lines is None:
                lines = item_lines(item.text)
            if span is not None:
                out.append(
                    ServedSource(external_id, item.position, (int(span[0]), int(span[1])), None if found else lines)
                )
                continue
            if not found:
                out.append(ServedSource(external_id, item.position, None, lines))
            out.extend(ServedSource(external_id, item.position, s) for s in found)
    return out


@dataclass(frozen=True)
class Found:
    found: bool
    strict: bool
    fallback: bool
    position: int | None


def evidence_found(evidence: Evidence, served: Sequence[ServedSource]) -> Found:
    """Whether the context serves this evidence (see the module docstring), and where it first does."""
    mine = [s for s in served if s.external_id == evidence.external_id]
    if not mine:
        return Found(False, False, False, None)
    if evidence.span is None:
        return Found(True, True, False, min(s.position for s in mine))
    start, end = evidence.span
    overlapping = [s for s in mine if s.span is not None and s.span[0] < end and start < s.span[1]]
    fallback = [s for s in mine if s.span is None]
    if overlapping:
        covered = _covers([s.span for s in overlapping if s.span is not None], start, end)
        return Found(True, covered or bool(fallback), False, min(s.position for s in overlapping))
    if fallback:
        return Found(True, True, True, min(s.position for s in fallback))
    return Found(False, False, False, None)


def evidence_turn_terms(evidence: Evidence, contents: Mapping[str, str]) -> frozenset[str]:
    """The content terms of the turn a piece of evidence is: its span of the episode's content, or all
    of it, without a leading `speaker: ` (the long-turn variant's lines carry their speaker)."""
    content = contents.get(evidence.external_id, "")
    if evidence.span is not None:
        content = content[evidence.span[0] : evidence.span[1]]
    return content_terms(_SPEAKER_PREFIX.sub("", content.lstrip(), count=1))


def grounded_found(evidence: Evidence, served: Sequence[ServedSource], turn: frozenset[str]) -> Found:
    """evidence_found over the sources that ground it: verbatim excerpts, and items one of whose lines
    restates the turn (`turn`: its content terms, evidence_turn_terms)."""
    return evidence_found(
        evidence,
        [
            s
            for s in served
            if s.external_id == evidence.external_id and (s.lines is None or lines_restate(s.lines, turn))
        ],
    )


def _covers(spans: Iterable[Span], start: int, end: int) -> bool:
    reach = start
    for s, e in sorted(spans):
        if s > reach:
            return False
        reach = max(reach, e)
        if reach >= end:
            return True
    return reach >= end


# --- baselines ---------------------------------------------------------------------------------
def pack_lines(lines: Sequence[tuple[str, str]], budget: int) -> tuple[list[str], int]:
    """Take (id, line) in the given order while they fit; returns the ids and the exact token count."""
    ids: list[str] = []
    chosen: list[str] = []
    used = 0
    for item_id, line in lines:
        cost = count_tokens(line) + 1
        if used + cost > budget:
            continue
        used += cost
        ids.append(item_id)
        chosen.append(line)
    text = "\n".join(chosen)
    while chosen and count_tokens(text) > budget:
        chosen.pop()
        ids.pop()
        text = "\n".join(chosen)
    return ids, count_tokens(text)


def whole_units(ids: Sequence[str], contents: Mapping[str, str]) -> list[ServedItem]:
    """Lines served whole, in the order of the packed text."""
    return [ServedItem(contents[i], n, ((i, (0, len(contents[i]))),)) for n, i in enumerate(ids)]


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class Bm25Baseline:
    def __init__(self, turns: Sequence[Turn]) -> None:
        from rank_bm25 import BM25Okapi

        self.turns = list(turns)
        self.lines = [(t.external_id, t.line()) for t in self.turns]
        self.index = BM25Okapi([tokenize(f"{t.speaker} {t.text}") for t in self.turns])

    def ranked(self, query: str) -> list[tuple[str, str]]:
        scores = self.index.get_scores(tokenize(query))
        order = sorted(range(len(self.turns)), key=lambda i: (-scores[i], i))
        return [self.lines[i] for i in order]

    def retrieve(self, query: str, budget: int) -> tuple[list[str], int]:
        return pack_lines(self.ranked(query), budget)


class DenseBaseline:
    """Cosine similarity of MiniLM vectors (those the episodic layer stored for the same units) to the
    query's, top first, packed into the budget."""

    def __init__(self, turns: Sequence[Turn], vectors: Mapping[str, Sequence[float]]) -> None:
        self.turns = [t for t in turns if t.external_id in vectors]
        self.lines = [(t.external_id, t.line()) for t in self.turns]
        matrix = np.asarray([vectors[t.external_id] for t in self.turns], dtype=np.float32).reshape(len(self.turns), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.matrix = matrix / np.where(norms > 0, norms, 1.0)

    def ranked(self, query_vector: Sequence[float]) -> list[tuple[str, str]]:
        if not self.turns:
            return []
        q = np.asarray(query_vector, dtype=np.float32)
        scores = self.matrix @ (q / (float(np.linalg.norm(q)) or 1.0))
        order = sorted(range(len(self.turns)), key=lambda i: (-float(scores[i]), i))
        return [self.lines[i] for i in order]

    def retrieve(self, query_vector: Sequence[float], budget: int) -> tuple[list[str], int]:
        return pack_lines(self.ranked(query_vector), budget)


def recent_window(turns: Sequence[Turn], budget: int) -> tuple[list[str], int]:
    lines = [(t.external_id, t.line()) for t in reversed(turns)]
    ids: list[str] = []
    used = 0
    for item_id, line in lines:
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        used += cost
        ids.append(item_id)
    # Rendered oldest first, as a transcript.
    ids.reverse()
    return ids, count_tokens("\n".join(line for _, line in reversed(lines[: len(ids)])))


# --- tallies -----------------------------------------------------------------------------------
class Scored(TypedDict):
    """One question's score under one method and budget: all of its evidence found, grounded and plain,
    and whether the prompt contains its answer (None: the answer has no content terms)."""

    grounded: bool
    plain: bool
    contained: bool | None


@dataclass
class Tally:
    n: int = 0
    any: int = 0
    all: int = 0
    strict_all: int = 0
    episode_all: int = 0
    fraction: float = 0.0
    fallback: int = 0
    # Grounded: only the sources that restate the evidence turn (evaluation.grounding).
    grounded_any: int = 0
    grounded_all: int = 0
    grounded_fraction: float = 0.0
    # Questions grounded in full where some evidence was grounded by a restating line, not an excerpt.
    grounded_by_line: int = 0
    # Answer containment: questions whose gold answer has content terms, and those the prompt holds.
    answers: int = 0
    contained: int = 0
    tokens: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    # Knowledge updates (questions with stale evidence only).
    updates: int = 0
    newer_served: int = 0
    newer_above_older: int = 0
    stale_only: int = 0
    both_served: int = 0
    together: int = 0

    def add(
        self,
        question: Question,
        served: Sequence[ServedSource],
        tokens: int,
        latency_ms: float | None,
        *,
        turn_terms: Callable[[Evidence], frozenset[str]] | None = None,
        prompt_terms: frozenset[str] | None = None,
    ) -> Scored:
        """Count one answered request, and return its score. `turn_terms` gives each evidence turn's
        content terms (without it, only verbatim excerpts ground); `prompt_terms` the prompt's, for
        answer containment."""
        results = [evidence_found(e, served) for e in question.evidence]
        hits = sum(r.found for r in results)
        grounded = [
            grounded_found(e, served, turn_terms(e) if turn_terms else frozenset()).found for e in question.evidence
        ]
        g_hits = sum(grounded)
        self.grounded_any += g_hits > 0
        self.grounded_all += g_hits == len(grounded)
        self.grounded_fraction += g_hits / len(grounded)
        if g_hits == len(grounded):
            quoted = [s for s in served if s.lines is None]
            self.grounded_by_line += not all(evidence_found(e, quoted).found for e in question.evidence)
        wanted = answer_terms(question.answer) if question.answer else frozenset()
        contained: bool | None = None
        if wanted and prompt_terms is not None:
            contained = bool(contains_answer(wanted, prompt_terms))
            self.answers += 1
            self.contained += contained
        self.n += 1
        self.any += hits > 0
        self.all += hits == len(results)
        self.strict_all += all(r.strict for r in results)
        cited = {s.external_id for s in served}
        self.episode_all += all(e.external_id in cited for e in question.evidence)
        self.fraction += hits / len(results)
        self.fallback += any(r.fallback for r in results)
        self.tokens.append(tokens)
        if latency_ms is not None:
            self.latency_ms.append(latency_ms)
        if question.stale:
            self._add_update(results, [evidence_found(e, served) for e in question.stale])
        return {"grounded": g_hits == len(grounded), "plain": hits == len(results), "contained": contained}

    def _add_update(self, newer: Sequence[Found], older: Sequence[Found]) -> None:
        self.updates += 1
        new_pos = [r.position for r in newer if r.position is not None]
        old_pos = [r.position for r in older if r.position is not None]
        self.newer_served += bool(new_pos)
        if new_pos and old_pos:
            self.both_served += 1
            self.together += min(new_pos) == min(old_pos)
        if new_pos and (not old_pos or min(new_pos) < min(old_pos)):
            self.newer_above_older += 1
        if old_pos and not new_pos:
            self.stale_only += 1

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latency_ms)
        out: dict[str, Any] = {
            "n": self.n,
            "recall_any": self.any / self.n if self.n else None,
            "recall_all": self.all / self.n if self.n else None,
            "recall_all_strict": self.strict_all / self.n if self.n else None,
            "recall_all_episode": self.episode_all / self.n if self.n else None,
            "recall_fraction": self.fraction / self.n if self.n else None,
            "found_by_fallback": self.fallback,
            "grounded_recall_any": self.grounded_any / self.n if self.n else None,
            "grounded_recall_all": self.grounded_all / self.n if self.n else None,
            "grounded_recall_fraction": self.grounded_fraction / self.n if self.n else None,
            "grounded_by_line": self.grounded_by_line,
            "answers": self.answers,
            "answer_containment": self.contained / self.answers if self.answers else None,
            "tokens_mean": statistics.fmean(self.tokens) if self.tokens else None,
            "latency_ms_p50": statistics.median(lat) if lat else None,
            "latency_ms_p95": percentile(lat, 0.95) if lat else None,
        }
        if self.updates:
            u = self.updates
            out |= {
                "updates": u,
                "newer_above_older": self.newer_above_older / u,
                "stale_only": self.stale_only / u,
                "newer_served": self.newer_served / u,
                "both_served": self.both_served / u,
                "together": self.together / u,
            }
        return out


def percentile(ordered: Sequence[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# One context request: the question, the budget.
Retriever = Callable[[Question, int], Served]
# Query texts -> vectors, for the dense baseline.
QueryEmbedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def evaluate(
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    engram: Retriever,
    methods: Sequence[str] = METHODS,
    *,
    vectors: Callable[[Conversation], Mapping[str, Sequence[float]]] | None = None,
    embed_queries: QueryEmbedder | None = None,
    progress: Callable[[str], None] | None = None,
    episodic_only: Retriever | None = None,
) -> dict[str, Any]:
    """Per method, budget, half (first / second / all) and group (overall = the answerable categories,
    each category, adversarial apart): the tallies. `vectors` gives the stored vectors of a
    conversation's units and `embed_queries` the questions', for the dense baseline."""
    if "dense" in methods and (vectors is None or embed_queries is None):
        raise ValueError("the dense baseline needs the units' vectors and a query embedder")
    if "engram-episodic" in methods and episodic_only is None:
        raise ValueError("engram-episodic needs the episodic-only retriever")
    retrievers = {"engram": engram} | ({"engram-episodic": episodic_only} if episodic_only else {})
    tallies: dict[tuple[str, int, str, str], Tally] = {}
    # Each scoreable question's score per method and budget, for paired comparisons between runs
    # (evaluation.paired).
    scored: list[dict[str, Any]] = []
    full_tokens: list[int] = []
    unit_tokens: list[int] = []
    for index, conv in enumerate(conversations):
        half = half_of(index, len(conversations))
        contents = conv.contents()
        full = "\n".join(t.line() for t in conv.turns)
        full_tokens.append(count_tokens(full))
        unit_tokens.extend(count_tokens(t.text) for t in conv.turns)
        bm25 = Bm25Baseline(conv.turns) if "bm25" in methods else None
        dense = DenseBaseline(conv.turns, vectors(conv)) if "dense" in methods and vectors else None
        query_vectors: dict[int, Sequence[float]] = {}
        if dense is not None and embed_queries is not None and conv.questions:
            embedded = embed_queries([q.text for q in conv.questions])
            query_vectors = {q.index: v for q, v in zip(conv.questions, embedded, strict=True)}
        all_ids = [t.external_id for t in conv.turns]
        line_of = {t.external_id: t.line() for t in conv.turns}
        recent_cache = {b: recent_window(conv.turns, b) for b in budgets}
        turn_terms = conv.evidence_terms()

        for q in conv.questions:
            # Each baseline ranks once per question; only the packing depends on the budget.
            bm25_ranked = bm25.ranked(q.text) if bm25 is not None else []
            dense_ranked = dense.ranked(query_vectors[q.index]) if dense is not None else []
            for budget in budgets:
                for method in methods:
                    latency: float | None = None
                    if method in ENGRAM_MODES:
                        answer = retrievers[method](q, budget)
                        items, tokens, latency, prompt = answer.items, answer.tokens, answer.latency_ms, answer.prompt
                    else:
                        if method == "bm25" and bm25 is not None:
                            ids, tokens = pack_lines(bm25_ranked, budget)
                        elif method == "dense" and dense is not None:
                            ids, tokens = pack_lines(dense_ranked, budget)
                        elif method == "recent":
                            ids, tokens = recent_cache[budget]
                        elif method == "full":
                            ids, tokens = all_ids, full_tokens[-1]
                        else:
                            raise ValueError(f"unknown method {method!r}")
                        items = whole_units(ids, contents)
                        prompt = "\n".join(line_of[i] for i in ids)
                    served = resolve_sources(items, contents)
                    prompt_terms = content_terms(prompt) if q.answer else None
                    for key in q.groups:
                        for h in (half, "all"):
                            score = tallies.setdefault((method, budget, h, key), Tally()).add(
                                q, served, tokens, latency, turn_terms=turn_terms.__getitem__, prompt_terms=prompt_terms
                            )
                    if "overall" in q.groups:
                        scored.append(
                            {
                                "method": method,
                                "budget": budget,
                                "half": half,
                                "question": f"{q.sample_id}#{q.index}",
                                **score,
                            }
                        )
        if progress:
            progress(f"{conv.sample_id}: {len(conv.questions)} questions")
    return {
        "full_replay_tokens_mean": statistics.fmean(full_tokens) if full_tokens else 0.0,
        "unit_tokens_mean": statistics.fmean(unit_tokens) if unit_tokens else 0.0,
        "units": len(unit_tokens),
        "questions": sum(len(c.questions) for c in conversations),
        "halves": {h: half_label(conversations, h) for h in HALVES},
        "results": [
            {"method": m, "budget": b, "half": h, "group": k, **t.summary()}
            for (m, b, h, k), t in sorted(tallies.items())
        ],
        "scored": scored,
    }


# --- latency -----------------------------------------------------------------------------------
@dataclass
class LatencySamples:
    wall_ms: list[float] = field(default_factory=list)
    cpu_process_ms: list[float] = field(default_factory=list)
    cpu_postgres_ms: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        wall = sorted(self.wall_ms)
        return {
            "n": len(wall),
            "p50_ms": statistics.median(wall) if wall else None,
            "p95_ms": percentile(wall, 0.95) if wall else None,
            "cpu_process_ms": statistics.median(self.cpu_process_ms) if self.cpu_process_ms else None,
            "cpu_postgres_ms": statistics.fmean(self.cpu_postgres_ms) if self.cpu_postgres_ms else None,
            "tokens_mean": statistics.fmean(self.tokens) if self.tokens else None,
        }


def measure_latency(
    cases: Mapping[str, Sequence[Question]],
    budgets: Sequence[int],
    ask: Callable[[str, Question, int], int],
    *,
    rounds: int,
    warmup: int = 10,
) -> dict[str, Any]:
    """Wall time and CPU per request (this process, all its threads; PostgreSQL, all its processes),
    for each case (e.g. short turns, long turns) and budget, in one run: the cases and budgets take
    turns request by request, so that a swing of the machine's speed falls on all of them alike.
    `ask(case, question, budget)` makes one request and returns the tokens it used."""
    names = list(cases)
    for i in range(warmup):
        for name in names:
            if cases[name]:
                ask(name, cases[name][i % len(cases[name])], budgets[0])
    samples = {(name, b): LatencySamples() for name in names for b in budgets}
    for i in range(rounds):
        order = [(name, b) for b in budgets for name in names]
        if i % 2:
            order.reverse()
        for name, budget in order:
            if not cases[name]:
                continue
            q = cases[name][i % len(cases[name])]
            pg_before, cpu_before = postgres_cpu_seconds(), os.times()
            started = time.perf_counter()
            tokens = ask(name, q, budget)
            wall = (time.perf_counter() - started) * 1000
            cpu_after = os.times()
            pg_after = postgres_cpu_seconds()
            s = samples[(name, budget)]
            s.wall_ms.append(wall)
            s.cpu_process_ms.append((cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system) * 1000)
            if pg_before is not None and pg_after is not None:
                s.cpu_postgres_ms.append((pg_after - pg_before) * 1000)
            s.tokens.append(tokens)
    return {"results": [{"case": name, "budget": b, **s.summary()} for (name, b), s in samples.items()]}


# --- reports -----------------------------------------------------------------------------------
def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _rows(result: dict[str, Any]) -> dict[tuple[str, int, str, str], dict[str, Any]]:
    return {(r["method"], r["budget"], r["half"], r["group"]): r for r in result["results"]}


def _methods(rows: Mapping[tuple[str, int, str, str], Any]) -> list[str]:
    return [m for m in METHODS if any(k[0] == m for k in rows)]


def method_label(method: str, result: Mapping[str, Any] | None = None) -> str:
    """A method's name in a table; engram's say which layers, and when memory was written without
    consolidation, that too."""
    label = METHOD_LABELS.get(method, method)
    written = (result or {}).get("write_path") or {}
    if method in ENGRAM_MODES and written and not written.get("consolidation", True):
        label += " (no consolidation)"
    return label


def ablation_table(
    result: dict[str, Any], *, budgets: Sequence[int], metric: str = HEADLINE, group: str = "overall"
) -> list[str]:
    """All layers against episodic + working only, side by side per budget and half, with the difference
    (a layer that lowers the metric on any half or budget is a defect)."""
    rows = _rows(result)
    if not any(k[0] == "engram-episodic" for k in rows):
        return []
    halves = result["halves"]
    head = ["budget"]
    for m in ENGRAM_MODES:
        head += [f"{method_label(m, result)} ({halves[h]})" for h in HALVES]
    head += [f"all − episodic ({halves[h]})" for h in HALVES]
    lines = ["| " + " | ".join(head) + " |", "|---:|" + "---:|" * (len(head) - 1)]
    for b in budgets:
        values = {(m, h): rows.get((m, b, h, group), {}).get(metric) for m in ENGRAM_MODES for h in HALVES}
        cells = [str(b)] + [_fmt(values[(m, h)]) for m in ENGRAM_MODES for h in HALVES]
        for h in HALVES:
            a, e = values[("engram", h)], values[("engram-episodic", h)]
            cells.append("–" if a is None or e is None else f"{a - e:+.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def halves_table(
    result: dict[str, Any], *, budgets: Sequence[int], metrics: Sequence[tuple[str, str]], group: str = "overall"
) -> list[str]:
    """One row per method and budget, one column per metric and half."""
    rows = _rows(result)
    halves = result["halves"]
    head = ["method", "budget"]
    for label, _ in metrics:
        head += [f"{label} ({halves[h]})" for h in HALVES]
    head.append("tokens (mean)")
    lines = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    for m in _methods(rows):
        for b in budgets:
            if (m, b, "all", group) not in rows:
                continue
            cells = [method_label(m, result), "all" if m == "full" else str(b)]
            for _, key in metrics:
                cells += [_fmt(rows.get((m, b, h, group), {}).get(key)) for h in HALVES]
            cells.append(_fmt(rows[(m, b, "all", group)]["tokens_mean"], 0))
            lines.append("| " + " | ".join(cells) + " |")
            if m == "full":
                break
    return lines


# The grounded figure and the plain one beside it, as the tables show them.
GROUNDED_AND_PLAIN = (("grounded recall_all", HEADLINE), ("plain recall_all", "recall_all"))


def has_answers(result: Mapping[str, Any]) -> bool:
    return any(r.get("answers") for r in result["results"])


def category_tables(
    result: dict[str, Any], *, budgets: Sequence[int], metrics: Sequence[str] = (HEADLINE, "recall_all")
) -> list[str]:
    """Per half, one row per method and budget, one column per category; a cell holds each metric,
    separated by " / " (by default grounded / plain recall_all)."""
    rows = _rows(result)
    cats = [CATEGORIES[c] for c in (1, 2, 3, 4, 5)]
    out: list[str] = []
    for h in HALVES:
        out += ["", f"### {' / '.join(metrics)} per category, {result['halves'][h]}", ""]
        out.append("| method | budget | " + " | ".join(cats) + " |")
        out.append("|---|---:|" + "---:|" * len(cats))
        for m in _methods(rows):
            if m == "full":
                continue
            for b in budgets:
                cells = [" / ".join(_fmt(rows.get((m, b, h, c), {}).get(k)) for k in metrics) for c in cats]
                out.append(f"| {method_label(m, result)} | {b} | " + " | ".join(cells) + " |")
    return out


def grounding_note(result: Mapping[str, Any]) -> str:
    """What grounded means, with how many fully grounded questions a restating line (not an excerpt)
    grounded, per budget, for all layers."""
    rows = [r for r in result["results"] if r["method"] == "engram" and r["half"] == "all" and r["group"] == "overall"]
    by_line = ", ".join(f"{r['grounded_by_line']} of {r['n']} at {r['budget']}" for r in rows) or "none asked"
    return (
        "Grounded recall (the headline) counts a source only when its item restates the evidence turn: a verbatim "
        "excerpt passes at once, a fact or summary line only for the turns it restates (at least min(3, 40% "
        "rounded up) of the line's content terms, and 2 of 2, occur in the turn; docs/router.md, "
        "`evaluation/grounding.py`). Plain recall takes every source at its word. Questions grounded in full "
        f"through a restating line rather than an excerpt (all layers): {by_line}."
    )


def containment_note() -> str:
    return (
        "Answer containment: the share of questions (with a gold answer that has content terms) whose every "
        "content term of the answer is in the prompt; numbers as their digits, dates as day, month name and "
        "year, lists item by item (`evaluation/grounding.py`)."
    )


def ablation_section(
    result: dict[str, Any],
    *,
    budgets: Sequence[int],
    metrics: Sequence[tuple[str, str]] = GROUNDED_AND_PLAIN,
    group: str = "overall",
) -> list[str]:
    """The ablation gate's tables (empty when episodic-only was not asked)."""
    out: list[str] = []
    for label, key in metrics:
        table = ablation_table(result, budgets=budgets, metric=key, group=group)
        if table:
            out += [f"## {label}: all layers against episodic + working only, each half and all", "", *table, ""]
    return out


OVERALL_METRICS = (
    *GROUNDED_AND_PLAIN,
    ("grounded recall_any", "grounded_recall_any"),
    ("plain recall_any", "recall_any"),
)


def answers_section(result: dict[str, Any], *, budgets: Sequence[int]) -> list[str]:
    """Answer containment, each half and all, and all layers against episodic-only (empty without gold
    answers)."""
    if not has_answers(result):
        return []
    return [
        *ablation_section(result, budgets=budgets, metrics=(("answer containment", "answer_containment"),)),
        "## answer containment (share of questions whose gold answer's content terms are all in the prompt)",
        "",
        *halves_table(result, budgets=budgets, metrics=(("answer containment", "answer_containment"),)),
        "",
    ]


def report_markdown(
    result: dict[str, Any], *, title: str, command: str, budgets: Sequence[int], intro: str, notes: Sequence[str]
) -> str:
    lines = [
        f"# {title}",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d}.",
        "",
        intro.strip(),
        "",
        *ablation_section(result, budgets=budgets),
        *answers_section(result, budgets=budgets),
        "## Overall (categories 1-4), each half and all",
        "",
        *halves_table(result, budgets=budgets, metrics=OVERALL_METRICS),
        "",
        "## recall fraction (share of a question's evidence found), each half and all",
        "",
        *halves_table(
            result,
            budgets=budgets,
            metrics=(("grounded fraction", "grounded_recall_fraction"), ("plain fraction", "recall_fraction")),
        ),
        "",
        "## Per category",
        *category_tables(result, budgets=budgets),
        "",
        "## How it was measured",
        "",
        f"- {grounding_note(result)}",
        *([f"- {containment_note()}"] if has_answers(result) else []),
        *(f"- {n}" for n in notes),
    ]
    return "\n".join(lines) + "\n"


def chart(result: dict[str, Any], path: Path, budgets: Sequence[int]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _rows(result)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method, style in (
        ("engram", "o-"),
        ("engram-episodic", "o:"),
        ("bm25", "s--"),
        ("dense", "d-."),
        ("recent", "^:"),
    ):
        points = [(rows[(method, b, "all", "overall")]["tokens_mean"], rows[(method, b, "all", "overall")][HEADLINE])
                  for b in budgets if (method, b, "all", "overall") in rows]  # fmt: skip
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], style, label=method_label(method, result))
    full = rows.get(("full", budgets[0], "all", "overall")) if budgets else None
    if full:
        ax.plot([full["tokens_mean"]], [full[HEADLINE]], "k*", markersize=12, label="full replay")
    ax.set_xscale("log")
    ax.set_xlabel("context tokens (mean, log scale)")
    ax.set_ylabel("grounded evidence recall_all (categories 1-4)")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend()
    ax.set_title("LoCoMo: grounded evidence recall against context tokens")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
