"""Evaluate the router: evidence recall on LoCoMo and its long-turn variant, a knowledge-update set,
and the latency of short against long turns.

    manage.py memory_eval locomo       [--dataset PATH] [--budgets 1000,2000,4000,8000] [--conversations N]
    manage.py memory_eval locomo-long  [--dataset PATH] [--min-tokens 400 --max-tokens 800]
    manage.py memory_eval updates      [--seed 18] [--conversations 200]
    manage.py memory_eval techchat     [--seed 29] [--conversations 30]
    manage.py memory_eval latency      [--budgets 1000,4000] [--rounds 200]
    common: [--tenant SLUG] [--reuse] [--methods engram,bm25,dense,recent,full] [--questions N] [--every K]
            [--no-consolidation]
            [--json out.json] [--report out.md] [--chart out.png] [--command-line "..."]

Each set is written into a scratch tenant of its own (created here; --reuse resumes an existing one)
through the real write path (evaluation/write_path.py): POST /v1/episodes session by session, each
session ended with POST /v1/sessions/{id}/end, consolidation and the embedding backlog (the configured
embedder: the real MiniLM outside tests) run to completion as the worker runs them. Only then is every
question asked of POST /v1/context, in process through the whole API stack, at every budget.
--no-consolidation leaves the sessions open (no facts, no summaries) and says so in every report. Every figure is reported for each half of the set (LoCoMo: conversations 0-4 and 5-9) and for
all of it. `latency` asks the short-turn and the long-turn LoCoMo tenants in alternation, at each
budget, and reports wall time and CPU per request; run it on a machine that nothing else is using.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from rest_framework.test import APIClient

from core.embedding import get_embedder
from episodic.management.commands.import_conversations import locomo_items
from episodic.models import Episode
from evaluation import knowledge_updates, techchat
from evaluation.memory_control import answer_items
from evaluation.recall import (
    EPISODIC_ONLY_LAYERS,
    HALVES,
    HEADLINE,
    METHODS,
    OVERALL_METRICS,
    Conversation,
    Question,
    Served,
    ServedItem,
    ablation_section,
    answers_section,
    build_long,
    category_tables,
    chart,
    containment_note,
    episode_items,
    evaluate,
    grounding_note,
    halves_table,
    load_locomo,
    measure_latency,
    method_label,
    report_markdown,
    shared_dataset,
)
from evaluation.write_path import SetMismatch, conversations_write, sessions_of
from router.parts import packer_parts
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

DEFAULT_DATASET = str(shared_dataset("locomo", "locomo10.json"))
# An evaluation's tenant keeps sentence vectors (Tenant.keeps_sentence_vectors) so that a memory-control run
# on a copy of it explores at once instead of embedding them first; the formula never reads them, so the
# contexts are a default tenant's.
EVALUATION_SETTINGS = {"rate_limit_per_minute": 0, "sentence_vectors": True}
BENCHMARKS = ("locomo", "locomo-long", "updates", "techchat", "latency")
TENANTS = {
    "locomo": "locomo-eval",
    "locomo-long": "locomo-long-eval",
    "updates": "updates-eval",
    "techchat": "techchat-eval",
}


class Command(BaseCommand):
    help = "Evaluate the context router: LoCoMo, long-turn LoCoMo, knowledge updates (recall by halves), latency."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("benchmark", choices=BENCHMARKS)
        parser.add_argument("--dataset", default=DEFAULT_DATASET)
        parser.add_argument("--tenant", default="", help="Slug of the scratch tenant (one per set by default)")
        parser.add_argument("--reuse", action="store_true", help="Use the tenant as it is if it exists")
        parser.add_argument("--budgets", default="")
        parser.add_argument("--conversations", type=int, default=0, help="LoCoMo: the first N; updates: how many")
        parser.add_argument("--questions", type=int, default=0, help="Only the first N questions of each conversation")
        parser.add_argument("--every", type=int, default=1, help="Only every K-th question of each conversation")
        parser.add_argument("--seed", type=int, default=None, help="updates (18), techchat (29): the generator's seed")
        parser.add_argument("--min-tokens", type=int, default=400, help="locomo-long: smallest merged episode")
        parser.add_argument("--max-tokens", type=int, default=800, help="locomo-long: largest merged episode")
        parser.add_argument("--rounds", type=int, default=200, help="latency: requests per case and budget")
        parser.add_argument("--methods", default=",".join(METHODS))
        parser.add_argument(
            "--no-consolidation",
            action="store_true",
            help="Leave the sessions open (no facts, no summaries): not the product; labelled in every report",
        )
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--report", default="")
        parser.add_argument("--chart", default="")
        parser.add_argument("--command-line", default="", help="The command to cite in the report")

    def handle(self, *args: Any, **options: Any) -> None:
        benchmark = options["benchmark"]
        options["seed_given"] = options["seed"] is not None
        if options["seed"] is None:
            options["seed"] = 18
        default_budgets = "1000,4000" if benchmark == "latency" else "1000,2000,4000,8000"
        budgets = [int(b) for b in (options["budgets"] or default_budgets).split(",") if b.strip()]
        command = options["command_line"] or "manage.py memory_eval " + " ".join(shlex.quote(a) for a in sys.argv[2:])
        if benchmark == "latency":
            self._latency(options, budgets, command)
            return
        conversations = self._conversations(benchmark, options)
        slug = options["tenant"] or TENANTS[benchmark]
        tenant = self._tenant(slug, benchmark, conversations, options)
        methods = [m for m in options["methods"].split(",") if m]
        unknown = set(methods) - set(METHODS)
        if unknown:
            raise CommandError(f"Unknown methods: {', '.join(sorted(unknown))}.")
        with _Asker(tenant) as asker:
            result = evaluate(
                conversations,
                budgets,
                asker.engram,
                methods=methods,
                vectors=lambda conv: stored_vectors(tenant, conv.sample_id),
                embed_queries=_embed_queries,
                progress=lambda m: self.stderr.write(m),
                episodic_only=asker.episodic_only,
            )
        result["benchmark"] = benchmark
        result["write_path"] = self.write_report.as_dict()
        result["packer_off"] = list(packer_parts().off())
        if benchmark == "techchat":
            result["set_digest"] = techchat.digest(conversations)
            result["provenance"] = techchat.provenance(
                options["seed"] if options["seed_given"] else techchat.DEFAULT_SEED
            )
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=1))
        if options["report"]:
            Path(options["report"]).write_text(self._report(benchmark, result, command, budgets, options))
        if options["chart"]:
            chart(result, Path(options["chart"]), budgets)
        self.stdout.write(write_path_note(result))
        for row in result["results"]:
            if row["group"] == "overall":
                line = (
                    f"{row['method']:>15} {row['budget']:>6} {row['half']:>6}  "
                    f"grounded recall_all={row['grounded_recall_all']:.3f} plain={row['recall_all']:.3f} "
                    f"grounded recall_any={row['grounded_recall_any']:.3f} plain={row['recall_any']:.3f}"
                )
                if row["answer_containment"] is not None:
                    line += f" answer_containment={row['answer_containment']:.3f}"
                line += f" tokens={row['tokens_mean']:.0f}"
                if "newer_above_older" in row:
                    line += f" newer_above_older={row['newer_above_older']:.3f} stale_only={row['stale_only']:.3f}"
                self.stdout.write(line)

    # --- data ----------------------------------------------------------------------------------
    def _conversations(self, benchmark: str, options: dict[str, Any]) -> list[Conversation]:
        conversations = self._whole_conversations(benchmark, options)
        for conv in conversations:
            # A stride keeps the mix of categories that a prefix of the list would not.
            conv.questions = conv.questions[:: max(options["every"], 1)]
            if options["questions"]:
                conv.questions = conv.questions[: options["questions"]]
        return conversations

    def _whole_conversations(self, benchmark: str, options: dict[str, Any]) -> list[Conversation]:
        if benchmark == "updates":
            return knowledge_updates.generate(seed=options["seed"], conversations=options["conversations"] or 200)
        if benchmark == "techchat":
            return techchat.generate(
                seed=options["seed"] if options["seed_given"] else techchat.DEFAULT_SEED,
                conversations=options["conversations"] or techchat.DEFAULT_CONVERSATIONS,
            )
        path = Path(options["dataset"])
        if not path.is_file():
            raise CommandError(f"No dataset at {path}.")
        conversations = load_locomo(path)
        if options["conversations"]:
            conversations = conversations[: options["conversations"]]
        if benchmark == "locomo-long":
            conversations = build_long(
                conversations, min_tokens=options["min_tokens"], max_tokens=options["max_tokens"]
            )
        return conversations

    def _tenant(
        self, slug: str, benchmark: str, conversations: Sequence[Conversation], options: dict[str, Any]
    ) -> Tenant:

        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is not None and not options["reuse"]:
            raise CommandError(f"Tenant {slug!r} exists: pass --reuse, or another --tenant for a fresh one.")
        if tenant is None:
            # No rate limit: the evaluation asks thousands of questions a minute.
            tenant = Tenant.objects.create(name=f"Evaluation {slug}", slug=slug, settings=dict(EVALUATION_SETTINGS))
        if benchmark == "locomo":
            # As import_conversations --format locomo builds them (the photo caption, the payload).
            samples = json.loads(Path(options["dataset"]).read_text(encoding="utf-8"))
            wanted = {conv.sample_id for conv in conversations}
            sessions = [
                (items[0]["session"], items)
                for sample_id, items in locomo_items(samples)
                if sample_id in wanted and items
            ]
        else:
            sessions = sessions_of(episode_items(conversations))
        # The sessions of the conversations asked about first: a smaller run writes only what it asks.
        try:
            report = conversations_write(
                tenant=tenant, sessions=sessions, consolidate=not options["no_consolidation"],
                progress=lambda m: self.stderr.write(m),
            )  # fmt: skip
        except SetMismatch as exc:
            raise CommandError(str(exc)) from exc
        self.write_report = report
        self.stderr.write(
            f"write path ({'sessions ended, consolidated' if report.consolidation else 'NO CONSOLIDATION'}): "
            f"{report.episodes_posted} episodes posted in {report.write_seconds:.1f}s, backlogs drained in "
            f"{report.drain_seconds:.1f}s; {report.episodes} episodes, {report.facts} facts, {report.summaries} "
            f"summaries, {report.open_sessions} open sessions"
        )
        if report.runs_failed or report.consolidation_backlog or report.embedding_backlog:
            raise CommandError(f"Memory is not ready to be asked: {report.as_dict()}")
        if not report.consolidation and report.open_sessions < report.sessions:
            raise CommandError(f"Tenant {slug!r} holds ended sessions: --no-consolidation needs a fresh tenant.")
        return tenant

    # --- latency -------------------------------------------------------------------------------
    def _latency(self, options: dict[str, Any], budgets: list[int], command: str) -> None:
        cases: dict[str, list[Question]] = {}
        tenants: dict[str, Tenant] = {}
        for benchmark, case in (("locomo", "short turns"), ("locomo-long", "long turns")):
            conversations = self._conversations(benchmark, options)
            tenants[case] = self._tenant(TENANTS[benchmark], benchmark, conversations, {**options, "reuse": True})
            # The same questions in both: the case differs only by the length of what is stored.
            cases[case] = [q for conv in conversations for q in conv.questions]
        askers = {case: _Asker(tenant) for case, tenant in tenants.items()}
        try:

            def ask(case: str, question: Question, budget: int) -> int:
                return askers[case].engram(question, budget).tokens

            result = measure_latency(cases, budgets, ask, rounds=options["rounds"])
        finally:
            for asker in askers.values():
                asker.close()
        result |= {"benchmark": "latency", "command": command, "budgets": budgets}
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=1))
        if options["report"]:
            Path(options["report"]).write_text(latency_markdown(result, command=command))
        for row in result["results"]:
            self.stdout.write(
                f"{row['case']:>12} {row['budget']:>6}  p50={row['p50_ms']:.1f}ms p95={row['p95_ms']:.1f}ms "
                f"cpu={row['cpu_process_ms']:.1f}ms pg={row['cpu_postgres_ms'] or 0:.1f}ms"
            )

    # --- reports -------------------------------------------------------------------------------
    def _report(
        self, benchmark: str, result: dict[str, Any], command: str, budgets: list[int], options: dict[str, Any]
    ) -> str:
        common = [
            write_path_note(result),
            "engram: `POST /v1/context` through the whole API stack in process (Django test client: "
            "authentication, tenant scope, row-level security, serialisation), `subject` = the conversation, "
            "`query` = the question, `max_tokens` = the budget and `budgets: {reserve: 0, episodic: <budget>}`, "
            "so that the whole budget is context, as for the baselines. Tokens are those of the returned prompt.",
            "bm25: rank-bm25 Okapi over the stored units (lowercase words); dense: cosine similarity between the "
            "question's all-MiniLM-L6-v2 vector and the vectors the episodic layer stored for the same units; "
            "recent: the last units of the conversation. Each baseline renders one unit per line with its date "
            "(`[8 May 2023] speaker: text`) and packs them in its order into the same budget, counted with the "
            "same tokenizer (cl100k).",
            "Halves: " + "; ".join(f"{h} = {result['halves'][h]}" for h in HALVES[:2]) + ". A ranking change is "
            "kept only when both halves gain.",
        ]
        if result.get("packer_off"):
            common.append(
                f"Packer parts switched off (ENGRAM_PACKER_OFF, router.parts): {', '.join(result['packer_off'])}; "
                "the engram rows are this configuration's."
            )
        if options["every"] > 1 or options["questions"]:
            common.append(
                f"A sample: {result['questions']} questions, every {options['every']}th of each conversation"
                + (f" (at most {options['questions']})" if options["questions"] else "")
                + "; the same command without --every / --questions asks them all."
            )
        if benchmark == "locomo":
            intro = (
                f"{result['questions']} scoreable questions (categories 1-4 overall; category 5, adversarial, "
                "apart). A question's evidence is found when a context item's sources name its `dia_id` (one "
                "turn, one episode): plain recall; grounded recall, the headline, counts such a source only when "
                "the item restates that turn (a verbatim excerpt, or a fact or summary line that restates it). "
                "Answer containment: the share of questions whose gold answer's content terms are all in the "
                f"prompt. Full replay costs {result['full_replay_tokens_mean']:.0f} tokens per conversation, "
                "counted with cl100k."
            )
            notes = [
                "The conversations were written as `manage.py import_conversations --format locomo` builds them "
                "(one subject per conversation, one session per LoCoMo session, `dia_id` as the episode's "
                "external_id, photo captions in the content) into a scratch tenant, and embedded with "
                "all-MiniLM-L6-v2.",
                *common,
                "Peers at 1K / 2K / 4K from docs DESIGN (same protocol, not re-run here): mem0 0.430 / 0.552 / "
                "0.716, LangGraph PostgresStore 0.375 / 0.407 / 0.408.",
                "Tuned on this data: the re-ranking rules of the heuristic policy (docs/router.md) were chosen on "
                "these ten conversations; docs/benchmarks/locomo_long.md and updates.md are data nobody tuned on.",
            ]
            return report_markdown(
                result, title="LoCoMo: evidence recall of the context, by halves", command=command,
                budgets=budgets, intro=intro, notes=notes,
            )  # fmt: skip
        if benchmark == "locomo-long":
            return long_markdown(result, command=command, budgets=budgets, options=options, common=common)
        if benchmark == "techchat":
            return techchat_markdown(result, command=command, budgets=budgets, options=options, common=common)
        return updates_markdown(result, command=command, budgets=budgets, options=options, common=common)


def write_path_note(result: dict[str, Any]) -> str:
    """How memory was written before the questions: the real path, or the labelled mode without it."""
    w = result["write_path"]
    if not w["consolidation"]:
        return (
            "**Written without consolidation** (`--no-consolidation`: not the product): episodes through "
            f"`POST /v1/episodes` ({w['episodes']} stored, embedded), sessions left open, so no facts and no "
            "session summaries; the engram rows are this mode's."
        )
    return (
        "Written through the real write path (`evaluation/write_path.py`): each session's episodes through "
        "`POST /v1/episodes` in order, the session ended with `POST /v1/sessions/{id}/end`, the consolidation "
        "that ending enqueues run in process as the worker runs it (summary, extraction, merge), then the "
        "consolidation and embedding backlogs drained until empty; only then the questions. When asked: "
        f"{w['sessions']} sessions ({w['sessions_ended']} ended by this run, {w['open_sessions']} open), "
        f"{w['episodes']} episodes, {w['facts']} active facts, {w['summaries']} summary episodes, "
        f"{w['runs_failed']} failed consolidation runs; written in {w['write_seconds']:.0f} s, backlogs "
        f"drained in {w['drain_seconds']:.0f} s."
    )


def stored_vectors(tenant: Tenant, subject: str) -> dict[str, list[float]]:
    """The vectors the episodic layer stored for a subject's episodes, by external_id (dense baseline)."""

    with tenant_scope(tenant):
        rows = Episode.objects.filter(subject=subject, embedding__isnull=False)
        return {
            str(ext): list(vec) for ext, vec in rows.values_list("external_id", "embedding") if ext and vec is not None
        }


