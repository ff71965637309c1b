"""Procedures of real behaviour every tenant can start with (tests and the demo data use them)."""

from __future__ import annotations

import uuid
from typing import Any

from procedural.models import Procedure, ProcedureSource
from procedural.services import procedure_create
from tenants.models import Tenant
from tenants.scope import tenant_scope

SEED_ACTOR = "system:seed"
# Lineage ids derive from the tenant and the seed's slug, so seeding twice finds the first seeding
# (even after the procedure was edited or deprecated) and writes nothing.
_NAMESPACE = uuid.UUID("0b6a3f5e-54a4-4a4e-9c84-3d1e1c0f2a11")

SEEDS: list[dict[str, Any]] = [
    {
        "slug": "backoff-after-429",
        "name": "Back off exponentially after HTTP 429",
        "description": "Rate-limited API calls succeed when retried later, not when hammered.",
        "trigger": {
            "tools": [{"status": [429]}],
            "keywords": ["rate limit", "rate limited", "too many requests"],
            "regexes": [r"(?i)\b(HTTP|status|error)\s*:?\s*429\b"],
            "description": "An API tool answered 429 Too Many Requests: the call was rate limited.",
        },
        "behaviour": (
            "Do not retry at once. Retry with exponential backoff and jitter, honouring Retry-After when the "
            "answer carries it; give up after 5 attempts and tell the user the service is rate limiting."
        ),
        "steps": [
            "Read the Retry-After header; if present, wait that long.",
            "Otherwise wait 1 s, then 2 s, 4 s, 8 s, 16 s between attempts, each with up to 20% random jitter.",
            "Stop after 5 attempts and report the rate limit to the user instead of looping.",
        ],
    },
    {
        "slug": "ask-for-error-log",
        "name": "Ask for the error log before suggesting a fix",
        "description": "Fixes guessed without the actual error are usually wrong and cost a round trip.",
        "trigger": {
            "keywords": ["error", "exception", "traceback", "stack trace", "crash", "crashes", "crashed"],
            "regexes": [r"(?i)\b(getting|got|see|seeing|throws?|raised?|hit)\b.{0,40}\b(error|exception)\b"],
            "topics": ["errors", "troubleshooting", "bug"],
            "description": "The user reports an error, an exception or a crash and asks for help fixing it.",
        },
        "behaviour": (
            "Before proposing any fix, ask for the exact error message and the log or stack trace around it, "
            "and for the version and the command that failed."
        ),
        "steps": [
            "Ask for the full error message and the log or stack trace, pasted as text.",
            "Ask what command or action triggered it and which version is running.",
            "Only then diagnose and suggest a fix, quoting the line of the log it rests on.",
        ],
    },
    {
        "slug": "run-tests-before-commit",
        "name": "Run the tests before committing",
        "description": "Commits that break the build cost more than the minutes the tests take.",
        "trigger": {
            "tools": [{"name": "git_commit"}, {"name": "git_push"}],
            "keywords": ["commit", "git commit", "push", "git push"],
            "regexes": [r"(?i)\b(commit|push)(ting|ing)?\b.{0,30}\b(changes?|code|fix|branch)\b"],
            "description": "The agent is about to commit or push code changes to the repository.",
        },
        "behaviour": "Run the test suite first and commit only when it passes; if it fails, fix or report, do not commit.",
        "steps": [
            "Run the project's test command (make test, pytest, npm test, ...).",
            "If anything fails, fix it or report the failure; do not commit.",
            "Commit only after a green run, mentioning the run in the commit message when useful.",
        ],
    },
]


def seed_lineage(*, tenant: Tenant, slug: str) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, f"{tenant.id}:{slug}")


def seed_procedures(*, tenant: Tenant) -> list[Procedure]:
    """Create the seed procedures the tenant does not have yet; return the current version of each."""
    out: list[Procedure] = []
    with tenant_scope(tenant):
        for seed in SEEDS:
            lineage = seed_lineage(tenant=tenant, slug=seed["slug"])
            existing = (
                Procedure.objects.filter(lineage=lineage)
                .defer("trigger_embedding")
                .order_by("-is_current", "-version")
                .first()
            )
            if existing is not None:
                out.append(existing)
                continue
            fields = {k: v for k, v in seed.items() if k != "slug"}
            out.append(
                procedure_create(
                    tenant=tenant,
                    source=ProcedureSource.INSTRUCTION,
                    created_by=SEED_ACTOR,
                    lineage=lineage,
                    reason="seed",
                    **fields,
                )
            )
    return out
