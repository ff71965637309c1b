"""Discovering procedures from experience: sequential patterns that separate successful sessions from
failed ones. Pure functions over token sequences; `procedural.services.procedures_discover` feeds
them from the database and turns what they find into candidate procedures.

The algorithm (docs/procedural.md has the argument and the limits):
1. Each ended session with a known outcome becomes a sequence of tokens made from the kind of each
   episode and its tool name (and result status), never its text: `tool_result:billing_api:429`,
   `decision:backoff`, `tool_call:billing_api`, `message:user`. Outcome and summary episodes are
   left out (they would leak the label); consecutive repeats collapse to one token.
2. A pattern is an ordered sequence of 2 to MAX_LENGTH tokens occurring in that order in a session,
   each within WINDOW events of the previous one. Each session counts once per pattern.
3. For every pattern present in at least `min_support` of the successful sessions: support (share of
   successful sessions holding it), confidence (share of sessions holding it that succeeded), lift
   (confidence over the base success rate), and a one-sided Fisher exact test of "sessions with the
   pattern succeed more often", Bonferroni-corrected for the number of patterns tested.
4. Kept: support, confidence and lift at or above the tenant's thresholds and corrected p <= ALPHA.
   Then redundancy is removed greedily: strongest evidence first (lowest p, then longest), and a
   pattern whose successful sessions overlap a kept one's by Jaccard >= OVERLAP is dropped (it is a
   piece or an extension of the same behaviour).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_LENGTH = 3
WINDOW = 6
MAX_EVENTS_PER_SESSION = 200
ALPHA = 0.01
OVERLAP = 0.7
MAX_CANDIDATES = 5
EXAMPLES = 5

_SLUG = re.compile(r"^[a-z0-9_.:/-]{1,60}$")
_SKIPPED_KINDS = frozenset({"outcome", "summary"})


@dataclass(frozen=True)
class SessionSequence:
    session_id: int
    external_id: str
    success: bool
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Thresholds:
    min_support: float
    min_confidence: float
    min_lift: float
    min_sessions: int
    alpha: float = ALPHA
    max_candidates: int = MAX_CANDIDATES


@dataclass(frozen=True)
class Pattern:
    items: tuple[str, ...]
    with_success: int
    with_failure: int
    support: float
    failure_support: float
    confidence: float
    lift: float
    p_value: float
    example_session_ids: tuple[str, ...]
    success_session_ids: frozenset[int] = field(repr=False, default=frozenset())

    @property
    def key(self) -> str:
        return hashlib.sha256("\x1f".join(self.items).encode()).hexdigest()[:32]

    def figures(self) -> dict[str, Any]:
        return {
            "pattern": list(self.items),
            "support": round(self.support, 4),
            "failure_support": round(self.failure_support, 4),
            "confidence": round(self.confidence, 4),
            "lift": round(self.lift, 4),
            "p_value": float(f"{self.p_value:.3g}"),
            "successful_sessions_with": self.with_success,
            "failed_sessions_with": self.with_failure,
            "example_session_ids": list(self.example_session_ids),
        }


@dataclass
class MiningSummary:
    sessions: int = 0
    successful: int = 0
    failed: int = 0
    patterns_counted: int = 0
    patterns_tested: int = 0
    skipped_reason: str = ""


def _slug(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return ""
    text = str(value).strip().lower().replace(" ", "_")
    return text if _SLUG.match(text) else ""


def episode_token(kind: str, role: str, payload: Mapping[str, Any] | None) -> str | None:
    """The token of one episode: its kind, with the tool (and result status) or decision action."""
    if kind in _SKIPPED_KINDS:
        return None
    data = payload if isinstance(payload, Mapping) else {}
    tool = next((s for s in (_slug(data.get(k)) for k in ("tool", "name", "tool_name")) if s), "")
    if kind == "tool_call":
        return f"tool_call:{tool}" if tool else "tool_call"
    if kind == "tool_result":
        status = next((s for s in (_slug(data.get(k)) for k in ("status", "status_code", "http_status")) if s), "")
        if not status and data.get("error"):
            status = "error"
        base = f"tool_result:{tool}" if tool else "tool_result"
        return f"{base}:{status}" if status else base
    if kind == "decision":
        action = _slug(data.get("action"))
        return f"decision:{action}" if action else "decision"
    if kind == "message":
        return f"message:{_slug(role) or 'unknown'}"
    return kind


def collapse(tokens: Iterable[str | None]) -> tuple[str, ...]:
    out: list[str] = []
    for token in tokens:
        if token and (not out or out[-1] != token):
            out.append(token)
            if len(out) >= MAX_EVENTS_PER_SESSION:
                break
    return tuple(out)


def session_patterns(
    tokens: Sequence[str], *, max_length: int = MAX_LENGTH, window: int = WINDOW
) -> set[tuple[str, ...]]:
    """Every ordered pattern of 2..max_length tokens in the sequence, each item within `window`
    positions of the previous one."""
    found: set[tuple[str, ...]] = set()
    n = len(tokens)
    for start in range(n):
        stack: list[tuple[int, tuple[str, ...]]] = [(start, (tokens[start],))]
        while stack:
            position, pattern = stack.pop()
            if len(pattern) >= 2:
                found.add(pattern)
            if len(pattern) == max_length:
                continue
            for nxt in range(position + 1, min(n, position + window + 1)):
                stack.append((nxt, (*pattern, tokens[nxt])))
    return found


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def fisher_greater(*, with_success: int, with_failure: int, successes: int, failures: int) -> float:
    """One-sided Fisher exact test: the chance of at least `with_success` successful sessions among
    the sessions holding the pattern, were the pattern unrelated to the outcome (hypergeometric)."""
    total = successes + failures
    draws = with_success + with_failure
    denominator = _log_comb(total, draws)
    top = min(successes, draws)
    p = 0.0
    for x in range(with_success, top + 1):
        if draws - x > failures:
            continue
        p += math.exp(_log_comb(successes, x) + _log_comb(failures, draws - x) - denominator)
    return min(1.0, p)


def mine_patterns(sessions: Sequence[SessionSequence], thresholds: Thresholds) -> tuple[list[Pattern], MiningSummary]:
    summary = MiningSummary(sessions=len(sessions))
    successful = [s for s in sessions if s.success]
    summary.successful = len(successful)
    summary.failed = len(sessions) - len(successful)
    if len(sessions) < thresholds.min_sessions:
        summary.skipped_reason = f"{len(sessions)} sessions with an outcome; discovery needs {thresholds.min_sessions}"
        return [], summary
    if not successful or summary.failed == 0:
        summary.skipped_reason = "discovery needs both successful and failed sessions"
        return [], summary

    holders: dict[tuple[str, ...], list[int]] = defaultdict(list)
    by_id = {s.session_id: s for s in sessions}
    for s in sessions:
        for pattern in session_patterns(s.tokens):
            holders[pattern].append(s.session_id)
    summary.patterns_counted = len(holders)

    n_success, n_failure = summary.successful, summary.failed
    base_rate = n_success / len(sessions)
    tested: list[tuple[tuple[str, ...], list[int], list[int]]] = []
    for pattern, ids in holders.items():
        succ = [i for i in ids if by_id[i].success]
        if len(succ) / n_success >= thresholds.min_support:
            tested.append((pattern, succ, [i for i in ids if not by_id[i].success]))
    summary.patterns_tested = len(tested)

    qualified: list[Pattern] = []
    for pattern, succ, fail in tested:
        confidence = len(succ) / (len(succ) + len(fail))
        lift = confidence / base_rate
        if confidence < thresholds.min_confidence or lift < thresholds.min_lift:
            continue
        p = fisher_greater(with_success=len(succ), with_failure=len(fail), successes=n_success, failures=n_failure)
        p_corrected = min(1.0, p * len(tested))
        if p_corrected > thresholds.alpha:
            continue
        examples = sorted(succ, key=lambda i: by_id[i].external_id)[:EXAMPLES]
        qualified.append(
            Pattern(
                items=pattern,
                with_success=len(succ),
                with_failure=len(fail),
                support=len(succ) / n_success,
                failure_support=len(fail) / n_failure,
                confidence=confidence,
                lift=lift,
                p_value=p_corrected,
                example_session_ids=tuple(by_id[i].external_id for i in examples),
                success_session_ids=frozenset(succ),
            )
        )
    return _distinct(qualified, thresholds.max_candidates), summary


def _jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _distinct(patterns: list[Pattern], cap: int) -> list[Pattern]:
    ordered = sorted(patterns, key=lambda p: (p.p_value, -len(p.items), -p.with_success, p.items))
    kept: list[Pattern] = []
    for pattern in ordered:
        if any(_jaccard(pattern.success_session_ids, k.success_session_ids) >= OVERLAP for k in kept):
            continue
        kept.append(pattern)
        if len(kept) >= cap:
            break
    return kept


def describe_token(token: str) -> str:
    """A token in words, for the name and behaviour of a discovered procedure."""
    parts = token.split(":")
    kind = parts[0]
    if kind == "tool_call":
        return f"call {parts[1]}" if len(parts) > 1 else "call a tool"
    if kind == "tool_result":
        tool = parts[1] if len(parts) > 1 else "a tool"
        return f"{tool} answers {parts[2]}" if len(parts) > 2 else f"{tool} answers"
    if kind == "decision":
        return f"decide to {parts[1]}" if len(parts) > 1 else "make a decision"
    if kind == "message":
        return f"a {parts[1]} message" if len(parts) > 1 else "a message"
    return kind
