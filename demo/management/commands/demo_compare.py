"""Replay the demo conversations with memory off and with memory on and compare: how often the
scripted agent had to ask for something the user had already told it, tokens sent, context hit rate.
Writes the figures and a chart to artifacts/demo/demo.md (and demo.png); `--docs` writes the published
page, docs/benchmarks/demo.md, instead."""

from __future__ import annotations

import logging
import shlex
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from demo.agent import CONTEXT_TOKENS, UserStats, totals
from demo.runner import compare
from episodic.models import allow_episode_deletion
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import tenant_create


def _row(label: str, off: UserStats, on: UserStats) -> str:
    ratio = on.tokens_sent / off.tokens_sent if off.tokens_sent else 0.0
    return (
        f"| {label} | {off.needed} | {off.asked_known} | {on.asked_known} | {off.asked} | {on.asked} "
        f"| {on.recall_rate:.0%} ({on.recalled}/{on.told_before}) "
        f"| {off.tokens_sent:,} | {on.tokens_sent:,} | {ratio:.1f}x | {on.hit_rate:.0%} ({on.used}/{on.offered}) |"
    )


HEADER = (
    "| user | facts needed | asked again, memory off | asked again, memory on | asked in all, off | asked in all, on "
    "| answered from memory, on | tokens sent, off | tokens sent, on | tokens on/off | context hit rate, on |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


# A run writes a scratch copy; the published page changes only when asked for.
ARTIFACT = Path(settings.BASE_DIR) / "artifacts" / "demo" / "demo.md"
PUBLISHED = Path(settings.BASE_DIR) / "docs" / "benchmarks" / "demo.md"


class Command(BaseCommand):
    help = (
        "Compare the scripted support agent with memory on and off; write a report and a chart "
        f"(to {ARTIFACT}, or with --docs to the published {PUBLISHED})."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--url", default=None, help="A running Engram (default: the API served in-process)")
        where = parser.add_mutually_exclusive_group()
        where.add_argument(
            "--output", default=str(ARTIFACT), help="Where to write the report; the chart goes beside it"
        )
        where.add_argument("--docs", action="store_true", help=f"Write the published page, {PUBLISHED}")
        parser.add_argument("--no-write", action="store_true", help="Print the table only")
        parser.add_argument("--keep", action="store_true", help="Keep the temporary tenant (deleted by default)")
        parser.add_argument("--context-tokens", type=int, default=CONTEXT_TOKENS, help="max_tokens of each context")

    def handle(self, *args: Any, **options: Any) -> None:
        logging.getLogger("httpx").setLevel(logging.WARNING)
        tenant = tenant_create(name="Demo comparison", slug=f"demo-compare-{uuid.uuid4().hex[:8]}")
        started = time.monotonic()
        try:
            off, on = compare(tenant=tenant, url=options["url"], context_tokens=options["context_tokens"])
        finally:
            if not options["keep"]:
                self._delete(tenant)
        elapsed = time.monotonic() - started
        rows = [_row(o.subject, o, n) for o, n in zip(off, on, strict=True)]
        rows.append(_row("**overall**", totals(off), totals(on)))
        table = "\n".join([HEADER, *rows])
        self.stdout.write(table)
        if options["no_write"]:
            return
        output = PUBLISHED if options["docs"] else Path(options["output"])
        output.parent.mkdir(parents=True, exist_ok=True)
        chart = output.with_suffix(".png")
        self._chart(off, on, chart)
        command = "manage.py demo_compare " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        output.write_text(_report(table, off, on, chart.name, command.strip(), elapsed, options["context_tokens"]))
        self.stdout.write(f"Wrote {output} and {chart}")

    def _delete(self, tenant: Tenant) -> None:

        # A throwaway tenant goes whole, its episodes with it: the one deletion besides erasure and archiving.
        with tenant_scope(tenant), allow_episode_deletion():
            tenant.delete()

    def _chart(self, off: list[UserStats], on: list[UserStats], path: Path) -> None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        labels = [s.subject for s in off] + ["overall"]
        off_all, on_all = [*off, totals(off)], [*on, totals(on)]
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
        xs = range(len(labels))
        width = 0.38
        left.bar([x - width / 2 for x in xs], [s.asked_known for s in off_all], width, label="memory off")
        left.bar([x + width / 2 for x in xs], [s.asked_known for s in on_all], width, label="memory on")
        left.set_title("Asked for something the user had already said")
        left.set_xticks(list(xs), labels)
        left.legend()
        right.bar([x - width / 2 for x in xs], [s.tokens_sent for s in off_all], width, label="memory off")
        right.bar([x + width / 2 for x in xs], [s.tokens_sent for s in on_all], width, label="memory on")
        right.set_title("Prompt tokens sent (cl100k)")
        right.set_xticks(list(xs), labels)
        right.legend()
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)


def _report(
    table: str, off: list[UserStats], on: list[UserStats], chart: str, command: str, elapsed: float, budget: int
) -> str:
    o, n = totals(off), totals(on)
    return f"""# The support-agent demo: memory on and off

The same scripted conversations (3 users, 10 conversations each, across billing, technical issues and
feature requests; `demo/script.py`) replayed twice by the same scripted agent
(`demo/agent.py`). The agent needs named facts to answer (the user's database and its
version, cloud, plan, ...). It looks for the current value of each in what it can see: the
conversation so far and, with memory on, the context Engram serves for the user's message
(`POST /v1/context`, a {budget}-token budget). When a value is not there it asks, and the user answers;
when the context holds it, the agent answers with it, quoting the sentence that holds it (a fact
first, then what the user said). With memory on, every turn is stored as episodes, each context gets
feedback (the items used are those its answer cites or restates, as the Python client decides it for
any agent: `engram_client.used_item_ids`, docs/agents.md) and every conversation is ended and
consolidated before the next one starts. The run is deterministic: the same script gives
the same figures.

- **asked again**: the agent asked for a fact the user had already given in an earlier conversation;
- **asked in all**: also counts facts the user had never given (these must be asked either way);
- **answered from memory**: of the needed values the user had given in an earlier conversation and
  not in this one so far, the share the context held, so that the agent answered with them instead of asking;
- **tokens sent**: prompt tokens over every model call (system prompt, memory context, conversation), cl100k;
- **context hit rate**: share of the context items offered that the agent's answers cite or restate
  (a line of the item shares at least min(3, 40%) of its content terms with the answer, at least 2
  when it has 2). The agent's answers are formulaic ("With your setup (...), here is what I recommend
  for this."), so they restate its own earlier answers when the context serves them: {n.used_own} of
  the {n.used} items used are such answers, {n.used - n.used_own} are what the user said and facts
  (the agent quoted {n.recalled} values).

{table}

![asked again and tokens, memory on and off]({chart})

Overall, over {o.needed} needed facts: with memory off the agent asked {o.asked_known} times for something it
had been told before, with memory on {n.asked_known}: it answered {n.recalled} of the {n.told_before} values it had been told in an earlier
conversation from its context, quoting what it had been told. The price is tokens: the context (up to {budget} tokens)
rides on every call, so the agent with memory sent {n.tokens_sent:,} prompt tokens against {o.tokens_sent:,}
for the agent that remembers nothing (these conversations are short: a few turns each). The other way
to remember, replaying every earlier conversation into each call, would have sent {o.tokens_full_replay:,}
tokens here, and grows with every conversation while the context stays within its budget.

One user (ana.ruiz) migrates from PostgreSQL 15 to 16 in her sixth conversation; the agent needs the
current version afterwards, which counts as known only if the context shows "PostgreSQL 16".

Produced by `DJANGO_SETTINGS_MODULE=config.settings.local .venv/bin/python {command}` (the API served
in-process, consolidation run eagerly, the MiniLM embedder of the local settings) in {elapsed:.0f} s on a
2-core machine.
"""