def _embed_queries(texts: Sequence[str]) -> list[list[float]]:

    return [list(map(float, v)) for v in get_embedder().embed(list(texts))]


class _Asker:
    """A read key of the tenant and a client that asks POST /v1/context; the key is revoked at the end."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.issued = api_key_create(tenant=tenant, name="memory_eval", scopes=("read",))
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.issued.raw}")

    def __enter__(self) -> _Asker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with tenant_scope(self.tenant):
            ApiKey.objects.filter(id=self.issued.api_key.id).update(revoked_at=timezone.now())

    @staticmethod
    def body(q: Question, budget: int, layers: Sequence[str] | None = None) -> dict[str, Any]:
        """The POST /v1/context body that asks `q` within `budget` tokens, of `layers` (all by default)."""
        body: dict[str, Any] = {
            "subject": q.sample_id,
            "query": q.text,
            "max_tokens": budget,
            # The whole budget is the memory context here, and history may take all of it: the
            # comparison is at equal context size.
            "budgets": {"reserve": 0, "episodic": budget},
        }
        if layers:
            body["layers"] = list(layers)
        return body

    def engram(self, q: Question, budget: int, layers: Sequence[str] | None = None) -> Served:
        body = self.body(q, budget, layers)
        started = time.perf_counter()
        response = self.client.post("/v1/context", body, format="json")
        latency = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise CommandError(f"POST /v1/context answered {response.status_code}: {response.content[:300]!r}")
        data = response.json()
        return Served(served_items(data), data["tokens"]["total"], latency, data["prompt"])

    def episodic_only(self, q: Question, budget: int) -> Served:
        return self.engram(q, budget, EPISODIC_ONLY_LAYERS)


def served_items(data: dict[str, Any]) -> list[ServedItem]:
    """The items of a context answer, placed by where their line starts in the prompt, with each
    source's external_id and its `span` ([start, end] in the episode's content) when it has one."""
    return [item for _, item in answer_items(data)]


def long_markdown(
    result: dict[str, Any], *, command: str, budgets: Sequence[int], options: dict[str, Any], common: Sequence[str]
) -> str:
    lines = [
        "# Long-turn LoCoMo: passage-level evidence recall of the context, by halves",
        "",
        f"Produced by `{command}` on {timezone.now():%Y-%m-%d}.",
        "",
        f"The LoCoMo file, consecutive turns of each session merged into {result['units']} episodes of "
        f"{options['min_tokens']}-{options['max_tokens']} tokens (mean {result['unit_tokens_mean']:.0f}; a "
        "session's last episode may be shorter), each turn kept as the line `speaker: text` at a known "
        f"character span. {result['questions']} scoreable questions, the same as LoCoMo's. Evidence counts "
        "as found only when a served excerpt overlaps the evidence turn's span (passage-level recall), not "
        "merely when the merged episode is cited; grounded recall (the headline) asks besides that the item "
        "restate the evidence turn.",
        "",
        *ablation_section(result, budgets=budgets),
        *answers_section(result, budgets=budgets),
        "## Overall (categories 1-4), each half and all",
        "",
        *halves_table(result, budgets=budgets, metrics=OVERALL_METRICS),
        "",
        "## Stricter and looser readings of recall_all",
        "",
        "strict: every evidence turn entirely inside the served spans; episode cited: every evidence turn's "
        "merged episode named by a source, whatever part of it is served (what a turn-level scorer would count).",
        "",
        *halves_table(
            result,
            budgets=budgets,
            metrics=(("strict", "recall_all_strict"), ("episode cited", "recall_all_episode")),
        ),
        "",
        "## Per category",
        *category_tables(result, budgets=budgets),
        "",
        "## How it was measured",
        "",
        "- Built by `evaluation.recall.build_long` from the same file, deterministically (the target size of each "
        "episode is drawn from a generator seeded by the session), written "
        "through the API (one episode per merged run, external_id `<sample_id>:S<session>:E<k>`, no role: the lines "
        "carry their speakers) and embedded with all-MiniLM-L6-v2.",
        "- What an item serves: its source's `span` ([start, end) in the episode's content) when the source "
        "has one; otherwise the item's text is looked up in the episode's content (today the router serves an "
        "episode clipped to its first 300 tokens with an ellipsis, so an item covers a prefix); a source whose "
        "item is not an excerpt of the episode (a fact, a summary) would count as the whole episode, and the "
        f"questions found that way are counted: {_fallbacks(result)}.",
        f"- {grounding_note(result)}",
        *([f"- {containment_note()}"] if any(r.get("answers") for r in result["results"]) else []),
        *(f"- {n}" for n in common),
        "- Baselines serve whole merged episodes, so what they cite they serve: a merged episode of 400-800 "
        "tokens takes most of a 1,000-token budget. all-MiniLM-L6-v2 reads at most 256 word pieces, so the "
        "stored vector of a merged episode (and the dense baseline's ranking) sees only its beginning.",
        "- Latency of short against long turns: `bench/eval_latency.py` (to be measured alone, on a machine "
        "nothing else is using; no figure is published here).",
    ]
    return "\n".join(lines) + "\n"


def _fallbacks(result: dict[str, Any]) -> str:
    rows = [r for r in result["results"] if r["method"] == "engram" and r["half"] == "all" and r["group"] == "overall"]
    return ", ".join(f"{r['found_by_fallback']} at {r['budget']}" for r in rows) or "none"


def updates_markdown(
    result: dict[str, Any], *, command: str, budgets: Sequence[int], options: dict[str, Any], common: Sequence[str]
) -> str:
    rows = {(r["method"], r["budget"], r["half"], r["group"]): r for r in result["results"]}
    methods = [m for m in METHODS if any(k[0] == m for k in rows)]
    halves = result["halves"]
    head = ["method", "budget"]
    for label in ("newer above older", "stale only"):
        head += [f"{label} ({halves[h]})" for h in HALVES]
    head += ["newer served (all)", "both served (all)", "grounded recall_all (all)", "plain recall_all (all)"]
    table = ["| " + " | ".join(head) + " |", "|---|---:|" + "---:|" * (len(head) - 2)]
    for m in methods:
        for b in budgets:
            if (m, b, "all", "overall") not in rows:
                continue
            cells = [method_label(m, result), "all" if m == "full" else str(b)]
            for key in ("newer_above_older", "stale_only"):
                cells += [_f(rows.get((m, b, h, "overall"), {}).get(key)) for h in HALVES]
            r = rows[(m, b, "all", "overall")]
            cells += [_f(r.get("newer_served")), _f(r.get("both_served")), _f(r.get(HEADLINE)), _f(r.get("recall_all"))]
            table.append("| " + " | ".join(cells) + " |")
            if m == "full":
                break
    attributes = sorted({k[3] for k in rows if k[3] != "overall"})
    per_attr = ["| method | budget | " + " | ".join(attributes) + " |", "|---|---:|" + "---:|" * len(attributes)]
    for m in methods:
        if m == "full":
            continue
        for b in budgets:
            vals = [rows.get((m, b, "all", a), {}).get("newer_above_older") for a in attributes]
            per_attr.append(f"| {method_label(m, result)} | {b} | " + " | ".join(_f(v) for v in vals) + " |")
    lines = [
        "# Knowledge updates: is the newer statement served, and above the older?",
        "",
        f"Produced by `{command}` on {timezone.now():%Y-%m-%d}.",
        "",
        f"{result['questions']} questions over the conversations generated by "
        f"`evaluation.knowledge_updates.generate(seed={options['seed']}, conversations="
        f"{options['conversations'] or 200})` ({result['units']} messages): in each, a user states something "
        "(city, employer, partner, diet, car, phone number, favourite band or food, a project's status, job "
        "title, email, gym) and sessions later says it changed, with ordinary requests between and after, and "
        "in half of them the same kind of thing said about someone else. Each question asks for the current "
        "value; its evidence is the newer statement, the older one is stale.",
        "",
        "- newer above older: the newer statement is served, and placed before the older one in the "
        "context when both are served (the issue's target: at least 0.90);",
        "- stale only: the older statement is served without the newer (target: 0);",
        "- both served: both in the context; newer served: the newer statement is in the context (these four "
        "take every source at its word);",
        "- grounded recall_all: the newer statement served by an item that restates it; plain: cited at all.",
        "",
        *ablation_section(
            result,
            budgets=budgets,
            metrics=(("newer above older", "newer_above_older"), ("stale only", "stale_only")),
        ),
        "## Each half and all",
        "",
        *table,
        "",
        "## newer above older per attribute (all)",
        "",
        *per_attr,
        "",
        "## How it was measured",
        "",
        "- The messages were written through the API (subject `upd-<n>`, one "
        "session per conversation session, role user or assistant, external_id `<session>:t<k>`) and embedded "
        "with all-MiniLM-L6-v2.",
        "- Place in the context: where an item's line starts in the returned prompt (the router renders each "
        "section in time order); for the baselines, their packing order (best first; the recent window oldest "
        "first). An item that cites both statements places them together, which does not count as above.",
        f"- {grounding_note(result)}",
        *(f"- {n}" for n in common),
    ]
    return "\n".join(lines) + "\n"


def techchat_markdown(
    result: dict[str, Any], *, command: str, budgets: Sequence[int], options: dict[str, Any], common: Sequence[str]
) -> str:
    rows = {(r["method"], r["budget"], r["half"], r["group"]): r for r in result["results"]}
    kinds = sorted({k[3] for k in rows if k[3] != "overall"})
    per_kind = ["| method | budget | " + " | ".join(kinds) + " |", "|---|---:|" + "---:|" * len(kinds)]
    for m in [m for m in METHODS if m != "full" and any(k[0] == m for k in rows)]:
        for b in budgets:
            cells = [
                f"{_f(rows.get((m, b, 'all', k), {}).get(HEADLINE))} / {_f(rows.get((m, b, 'all', k), {}).get('recall_all'))}"
                for k in kinds
            ]
            per_kind.append(f"| {method_label(m, result)} | {b} | " + " | ".join(cells) + " |")
    seed = options["seed"] if options["seed_given"] else techchat.DEFAULT_SEED
    count = options["conversations"] or techchat.DEFAULT_CONVERSATIONS
    lines = [
        "# Technical user-assistant conversations: evidence recall of the context, by halves",
        "",
        f"Produced by `{command}` on {timezone.now():%Y-%m-%d}.",
        "",
        f"{result['questions']} questions over {count} conversations generated by "
        f"`evaluation.techchat.generate(seed={seed}, conversations={count})` ({result['units']} turns of "
        f"{result['unit_tokens_mean']:.0f} tokens on average, {result['full_replay_tokens_mean']:.0f} tokens "
        "per conversation): a user asks for programming help over many sessions, turns of code, tracebacks, "
        "log lines and lists drawn from the installed standard library and packages (source, docstrings, "
        "README text, read at generation time); statements about the user (stack and versions, deadlines, "
        "preferences, people, employer) are planted in the user's turns, two of them updated sessions later "
        "with a distractor between. A question's evidence is the turn that holds its statement; an update's "
        "older statement is stale. Two more questions per conversation need one statement from each of 4 to 6 "
        "sessions (putting events in order, how a number evolved, a count of events: "
        "evaluation.techchat.STORYLINES); they are reported apart (kind `multi-session`), never in the overall "
        "figures.",
        "",
        *ablation_section(result, budgets=budgets),
        *ablation_section(
            result,
            budgets=budgets,
            metrics=(("newer above older", "newer_above_older"), ("stale only", "stale_only")),
            group=techchat.UPDATE,
        ),
        "## Overall, each half and all",
        "",
        *halves_table(result, budgets=budgets, metrics=OVERALL_METRICS),
        "",
        "## grounded / plain recall_all per kind of statement (all)",
        "",
        *per_kind,
        "",
        "## How it was measured",
        "",
        f"- The set's digest is `{result['set_digest']}` (evaluation.techchat.digest): the same digest, "
        "the same conversations and questions. The text comes from the installed files; this run read them from:",
        "",
        f"  <details><summary>the interpreter and the distributions read</summary>{result['provenance']}</details>",
        "",
        "- The turns were written through the API (subject `tech-<nn>`, one session per generated session, role "
        "user or assistant, external_id `<session>:t<k>`).",
        f"- {grounding_note(result)}",
        *(f"- {n}" for n in common),
    ]
    return "\n".join(lines) + "\n"


def _f(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def latency_markdown(result: dict[str, Any], *, command: str) -> str:
    lines = [
        "# Context latency: short-turn against long-turn LoCoMo",
        "",
        f"Produced by `{command}` on {timezone.now():%Y-%m-%d}. To be measured alone: these figures mean "
        "something only on a machine that nothing else is using.",
        "",
        "The same questions asked of the LoCoMo tenant (one episode per turn) and of the long-turn tenant "
        "(turns merged into episodes of 400-800 tokens), in process through the whole API stack, the cases "
        "and budgets taking turns request by request. CPU per request: this process (all its threads, "
        "median) and PostgreSQL (all its processes, mean), read as bench/context_breakdown.py reads them.",
        "",
        "| data | budget | requests | p50 ms | p95 ms | CPU this process ms | CPU PostgreSQL ms | tokens |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["results"]:
        lines.append(
            f"| {r['case']} | {r['budget']} | {r['n']} | {_n(r['p50_ms'])} | {_n(r['p95_ms'])} | "
            f"{_n(r['cpu_process_ms'])} | {_n(r['cpu_postgres_ms'])} | {_n(r['tokens_mean'], 0)} |"
        )
    by = {(r["case"], r["budget"]): r for r in result["results"]}
    lines.append("")
    for budget in result["budgets"]:
        short, long_ = by.get(("short turns", budget)), by.get(("long turns", budget))
        if short and long_ and short["p95_ms"]:
            lines.append(f"- At {budget} tokens, long-turn p95 is {long_['p95_ms'] / short['p95_ms']:.2f}x short-turn "
                         "p95 (target: at most 1.2x).")  # fmt: skip
    return "\n".join(lines) + "\n"


def _n(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"
