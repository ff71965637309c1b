"""Prometheus metrics of consolidation and lifecycle, exported at /metrics with the others.

Counters move in the worker that does the work; the backlog gauge is refreshed by the sweep."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RUNS = Counter("engram_consolidation_runs_total", "Consolidation runs finished", ["trigger", "status"])
EPISODES = Counter("engram_consolidation_episodes_total", "Episodes consolidated")
FACTS = Counter("engram_consolidation_facts_total", "Facts written by consolidation", ["action"])
LLM_CALLS = Counter("engram_extractor_llm_calls_total", "Extractor model calls", ["extractor"])
LLM_TOKENS = Counter("engram_extractor_tokens_total", "Extractor tokens", ["extractor", "direction"])
LLM_COST = Counter("engram_extractor_cost_usd_total", "Estimated extractor cost in US dollars", ["extractor"])
RUN_SECONDS = Histogram(
    "engram_consolidation_run_seconds", "Duration of consolidation runs", buckets=(0.1, 0.5, 1, 5, 15, 60, 300, 1800)
)
# Set by whichever worker process ran the sweep last; across processes the latest value is the truth.
BACKLOG = Gauge(
    "engram_consolidation_backlog_episodes",
    "Episodes waiting for consolidation",
    ["tenant"],
    multiprocess_mode="mostrecent",
)
DECAYED = Counter("engram_facts_decayed_total", "Facts whose confidence decayed")
EXPIRED = Counter("engram_facts_forgotten_total", "Facts expired by forgetting", ["why"])
ARCHIVED = Counter("engram_episodes_archived_total", "Episodes moved to cold storage")
