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
3. For every pattern: support (share of
   successful sessions holding it), confidence (share of sessions holding it that succeeded), lift
   (confidence over the base success rate), and a one-sided Fisher exact test of "sessions with the
   pattern succeed more often", Bonferroni-corrected for the number of testable patterns (Tarone:
   patterns too rare to ever reach significance are not counted).
4. Kept: support, confidence and lift at or above the tenant's thresholds and corrected p <= ALPHA.
   Then redundancy is removed by sequential covering: the strongest evidence first (lowest p, then
   longest, then most frequent); the sessions it holds are set aside and every other pattern is judged
   again, by the same rules, on the sessions left. Pieces and extensions of a kept pattern, and
   patterns that merely ride along with it, find nothing left to stand on.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_LENGTH = 3
WINDOW = 6
MAX_EVENTS_PER_SESSION = 200
ALPHA = 0.01
MAX_CANDIDATES = 5
EXAMPLES = 5

# Names, not sentences: a value that looks like free text never becomes part of a token.
_SLUG = re.compile(r"^[a-z0-9_.:/-]{1,40}$")
_MAX_WORDS = 4
_SKIPPED_KINDS = frozenset({"outcome", "summary"})
# The payload keys a token is made of (and the only ones discovery reads).
TOKEN_PAYLOAD_KEYS = ("tool", "name", "tool_name", "status", "status_code", "http_status", "error", "action")


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
    # Primary keys of sessions, not their external ids: evidence must not name a subject, and once
    # erasure removes a session its number points at nothing.
    example_session_ids: tuple[int, ...]
    success_session_ids: frozenset[int] = field(repr=False, default=frozenset())
    failure_session_ids: frozenset[int] = field(repr=False, default=frozenset())

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
    words = str(value).strip().lower().split()
    text = "_".join(words)
    return text if _SLUG.match(text) and len(words) <= _MAX_WORDS else ""


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


def _hypergeometric_pmf(x: int, draws: int, successes: int, failures: int) -> float:
    if x < 0 or x > successes or draws - x < 0 or draws - x > failures:
        return 0.0
    return math.exp(_log_comb(successes, x) + _log_comb(failures, draws - x) - _log_comb(successes + failures, draws))


def fisher_greater(*, with_success: int, with_failure: int, successes: int, failures: int) -> float:
    """One-sided Fisher exact test: the chance of at least `with_success` successful sessions among
    the sessions holding the pattern, were the pattern unrelated to the outcome (hypergeometric)."""
    draws = with_success + with_failure
    p = sum(_hypergeometric_pmf(x, draws, successes, failures) for x in range(with_success, min(successes, draws) + 1))
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
    # Tarone: a pattern held by k sessions cannot reach p <= alpha however its sessions ended when
    # even "all of them succeeded" is not that unlikely; such patterns are not counted as tests. The
    # count depends on k only, never on outcomes, so the correction stays valid.
    best_p: dict[int, float] = {}
    testable = 0
    for ids in holders.values():
        k = len(ids)
        if k not in best_p:
            best_p[k] = _hypergeometric_pmf(min(k, n_success), k, n_success, n_failure)
        testable += best_p[k] <= thresholds.alpha
    summary.patterns_tested = testable

    candidates: list[Pattern] = []
    for pattern, ids in holders.items():
        if best_p[len(ids)] > thresholds.alpha:
            continue
        succ = [i for i in ids if by_id[i].success]
        found = _evaluate(
            pattern,
            succ,
            [i for i in ids if not by_id[i].success],
            by_id,
            n_success,
            n_failure,
            testable,
            thresholds,
        )
        if found is not None:
            candidates.append(found)
    return _cover(candidates, by_id, testable, thresholds), summary


def _evaluate(
    items: tuple[str, ...],
    succ: Collection[int],
    fail: Collection[int],
    by_id: Mapping[int, SessionSequence],
    n_success: int,
    n_failure: int,
    tests: int,
    thresholds: Thresholds,
) -> Pattern | None:
    if not succ or not n_success or not n_failure:
        return None
    support = len(succ) / n_success
    confidence = len(succ) / (len(succ) + len(fail))
    lift = confidence / (n_success / (n_success + n_failure))
    if support < thresholds.min_support or confidence < thresholds.min_confidence or lift < thresholds.min_lift:
        return None
    p = fisher_greater(with_success=len(succ), with_failure=len(fail), successes=n_success, failures=n_failure)
    p_corrected = min(1.0, p * tests)
    if p_corrected > thresholds.alpha:
        return None
    examples = sorted(succ)[:EXAMPLES]
    return Pattern(
        items=items,
        with_success=len(succ),
        with_failure=len(fail),
        support=support,
        failure_support=len(fail) / n_failure,
        confidence=confidence,
        lift=lift,
        p_value=p_corrected,
        example_session_ids=tuple(examples),
        success_session_ids=frozenset(succ),
        failure_session_ids=frozenset(fail),
    )


def _rank(p: Pattern) -> tuple[float, int, int, tuple[str, ...]]:
    return (p.p_value, -len(p.items), -p.with_success, p.items)


def _cover(
    candidates: list[Pattern], by_id: Mapping[int, SessionSequence], tests: int, thresholds: Thresholds
) -> list[Pattern]:
    """Sequential covering: take the pattern with the strongest evidence, set aside the sessions it
    explains, and judge the others again on the sessions left. A piece or an extension of a kept
    pattern (or a pattern that only rides along with it) has nothing left to stand on and drops out."""
    kept: list[Pattern] = []
    remaining = set(by_id)
    while candidates and len(kept) < thresholds.max_candidates:
        best = min(candidates, key=_rank)
        kept.append(best)
        remaining -= best.success_session_ids | best.failure_session_ids
        n_success = sum(1 for i in remaining if by_id[i].success)
        n_failure = len(remaining) - n_success
        rejudged = (
            _evaluate(
                c.items,
                c.success_session_ids & remaining,
                c.failure_session_ids & remaining,
                by_id,
                n_success,
                n_failure,
                tests,
                thresholds,
            )
            for c in candidates
            if c is not best
        )
        candidates = [c for c in rejudged if c is not None]
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
