"""Evaluate the router on a benchmark. Today: LoCoMo evidence recall.

    manage.py memory_eval locomo [--dataset PATH] [--tenant locomo-eval] [--reuse]
        [--budgets 1000,2000,4000,8000] [--conversations N] [--json out.json] [--report out.md --chart out.png]

Imports the conversations with import_conversations into a scratch tenant (created here; --reuse keeps
an existing one), embeds them with the configured embedder (the real MiniLM outside tests), then asks
POST /v1/context, in process through the whole API stack, for every question at every budget.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from rest_framework.test import APIClient

from router.evaluation import METHODS, Question, chart, evaluate, load_locomo, report_markdown
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

DEFAULT_DATASET = "../shared/datasets/locomo/locomo10.json"


class Command(BaseCommand):
    help = "Evaluate the context router on LoCoMo (evidence recall against BM25, recent window, full replay)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark", choices=("locomo",))
        parser.add_argument("--dataset", default=DEFAULT_DATASET)
        parser.add_argument("--tenant", default="locomo-eval", help="Slug of the scratch tenant")
        parser.add_argument("--reuse", action="store_true", help="Use the tenant as it is if it exists")
        parser.add_argument("--budgets", default="1000,2000,4000,8000")
        parser.add_argument("--conversations", type=int, default=0, help="Only the first N conversations")
        parser.add_argument("--methods", default=",".join(METHODS))
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--report", default="")
        parser.add_argument("--chart", default="")
        parser.add_argument("--command-line", default="", help="The command to cite in the report")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["dataset"])
        if not path.is_file():
            raise CommandError(f"No dataset at {path}.")
        budgets = [int(b) for b in options["budgets"].split(",") if b.strip()]
        conversations = load_locomo(path)
        if options["conversations"]:
            conversations = conversations[: options["conversations"]]
        tenant = self._tenant(options["tenant"], reuse=options["reuse"], path=path)
        issued = api_key_create(tenant=tenant, name="memory_eval", scopes=("read",))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")

        def engram(q: Question, budget: int) -> tuple[list[str], int, float]:
            body = {
                "subject": q.sample_id,
                "query": q.text,
                "max_tokens": budget,
                # The whole budget is the memory context here, and history may take all of it:
                # the comparison is at equal context size.
                "budgets": {"reserve": 0, "episodic": budget},
            }
            started = time.perf_counter()
            response = client.post("/v1/context", body, format="json")
            latency = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise CommandError(f"POST /v1/context answered {response.status_code}: {response.content[:300]!r}")
            data = response.json()
            found = [
                s["external_id"]
                for layer in ("procedural", "semantic", "episodic")
                for item in data["layers"][layer]
                for s in item["sources"]
                if s["external_id"]
            ]
            return found, data["tokens"]["total"], latency

        try:
            result = evaluate(
                conversations,
                budgets,
                engram,
                methods=[m for m in options["methods"].split(",") if m],
                progress=lambda m: self.stderr.write(m),
            )
        finally:
            with tenant_scope(tenant):
                ApiKey.objects.for_tenant(tenant).filter(id=issued.api_key.id).update(revoked_at=timezone.now())
        command = options["command_line"] or "manage.py memory_eval " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=1))
        if options["report"]:
            Path(options["report"]).write_text(report_markdown(result, command=command, budgets=budgets))
        if options["chart"]:
            chart(result, Path(options["chart"]), budgets)
        for row in result["results"]:
            if row["group"] == "overall":
                self.stdout.write(
                    f"{row['method']:>7} {row['budget']:>6}  recall_all={row['recall_all']:.3f} "
                    f"recall_any={row['recall_any']:.3f} frac={row['recall_fraction']:.3f} "
                    f"tokens={row['tokens_mean']:.0f} p50={row['latency_ms_p50'] or 0:.1f}ms "
                    f"p95={row['latency_ms_p95'] or 0:.1f}ms"
                )

    def _tenant(self, slug: str, *, reuse: bool, path: Path) -> Tenant:
        from episodic.tasks import embed_pending

        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is not None and not reuse:
            raise CommandError(f"Tenant {slug!r} exists: pass --reuse, or another --tenant for a fresh one.")
        if tenant is None:
            # No rate limit: the evaluation asks thousands of questions a minute.
            tenant = Tenant.objects.create(name=f"Evaluation {slug}", slug=slug, settings={"rate_limit_per_minute": 0})
        call_command("import_conversations", "--tenant", slug, "--format", "locomo", str(path), "--quiet",
                     stdout=self.stderr)  # fmt: skip
        started = time.perf_counter()
        embedded = 0
        while True:
            report = embed_pending(tenant=tenant, max_batches=50)
            embedded += report.embedded
            if not report.remaining:
                break
        self.stderr.write(f"embedded {embedded} episodes in {time.perf_counter() - started:.1f}s")
        return tenant
