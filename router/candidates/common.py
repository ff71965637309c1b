"""What the layers' candidates share: the heuristic weights, the query's words, clipping a line."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.tokens import count_tokens, truncate_to_tokens
from router.pricing import line_tokens
from router.types import Candidate

# No cl100k token is longer than this many characters in ordinary text; a clip reads at most this many
# characters per token of its limit, so its cost does not grow with the length of what is clipped.
_CHARS_PER_TOKEN_BOUND = 16


def clip(text: str, limit: int) -> str:
    # A token is at least one character, so a text no longer than the limit in characters fits.
    if len(text) <= limit:
        return text
    head = text[: limit * _CHARS_PER_TOKEN_BOUND]
    if len(head) == len(text) and count_tokens(text) <= limit:
        return text
    return truncate_to_tokens(head, limit - 1) + "…"


@dataclass(frozen=True)
class HeuristicWeights:
    """The policy's constants; the measurements behind their values are in
    docs/benchmarks/router_weights.md."""

    # Longest single line an episode may take; longer content is cut (the full text is in the store).
    episode_max_tokens: int = 300
    fact_max_tokens: int = 120
    # How many recent events of the current session (or the subject) are offered.
    recent_limit: int = 40
    # Values are relevance raised to `sharpness`, so that per-token packing still prefers the most
    # relevant lines over short, weakly related ones.
    sharpness: float = 4.0
    fusion_lexical: float = 0.6
    fusion_vector: float = 0.4
    recent_base: float = 1.2
    recent_decay: float = 0.85
    # When the request names no session, the subject's latest events in any session are offered too,
    # valued below any relevant line: they fill only what relevant history leaves (a memory written a
    # moment ago is there even before anything finds it by its words or meaning).
    latest_limit: int = 5
    latest_value: float = 1e-5
    neighbour_factor: float = 0.35
    neighbour_hits: int = 40
    summary_factor: float = 0.6
    # When the query names who said something (an episode's role, as a word of the query), lines of
    # other speakers keep this share of their relevance: "What has Maria been to?" is answered by Maria,
    # but a question with a wrong premise ("What did Maria do?" when John did it) needs John's line.
    other_speaker_factor: float = 0.5
    # A session is judged by its best `session_top` hits; a line's relevance is scaled between
    # (1 - session_weight) and 1 by its session's standing, so that the lines of the sessions about the
    # topic beat stray matches elsewhere (multi-hop answers sit in the same few sessions).
    session_weight: float = 0.5
    session_top: int = 3
    # Packing divides value by tokens; scaling an episode's value by tokens ** length_exponent softens
    # that, so a long line that says more is not always passed over for a short one that says little.
    length_exponent: float = 0.6
    length_reference: int = 32
    # Knowledge updates: among the `update_pool` hits of at least `update_relevance` (the lines that
    # answer the query), an older one whose meaning is within `update_similarity` (cosine) of a newer
    # one speaks of the same thing: it is labelled "(earlier)" and is served only with the newer.
    update_relevance: float = 0.5
    update_similarity: float = 0.3
    update_pool: int = 8
    # A time phrase in the query ("last week", "in May 2023"; router.timeframe): history outside the
    # window it names keeps this share of its relevance, when some of the pool is inside it.
    time_outside_factor: float = 0.5
    # Search depth: one candidate per this many tokens of the context's memory (max_tokens less the
    # reserve), within bounds: the re-ranking orders the pool better than the search's fused rank, so a
    # deeper pool finds more (docs/router.md, "Search depth").
    tokens_per_candidate: int = 4
    min_candidates: int = 30
    max_candidates: int = 400
    # Absolute relevance floors (docs/router.md, "Relevance floors"): an item under its layer's floor
    # is not offered however it ranks, read on scales that mean the same for every query (the cosine of
    # the query's and the item's vectors; whether a word, entity or topic of the query matches it).
    # Both are 0, dropping only what has nothing in common with the query: what links a fact or a line
    # to a question is often knowledge of the world, not words or MiniLM similarity ("our company" and
    # "works at Brightpath"), and an item not served is a question asked again.
    fact_min_similarity: float = 0.0
    episode_min_similarity: float = 0.0
    # One relevance scale (docs/router.md, "One relevance scale"): the probability that a candidate is
    # evidence for the query, a logistic model per kind over the score parts it carries (intercept
    # first, then the weights of passage_features, fact_features, summary_features), fitted by
    # bench/relevance_fit.py. A fact's or a summary's probability is placed on history's scale: the
    # relevance at which a line of history is as likely to be evidence, valued as that line would be.
    passage_logit: tuple[float, ...] = (-7.9102, 7.4388)
    fact_logit: tuple[float, ...] = (-11.7589, 11.4837, 1.7357, 0.3206)
    summary_logit: tuple[float, ...] = (-10.5974, 7.7779)


_QUERY_WORD = re.compile(r"\w+")


def query_words(query: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _QUERY_WORD.findall(query))


def passage_features(parts: dict[str, float]) -> list[float]:
    """A line of history found by search: its relevance within the pool (router.candidates.episodic)."""
    return [parts.get("relevance", 0.0)]


def fact_features(parts: dict[str, float]) -> list[float]:
    """A fact: the cosine similarity of its statement to the query, its text rank relative to the best
    fact's, its confidence (semantic.selectors.fact_search_rows)."""
    return [parts.get("vector", 0.0), parts.get("text", 0.0), parts.get("confidence", 0.0)]


def summary_features(parts: dict[str, float]) -> list[float]:
    """A session's summary: the relevance of the session's best line."""
    return [parts.get("session_relevance", 0.0)]


def logistic(beta: Sequence[float], features: Sequence[float]) -> float:
    z = beta[0] + sum(b * f for b, f in zip(beta[1:], features, strict=True))
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


def on_history_scale(beta: Sequence[float], features: Sequence[float], w: HeuristicWeights) -> float:
    """The value of a candidate whose evidence probability is logistic(beta, features): the value of a
    line of history as likely to be evidence (relevance r with logistic(passage_logit, [r]) equal to
    it), before the length factor that every line gets (length_scaled)."""
    z = beta[0] + sum(b * f for b, f in zip(beta[1:], features, strict=True))
    intercept, slope = w.passage_logit[0], w.passage_logit[1]
    relevance = min(1.0, max(0.0, (z - intercept) / slope)) if slope > 0 else 0.0
    return relevance**w.sharpness + 1e-6


def length_scaled(item: Candidate, w: HeuristicWeights) -> Candidate:
    """Packing divides value by tokens; this softens it (HeuristicWeights.length_exponent)."""
    item.value *= (line_tokens(item) / w.length_reference) ** w.length_exponent
    return item
