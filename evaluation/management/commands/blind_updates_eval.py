"""Run the blind update set through the public API, as users write, and report aggregates only.

    manage.py blind_updates_eval [--set v1|v2|v3] [--budget 300] [--tenant SLUG] [--target 0.9]
                                 [--json docs/benchmarks/blind_updates_v1.json]
                                 [--report docs/benchmarks/blind_updates_v1.md] [--command-line "..."]

The set (evaluation/blind/updates_v1.jsonl by default, `--set v2` or `--set v3` for updates_v2.jsonl or
updates_v3.jsonl) is checked against its digest in evaluation/blind/SHA256SUMS first; a changed file is
refused. Each pair gets a subject of its own in a fresh evaluation tenant: its
first statement (with the turns around it) is written in session 1, which is ended, its second in session
2, which is ended, through the real write path (evaluation/write_path.py: POST /v1/episodes, POST
/v1/sessions/{id}/end, the consolidation that ending enqueues run as the worker runs it, the backlogs
drained). Then, for each pair, GET /v1/facts?subject=…&status=any and POST /v1/context with the item's
query at a small budget. Only aggregates are printed and written, per kind and overall; never an item's
text or id (the rule of evaluation/blind/README.md).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from rest_framework.test import APIClient

from evaluation.blind_updates import (
    CLAUSE_SLACK_WORDS,
    DEFAULT_SET,
    SETS,
    SUMS_PATH,
    ContextItem,
    FactSeen,
    PairScore,
    SetDigestMismatch,
    aggregate,
    file_digest,
    score_pair,
    set_path,
    verified_items,
)
from evaluation.write_path import SessionItems, conversations_write
from router.rendering import LINE_PREFIX
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

DEFAULT_BUDGET = 300
# Session 1 is said this long before session 2, and session 2 this long before the run.
FIRST_SESSION_AGO = timedelta(days=40)
SECOND_SESSION_AGO = timedelta(days=5)

UPDATE_COLUMNS = (
    ("extraction_coverage", "coverage"),
    ("supersession_recall", "supersession recall"),
    ("supersession_recall_if_covered", "recall if covered"),
    ("both_read", "both read"),
    ("closed_if_both_read", "closed if both read"),
    ("new_value_held", "new value held"),
    ("old_value_still_active", "old value still active"),
    ("value_is_clause", "value is a clause"),
    ("context_newer_first", "context newer first"),
)
KEEP_COLUMNS = (
    ("extraction_coverage", "coverage"),
    ("left_alone", "left alone"),
    ("left_alone_if_covered", "left alone if covered"),
)


class Command(BaseCommand):
    help = "Evaluate knowledge updates on the blind set through the public API; aggregates only (issue 42)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--set", dest="set_name", default=DEFAULT_SET, help=f"The set: {', '.join(SETS)} or a path (JSON lines)"
        )
        parser.add_argument("--sums", default=str(SUMS_PATH), help="The SHA256SUMS that records its digest")
        parser.add_argument("--tenant", default="", help="Slug of the fresh evaluation tenant (one per run)")
        parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="max_tokens of POST /v1/context")
        parser.add_argument("--target", type=float, default=0.9, help="A kind below this share is listed as failing")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--report", default="")
        parser.add_argument("--command-line", default="", help="The command to cite in the report")
        parser.add_argument("--code", default="", help="The commit of the code measured, to cite in the report")
        parser.add_argument("--note", default="", help="What the run measures (e.g. before the mechanism)")

    def handle(self, *args: Any, **options: Any) -> None:
        path, sums = set_path(options["set_name"]), Path(options["sums"])
        try:
            items = verified_items(path, sums)
        except (SetDigestMismatch, OSError) as exc:
            raise CommandError(str(exc)) from exc
        digest = file_digest(path)
        command = options["command_line"] or "manage.py blind_updates_eval " + " ".join(
            shlex.quote(a) for a in sys.argv[2:]
        )
        slug = options["tenant"] or f"blind-updates-{timezone.now():%Y%m%d%H%M%S}"
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant {slug!r} exists: each run writes into a fresh tenant.")
        tenant = Tenant.objects.create(name=f"Evaluation {slug}", slug=slug, settings={"rate_limit_per_minute": 0})
        written = conversations_write(
            tenant=tenant, sessions=pair_sessions(items, now=timezone.now()), progress=self.stderr.write
        )
        if written.runs_failed or written.consolidation_backlog or written.embedding_backlog or written.open_sessions:
            raise CommandError(f"Memory is not ready to be asked: {written.as_dict()}")
        scores = ask_all(tenant, items, budget=options["budget"])
        result = {
            "benchmark": "blind_updates",
            "set": path.name,
            "set_name": options["set_name"] if options["set_name"] in SETS else path.stem,
            "set_digest": digest,
            "command": command,
            "date": f"{timezone.now():%Y-%m-%d}",
            "code": options["code"] or "not given",
            "note": options["note"],
            "budget": options["budget"],
            "target": options["target"],
            "clause_slack_words": CLAUSE_SLACK_WORDS,
            "write_path": written.as_dict(),
            **aggregate(scores),
        }
        result["failing_kinds"] = failing_kinds(result, target=options["target"])
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=1) + "\n")
        if options["report"]:
            Path(options["report"]).write_text(report_markdown(result))
        self.stdout.write("\n".join(tables(result)))
        self.stdout.write(failing_line(result))


def pair_sessions(items: Sequence[dict[str, Any]], *, now: datetime) -> list[SessionItems]:
    """Each pair's two sessions as the write path takes them: session 1 then session 2 of one subject,
    the turns in the order said, pair after pair."""
    sessions: list[SessionItems] = []
    for number, item in enumerate(items):
        subject = f"blind-{item['id']}"
        for which, statement, context, ago in (
            ("s1", item["first"], item.get("first_context") or [], FIRST_SESSION_AGO),
            ("s2", item["second"], item.get("second_context") or [], SECOND_SESSION_AGO),
        ):
            session = f"{subject}:{which}"
            turns = [
                *((c["role"], c["content"]) for c in context if c.get("position") == "before"),
                ("user", statement, "statement"),
                *((c["role"], c["content"]) for c in context if c.get("position") != "before"),
            ]
            start = now - ago + timedelta(minutes=number)
            episodes = []
            for k, turn in enumerate(turns):
                role, content = turn[0], turn[1]
                external = f"{session}:statement" if len(turn) == 3 else f"{session}:t{k}"
                episodes.append(
                    {
                        "subject": subject,
                        "session": session,
                        "kind": "message",
                        "role": role,
                        "content": content,
                        "occurred_at": (start + timedelta(seconds=20 * k)).isoformat(),
                        "external_id": external,
                    }
                )
            sessions.append((session, episodes))
    return sessions


def ask_all(tenant: Tenant, items: Sequence[dict[str, Any]], *, budget: int) -> list[PairScore]:
    """Each pair's facts and context, asked through the API with a read key revoked at the end."""
    issued = api_key_create(tenant=tenant, name="blind_updates_eval", scopes=("read",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    try:
        scores = []
        for item in items:
            subject = f"blind-{item['id']}"
            facts = subject_facts(client, subject)
            context = context_items(client, subject, item["query"], budget)
            scores.append(score_pair(item, facts, context, first_external_id=f"{subject}:s1:statement"))
        return scores
    finally:
        with tenant_scope(tenant):
            ApiKey.objects.filter(id=issued.api_key.id).update(revoked_at=timezone.now())


def subject_facts(client: APIClient, subject: str) -> list[FactSeen]:
    """Every fact of the subject, whatever its status (GET /v1/facts, page after page)."""
    facts: list[FactSeen] = []
    url: str | None = "/v1/facts"
    params: dict[str, Any] | None = {"subject": subject, "status": "any", "limit": 500}
    while url:
        response = client.get(url, params) if params else client.get(url)
        if response.status_code != 200:
            raise CommandError(f"GET /v1/facts answered {response.status_code}")
        data = response.json()
        for f in data["results"]:
            external = tuple(str(s["external_id"]) for s in f.get("sources") or [] if s.get("external_id"))
            facts.append(FactSeen(value=f["value"], status=f["status"], source_external_ids=external))
        url, params = data.get("next"), None
    return facts


def context_items(client: APIClient, subject: str, query: str, budget: int) -> list[ContextItem]:
    """The items of POST /v1/context for the query, each placed where its line starts in the prompt."""
    body = {"subject": subject, "query": query, "max_tokens": budget, "budgets": {"reserve": 0, "episodic": budget}}
    response = client.post("/v1/context", body, format="json")
    if response.status_code != 200:
        raise CommandError(f"POST /v1/context answered {response.status_code}")
    data = response.json()
    prompt = data["prompt"] + "\n"
    items: list[ContextItem] = []
    for layer in ("procedural", "semantic", "episodic"):
        for item in data["layers"][layer]:
            at = prompt.find(f"{LINE_PREFIX}{item['text']}\n")
            items.append(ContextItem(text=item["text"], position=at if at >= 0 else len(prompt) + len(items)))
    return items


def failing_kinds(result: dict[str, Any], *, target: float) -> dict[str, list[str]]:
    """The kinds below the target: update kinds by supersession recall, the others by left alone."""
    return {
        "updates": [r["kind"] for r in result["updates"][1:] if (r["supersession_recall"] or 0) < target],
        "keeps": [r["kind"] for r in result["keeps"][1:] if (r["left_alone"] or 0) < target],
    }


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> list[str]:
    lines = [
        "| kind | pairs | " + " | ".join(label for _, label in columns) + " |",
        "|---|---:|" + "---:|" * len(columns),
    ]
    for r in rows:
        cells = [f"**{r['kind']}**" if r["kind"] == "overall" else r["kind"], str(r["pairs"])]
        lines.append("| " + " | ".join(cells + [_f(r[key]) for key, _ in columns]) + " |")
    return lines


def tables(result: dict[str, Any]) -> list[str]:
    updates, keeps = result["updates"][0], result["keeps"][0]
    return [
        f"Update pairs ({updates['pairs']}, must supersede):",
        "",
        *_table(result["updates"], UPDATE_COLUMNS),
        "",
        f"Pairs that must not supersede ({keeps['pairs']}):",
        "",
        *_table(result["keeps"], KEEP_COLUMNS),
        "",
    ]


def failing_line(result: dict[str, Any]) -> str:
    failing = result["failing_kinds"]
    return (
        f"Kinds below {result['target']:.2f}: updates (supersession recall): "
        f"{', '.join(failing['updates']) or 'none'}; must not supersede (left alone): "
        f"{', '.join(failing['keeps']) or 'none'}."
    )


def report_markdown(result: dict[str, Any]) -> str:
    w: dict[str, Any] = result["write_path"]
    lines = [
        f"# Knowledge updates on the blind set ({result['set_name']}): does a later statement supersede the "
        "earlier value?",
        "",
        f"Produced by `{result['command']}` on {result['date']}, code at `{result['code']}`, set "
        f"`evaluation/blind/{result['set']}` (SHA-256 `{result['set_digest']}`).",
        "",
        *([f"**{result['note']}**", ""] if result.get("note") else []),
        "The set was written by a helper who had not seen the extraction or update code, from a brief of "
        "kinds only (evaluation/blind/README.md). Authors of that code see only these aggregates and the "
        "failing kinds; the command never prints an item.",
        "",
        "## Update pairs (the second statement must supersede the first value)",
        "",
        *_table(result["updates"], UPDATE_COLUMNS),
        "",
        "## Pairs that must not supersede",
        "",
        *_table(result["keeps"], KEEP_COLUMNS),
        "",
        failing_line(result),
        "",
        "## What the figures mean",
        "",
        "- coverage: the share of pairs whose first statement produced a fact (of any status now) holding the "
        "first value, its sources naming that statement.",
        "- supersession recall: an active fact of the subject holds the new value and none holds the old one; "
        "*if covered*: among the pairs whose first value was extracted. A pair whose first value was never "
        "extracted counts as superseded when the new value is held, so read the two together.",
        "- both read: the share of pairs whose first value was extracted and whose new value is held by an active "
        "fact; *closed if both read*: among those, the share whose old value is no longer active. It parts "
        "deciding from reading: a pair that is both read and not closed is a failure of the update decision.",
        "- new value held: an active fact holds the new value; old value still active: an active fact holds "
        "the old value.",
        f"- value is a clause: an active fact holding the old or the new value has more than "
        f"{result['clause_slack_words']} words more than the typed value (a sentence stored as a value).",
        f"- context newer first: `POST /v1/context` with the item's query at {result['budget']} tokens serves an "
        "item holding the new value, placed before any item holding the old value without the new one.",
        "- left alone: an active fact still holds the first value after the second statement.",
        "- A value is held when its content terms are among the text's (evaluation/blind_updates.py): case- "
        "and accent-insensitive, dates, times, amounts and phone numbers read into one form, versions as "
        "written, a value with a number, date or time held by what has those.",
        "",
        "## How it was measured",
        "",
        f"- One subject per pair in a fresh tenant; session 1 (the first statement, with the turns around it) "
        f"{FIRST_SESSION_AGO.days} days before the run, session 2 {SECOND_SESSION_AGO.days} days before; each "
        "written through `POST /v1/episodes` and ended with `POST /v1/sessions/{id}/end`, the consolidation "
        "that ending enqueues run in process as the worker runs it, then the consolidation and embedding "
        f"backlogs drained (evaluation/write_path.py): {w['sessions_ended']} sessions ended, {w['episodes']} "
        f"episodes, {w['facts']} active facts, {w['runs_failed']} failed runs.",
        "- Then `GET /v1/facts?subject=…&status=any` and `POST /v1/context` with `max_tokens` = "
        f"{result['budget']} and `budgets: {{reserve: 0, episodic: {result['budget']}}}`.",
    ]
    return "\n".join(lines) + "\n"
