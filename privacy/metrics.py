"""Prometheus metrics of privacy, exported at /metrics with the others; they move in the worker."""

from __future__ import annotations

from prometheus_client import Counter

ERASURES = Counter("engram_erasure_requests_total", "Erasure requests finished", ["status"])
