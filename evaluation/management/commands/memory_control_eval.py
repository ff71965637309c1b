"""The learned value against the formula on LoCoMo or the technical set, both directions, and its learning
curve (issue 41).

    manage.py memory_control_eval [--set locomo|techchat] [--dataset PATH] [--conversations N] [--tenant SLUG] [--reuse]
        [--budgets 1000,2000,4000] [--feedback-budgets 1000,2000,4000] [--exploration 0.2]
        [--trial-part 0.5] [--trial-share 0.2]
        [--curve-every 25] [--curve-budget 1000] [--curve-half first] [--no-curve | --curve-only]
        [--json out.json] [--report out.md] [--chart out.png] [--command-line "..."]

The set is written as memory_eval writes it (the real write path; --reuse asks an existing tenant).
Then, for each direction (feedback on the first half, measured on the second; then swapped):

1. The tenant's traces, feedback and value models are deleted as the database owner (the written
   memory is kept), exploration set to the given chance, learned_value on.
2. A simulated agent asks the first --trial-part of the feedback half's questions through POST
   /v1/context at each feedback budget and answers POST /v1/context/{trace_id}/feedback, marking used the
   served items that hold the question's evidence by the grounded rule (evaluation.memory_control).
3. The job users run, router.tasks.value_model_update, trains the next model and estimates it off-policy;
   a model not shown worse goes on trial (router.trial), with the tenant's trial share --trial-share.
4. The rest of the feedback half's questions asked the same way, with feedback: while the model is on
   trial, a share of them is served its context, interleaved with the formula's. Then the job again: it
   decides on the trial (serves, retires, or goes on), or, with no model on trial, trains the next one.
   The estimates (the off-policy one and the trial's) are recorded here before anything of the other half
   is asked. With --trial-part 0 (or 1), all the questions are asked before the one training, as before.
5. Exploration and trial off, every answerable question (categories 1-4) of the other half asked without
   feedback at each budget: with learned_value off (the formula) and with the model. When the model earned
   the switch it serves as the job left it ("served"); when it did not, the tenant's serving model is
   pointed at it for these requests only ("forced") and restored after: what the tenant is served is then
   the formula.

The learning curve: the curve half's questions in order, in blocks of --curve-every; each block first
asked at --curve-budget under the formula and under the newest model (forced where it has not earned the
switch), then asked with exploration and feedback, then the job runs. The tenant is reset at the end.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone
from rest_framework.test import APIClient

from evaluation.management.commands import memory_eval
from evaluation.memory_control import (
    CurvePoint,
    HalfRun,
    Outcome,
    curve_chart,
    curve_table,
    floor_sentence,
    mean,
    run_table,
    score,
    summary_table,
)
from evaluation.recall import Conversation, Question, half_label, half_of
from evaluation.write_path import backlogs_drain
from router.helper_threads import close_readers
from router.learning import logged_contexts
from router.models import ValueModel
from router.tasks import value_model_update
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

# The sets with conversations in halves and questions with evidence turns; the technical set is generated
# (evaluation.techchat, its default seed and size).
SETS = ("locomo", "techchat")
SET_NAMES = {"locomo": "LoCoMo", "techchat": "Technical set"}
THRESHOLDS = (
    "VALUE_MODEL_MIN_CONTEXTS",
    "VALUE_MODEL_MIN_USED",
    "VALUE_MODEL_MAX_CONTEXTS",
    "VALUE_MODEL_MIN_MEASURED",
    "VALUE_MODEL_MIN_TRIAL",
    "VALUE_MODEL_MAX_TRIAL",
)


class _Agent:
    """A read and write key of the tenant, and a client that asks for contexts and answers with feedback."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.issued = api_key_create(tenant=tenant, name="memory_control_eval", scopes=("read", "write"))
        self.client = APIClient()
        self.client.credentials(HTTP_AUTHORIZATION=f"Bearer {self.issued.raw}")

    def close(self) -> None:
        with tenant_scope(self.tenant):
            ApiKey.objects.filter(id=self.issued.api_key.id).update(revoked_at=timezone.now())

    def ask(self, q: Question, budget: int) -> dict[str, Any]:
        response = self.client.post("/v1/context", memory_eval._Asker.body(q, budget), format="json")
        if response.status_code != 200:
            raise CommandError(f"POST /v1/context answered {response.status_code}: {response.content[:300]!r}")
        data: dict[str, Any] = response.json()
        return data

    def feedback(self, trace_id: str, used: Sequence[str]) -> None:
        body = {"used_item_ids": list(used), "outcome": "success" if used else "unknown"}
        response = self.client.post(f"/v1/context/{trace_id}/feedback", body, format="json")
        if response.status_code != 200:
            raise CommandError(f"feedback answered {response.status_code}: {response.content[:300]!r}")


class _Half:
    """The conversations of one half, with what scoring needs."""

    def __init__(self, name: str, conversations: Sequence[Conversation]) -> None:
        self.name = name
        self.conversations = list(conversations)
        self.contents = {c.sample_id: c.contents() for c in conversations}
        # Per conversation, as memory_eval reads them: the same Evidence names a turn of each conversation.
        self.terms = {c.sample_id: c.evidence_terms() for c in conversations}

    @property
    def questions(self) -> list[Question]:
        return [q for conv in self.conversations for q in conv.questions]

    @property
    def answerable(self) -> list[Question]:
        return [q for q in self.questions if "overall" in q.groups]

    def score(self, q: Question, data: dict[str, Any]) -> tuple[Outcome, list[str]]:
        return score(q, data, self.contents[q.sample_id], self.terms[q.sample_id].__getitem__)


class Command(memory_eval.Command):
    help = "The learned value against the formula on a set, by halves both ways, and its learning curve."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--set", dest="set_name", choices=SETS, default="locomo")
        parser.add_argument("--dataset", default=memory_eval.DEFAULT_DATASET, help="LoCoMo's file")
        parser.add_argument("--tenant", default="", help="default: the set's evaluation tenant")
        parser.add_argument("--reuse", action="store_true")
        parser.add_argument("--conversations", type=int, default=0)
        parser.add_argument("--every", type=int, default=1)
        parser.add_argument("--budgets", default="1000,2000,4000")
        parser.add_argument("--feedback-budgets", default="1000,2000,4000")
        parser.add_argument("--exploration", type=float, default=0.2)
        parser.add_argument(
            "--trial-part", type=float, default=0.5, help="The feedback half's share asked before the first training"
        )
        parser.add_argument("--trial-share", type=float, default=0.2, help="The tenant's trial_share")
        parser.add_argument("--curve-every", type=int, default=25, help="Questions between retrainings")
        parser.add_argument("--curve-budget", type=int, default=1000)
        parser.add_argument("--curve-half", choices=("first", "second"), default="first")
        parser.add_argument("--no-curve", action="store_true")
        parser.add_argument("--curve-only", action="store_true", help="Only the learning curve, no directions")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--report", default="")
        parser.add_argument("--chart", default="")
        parser.add_argument("--command-line", default="")
        parser.add_argument(
            "--keep-logs", default="", help="A folder: each feedback half's logged contexts as JSON lines, for study"
        )
        parser.add_argument(
            "--keep-models",
            action="store_true",
            help="Leave the last direction's value models, traces and feedback in the tenant at the end (the tenant "
            "left on learned_value, exploration and trial off), for bench/pool_bound.py --value-model",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        options |= {"seed": 18, "seed_given": False, "questions": 0, "no_consolidation": False}
        set_name = options["set_name"]
        budgets = [int(b) for b in options["budgets"].split(",") if b.strip()]
        feedback_budgets = [int(b) for b in options["feedback_budgets"].split(",") if b.strip()]
        command = options["command_line"] or "manage.py memory_control_eval " + " ".join(
            shlex.quote(a) for a in sys.argv[2:]
        )
        conversations = self._conversations(set_name, options)
        if len(conversations) < 2:
            raise CommandError("Two halves need at least two conversations.")
        tenant = self._tenant(options["tenant"] or memory_eval.TENANTS[set_name], set_name, conversations, options)
        n = len(conversations)
        halves = {
            h: _Half(half_label(conversations, h), [c for i, c in enumerate(conversations) if half_of(i, n) == h])
            for h in ("first", "second")
        }
        self.tenant = tenant
        self.exploration = options["exploration"]
        self.trial_part = options["trial_part"]
        self.trial_share = options["trial_share"]
        self.keep_logs = Path(options["keep_logs"]) if options["keep_logs"] else None
        # Each feedback request's question and budget, by trace id: kept beside its logged context.
        self.asked: dict[str, tuple[str, int]] = {}
        agent = _Agent(tenant)
        runs: list[HalfRun] = []
        points: list[CurvePoint] = []
        try:
            for train, test in () if options["curve_only"] else (("first", "second"), ("second", "first")):
                self._reset()
                runs.append(self._direction(agent, halves[train], halves[test], budgets, feedback_budgets))
            if not options["no_curve"]:
                self._reset()
                points = self._curve(
                    agent, halves[options["curve_half"]], options["curve_every"], options["curve_budget"],
                    feedback_budgets,
                )  # fmt: skip
        finally:
            if not options["keep_models"]:
                self._reset()
            agent.close()
        result = {
            "benchmark": "memory-control",
            "set": set_name,
            "command": command,
            "conversations": [c.sample_id for c in conversations],
            "halves": {h: halves[h].name for h in halves},
            "questions": {h: len(halves[h].questions) for h in halves},
            "answerable": {h: len(halves[h].answerable) for h in halves},
            "budgets": budgets,
            "feedback_budgets": feedback_budgets,
            "exploration": self.exploration,
            "trial_part": self.trial_part,
            "trial_share": self.trial_share,
            "thresholds": {k: settings.ENGRAM[k] for k in THRESHOLDS},
            "write_path": self.write_report.as_dict(),
            "runs": [r.as_dict() for r in runs],
            "curve": [p.as_dict() for p in points],
            "curve_half": halves[options["curve_half"]].name,
            "curve_every": options["curve_every"],
            "curve_budget": options["curve_budget"],
            "chart": options["chart"],
        }
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=1, default=str))
        if points and options["chart"]:
            curve_chart(
                points, Path(options["chart"]), budget=options["curve_budget"],
                title=f"{SET_NAMES[set_name]} {result['curve_half']}: learned value against the formula, retrained every "
                f"{options['curve_every']} questions" + (f"\n({n}-conversation sample)" if n < 10 else ""),
            )  # fmt: skip
        report = markdown(result, runs, points, budgets)
        if options["report"]:
            Path(options["report"]).write_text(report)
        self.stdout.write(report)

    # --- the tenant's state ---------------------------------------------------------------------
    def _reset(self) -> None:
        """Delete the tenant's traces, feedback and value models as the database owner (the app's role
        may not delete them), and point it at no model: the written memory is kept."""
        import psycopg

        close_readers()
        owner = os.environ.get("DATABASE_OWNER_URL")
        if not owner:
            raise CommandError("DATABASE_OWNER_URL is needed to reset the tenant between runs.")
        with psycopg.connect(owner, autocommit=True) as conn:
            for table in ("router_contextfeedback", "router_contexttrace", "router_valuemodel"):
                conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", [self.tenant.id])  # noqa: S608 - our names
            conn.execute(
                "UPDATE tenants_tenant SET serving_value_model = NULL, trial_value_model = NULL WHERE id = %s",
                [self.tenant.id],
            )

    def _set(
        self, *, exploration: float | None = None, learned_value: bool | None = None, trial_share: float | None = None
    ) -> None:
        tenant = Tenant.objects.get(id=self.tenant.id)
        changes: dict[str, Any] = {}
        if exploration is not None:
            changes["exploration"] = exploration
        if learned_value is not None:
            changes["learned_value"] = learned_value
        if trial_share is not None:
            changes["trial_share"] = trial_share
        tenant.settings = {**tenant.settings, **changes}
        tenant.save(update_fields=["settings"])
        if tenant.keeps_sentence_vectors:  # what the worker's drain does within 30 s of the change
            backlogs_drain(tenant=tenant, consolidate=False)

    def _serving(self, model_id: Any) -> None:
        Tenant.objects.filter(id=self.tenant.id).update(serving_value_model=model_id)

    def _train(self) -> tuple[str, dict[str, Any]]:
        """The job users run, in process; the newest model as a dict (empty when none)."""
        close_readers()  # the traces' items are written after commit, by a writer thread
        said = str(value_model_update.apply(args=(str(self.tenant.id),)).get())
        with tenant_scope(self.tenant):
            row = ValueModel.objects.order_by("-version").first()
            model = (
                {
                    "id": str(row.id),
                    "version": row.version,
                    "state": row.state,
                    "estimate": row.estimate,
                    "trial": row.trial,
                    "trained_on": row.trained_on,
                    "note": row.note,
                    "features": len(row.features),
                }
                if row is not None
                else {}
            )
        return said, model

    def _keep_logs(self, path: Path) -> None:
        """The feedback logs as the training job reads them (router.learning.logged_contexts)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with tenant_scope(self.tenant):
            contexts = logged_contexts(tenant=self.tenant, limit=settings.ENGRAM["VALUE_MODEL_MAX_CONTEXTS"])
        with path.open("w") as out:
            for ctx in contexts:
                row = {
                    "trace_id": ctx.trace_id,
                    "policy": ctx.policy,
                    "rows": ctx.rows,
                    "served": ctx.served.tolist(),
                    "propensity": ctx.propensity.tolist(),
                    "used": ctx.used.tolist(),
                    "budget": ctx.budget,
                    "question": self.asked.get(ctx.trace_id, ("", 0))[0],
                    "request_budget": self.asked.get(ctx.trace_id, ("", 0))[1],
                }
                out.write(json.dumps(row, default=str) + "\n")
        self._say(f"kept {len(contexts)} logged contexts in {path}")

    # --- asking ----------------------------------------------------------------------------------
    def _feedback(
        self,
        agent: _Agent,
        half: _Half,
        questions: Sequence[Question],
        budgets: Sequence[int],
        trial_share: float = 0.0,
    ) -> tuple[int, int]:
        self._set(exploration=self.exploration, learned_value=True, trial_share=trial_share)
        contexts = used_total = 0
        for q in questions:
            for b in budgets:
                data = agent.ask(q, b)
                _, used = half.score(q, data)
                agent.feedback(str(data["trace_id"]), used)
                self.asked[str(data["trace_id"])] = (f"{q.sample_id}#{q.index}", b)
                contexts += 1
                used_total += len(used)
        return contexts, used_total

    def _measure(
        self, agent: _Agent, half: _Half, questions: Sequence[Question], budgets: Sequence[int], model: dict[str, Any]
    ) -> tuple[dict[tuple[str, int], list[Outcome]], str]:
        """Each question at each budget under the formula, then under the model (see the docstring)."""
        out: dict[tuple[str, int], list[Outcome]] = {}
        self._set(exploration=0.0, learned_value=False, trial_share=0.0)
        for b in budgets:
            out[("formula", b)] = [half.score(q, agent.ask(q, b))[0] for q in questions]
        if not model:
            return out, "none"
        before = Tenant.objects.get(id=self.tenant.id).serving_value_model
        mode = "served" if model["state"] == "serving" else "forced"
        self._set(learned_value=True)
        if mode == "forced":
            self._serving(model["id"])
        try:
            for b in budgets:
                out[("model", b)] = [half.score(q, agent.ask(q, b))[0] for q in questions]
        finally:
            self._serving(before)
        return out, mode

    def _direction(
        self, agent: _Agent, train: _Half, test: _Half, budgets: Sequence[int], feedback_budgets: Sequence[int]
    ) -> HalfRun:
        run = HalfRun(trained_on=train.name, measured_on=test.name)
        questions = train.questions
        cut = math.ceil(self.trial_part * len(questions)) if 0 < self.trial_part < 1 else len(questions)
        first, rest = questions[:cut], questions[cut:]
        self._say(f"feedback on {train.name}: {len(first)} questions at {list(feedback_budgets)}")
        run.feedback_contexts, run.feedback_used = self._feedback(
            agent, train, first, feedback_budgets, trial_share=self.trial_share
        )
        run.feedback_questions = len(first)
        run.job, run.model = self._train()
        if rest:
            run.first_model = dict(run.model)
            self._say(f"job: {run.job}; then {len(rest)} questions with feedback, trial share {self.trial_share}")
            run.trial_contexts, run.trial_used = self._feedback(
                agent, train, rest, feedback_budgets, trial_share=self.trial_share
            )
            run.trial_questions = len(rest)
            run.trial_job, run.model = self._train()
        if self.keep_logs is not None:
            self._keep_logs(self.keep_logs / f"{train.name}.jsonl")
        # Recorded before anything of the other half is asked.
        self._say(
            f"job: {run.trial_job or run.job}; estimate before measuring: {run.model.get('estimate')}; "
            f"trial estimate: {run.model.get('trial') or '-'}"
        )
        run.outcomes, run.mode = self._measure(agent, test, test.answerable, budgets, run.model)
        for b in budgets:
            c = run.comparison(b, "grounded")
            if c is not None:
                self._say(f"{train.name} -> {test.name} @{b}: {c.as_dict()}")
        return run

    def _curve(
        self, agent: _Agent, half: _Half, every: int, budget: int, feedback_budgets: Sequence[int]
    ) -> list[CurvePoint]:
        questions = half.questions
        points: list[CurvePoint] = []
        model: dict[str, Any] = {}
        contexts = used = 0
        for start in range(0, len(questions), every):
            block = questions[start : start + every]
            asked = [q for q in block if "overall" in q.groups]
            if not asked:
                # Nothing answerable to measure in this block: its feedback still counts.
                c, u = self._feedback(agent, half, block, feedback_budgets)
                contexts, used = contexts + c, used + u
                model = self._train()[1] or model
                continue
            outcomes, _ = self._measure(agent, half, asked, [budget], model)
            formula = outcomes[("formula", budget)]
            learned = outcomes.get(("model", budget))
            points.append(
                CurvePoint(
                    questions=start,
                    contexts=contexts,
                    used=used,
                    version=model.get("version"),
                    state=model.get("state", "no model"),
                    estimate=model.get("estimate") or {},
                    block=len(asked),
                    formula=mean([float(o.grounded) for o in formula]),
                    model=mean([float(o.grounded) for o in learned]) if learned else None,
                    formula_plain=mean([float(o.plain) for o in formula]),
                    model_plain=mean([float(o.plain) for o in learned]) if learned else None,
                )
            )
            self._say(f"curve: {points[-1].as_dict()}")
            c, u = self._feedback(agent, half, block, feedback_budgets)
            contexts, used = contexts + c, used + u
            _, trained = self._train()
            model = trained or model
        return points

    def _say(self, message: str) -> None:
        self.stderr.write(message)


def markdown(
    result: dict[str, Any], runs: Sequence[HalfRun], points: Sequence[CurvePoint], budgets: Sequence[int]
) -> str:
    thresholds = result["thresholds"]
    set_name = SET_NAMES[result.get("set", "locomo")]
    sample = result.get("set", "locomo") == "locomo" and len(result["conversations"]) < 10
    lines = [
        f"# Memory control on {set_name}: the learned value against the formula, judged on answers",
        "",
        f"Produced by `{result['command']}` on {timezone.now():%Y-%m-%d}.",
        "",
    ]
    if sample:
        lines += [
            f"**A {len(result['conversations'])}-conversation sample** (LoCoMo {', '.join(result['conversations'])}; "
            f"halves: first = {result['halves']['first']} ({result['questions']['first']} questions), second = "
            f"{result['halves']['second']} ({result['questions']['second']} questions)), run on a shared machine "
            "while the code was developed. The full set (halves 0-4 / 5-9) is the same command without "
            "`--conversations` on a quiet machine.",
            "",
        ]
    lines += [
        memory_eval.write_path_note({"write_path": result["write_path"]}),
        "",
        "## Both directions",
        "",
        "Feedback on one half, the model trained by the job users run (`router.tasks.value_model_update`), its "
        "off-policy estimate (used items per context, model against formula, on the newest 30% of the feedback "
        "contexts, which it was not trained on) recorded before the other half was asked. "
        + (
            f"The model was trained on the first {result['trial_part']:.0%} of the half's questions; the rest "
            f"were asked with feedback while a model not shown worse was on trial (router.trial: the model's "
            f"context served on a share {result['trial_share']} of the requests, interleaved with the formula's, "
            "every candidate logged with both policies' chances), and the same job then decided on the trial; "
            "trial estimate: used items per context on the trial's contexts, model against formula, doubly "
            "robust, with one look's 95% interval and the confidence sequence the job decides on (valid however "
            "often it looks), and the inverse-propensity figure beside it. "
            if 0 < result["trial_part"] < 1
            else ""
        )
        + "Δ grounded: the paired difference model - formula in grounded recall_all on the other half, with its "
        "95% bootstrap interval over questions. Sign right: the deciding estimate's difference (the trial's "
        "where there was one) and the measured difference at the first budget have the same sign.",
        "",
        *summary_table(runs, budgets),
        "",
    ]
    for run in runs:
        lines += [
            f"### Feedback on {run.trained_on}, measured on {run.measured_on}",
            "",
            f"{run.feedback_questions} questions asked at {', '.join(map(str, result['feedback_budgets']))} tokens "
            f"with exploration {result['exploration']}: {run.feedback_contexts} contexts with feedback, "
            f"{run.feedback_used} items marked used. The job said: `{run.job}`.",
            "",
        ]
        if run.trial_questions:
            first = run.first_model
            trial = run.model.get("trial") or {}
            lines += [
                (
                    f"It trained v{first['version']} ({first['state']}: {first['note']}). "
                    if first
                    else "It trained no model. "
                )
                + f"Then the other {run.trial_questions} questions with feedback: {run.trial_contexts} contexts, "
                f"{run.trial_used} items marked used"
                + (
                    f", {trial.get('served_model', 0)} of the {trial.get('contexts')} trial contexts with feedback "
                    "served the model's context"
                    if trial.get("contexts")
                    else ""
                )
                + f". The job then said: `{run.trial_job}`.",
                "",
            ]
        if run.model:
            lines += [
                f"Model v{run.model['version']}, {run.model['state']}, {run.model['features']} features, trained on "
                f"{run.model['trained_on'].get('contexts')} contexts ({run.model['trained_on'].get('served_items')} "
                f"served items, {run.model['trained_on'].get('used_items')} used): {run.model['note']}.",
                "",
            ]
        if run.mode == "forced":
            lines += [
                "The model did not earn the switch, so the formula is what the tenant would be served; the "
                "**forced** column is what the model would have done had it served anyway.",
                "",
            ]
        lines += [*run_table(run, budgets), ""]
    if points:
        lines += [
            f"## Learning curve ({result['curve_half']})",
            "",
            f"The half's questions in order, in blocks of {result['curve_every']}: each block asked first at "
            f"{result['curve_budget']} tokens without feedback under the formula and under the newest model "
            "(served if it earned the switch, else forced), then asked with exploration and feedback at "
            f"{', '.join(map(str, result['feedback_budgets']))} tokens, then the job retrains. So every block is "
            "measured by a model that never saw it.",
            "",
            f"![learning curve]({Path(result['chart']).name if result.get('chart') else 'memory_control.png'})",
            "",
            *curve_table(points),
            "",
            f"Data-size floor: {floor_sentence(points)}",
            "",
        ]
    lines += [
        "## How it was measured",
        "",
        "- The simulated agent marks used exactly the served items that hold some of the question's evidence "
        "by the grounded rule (a verbatim excerpt of an evidence turn, or a line restating it: "
        "evaluation/grounding.py), through `POST /v1/context/{trace_id}/feedback`; every question of the half, "
        "adversarial ones included, at each feedback budget.",
        "- Measured: the answerable questions of the other half (those of the overall figure: LoCoMo's categories "
        "1-4; the technical set's questions but those over many sessions), exploration off; the formula "
        "with the tenant's `learned_value` off, the model with it on. Scored as `manage.py memory_eval` scores "
        "(evaluation.recall.Tally): grounded and plain recall_all, answer containment, and the used items "
        "the agent would have marked (what the estimate predicts).",
        "- One tenant; between directions its traces, feedback and value models were deleted as the database "
        "owner (the written memory kept), so each direction starts with no model and no logs.",
        "- Thresholds of settings.ENGRAM lowered for the bench by environment variables: "
        + ", ".join(f"`ENGRAM_{k}={v}`" for k, v in thresholds.items())
        + " (defaults 200 / 50 / 5000 / 50 / 200 / 2000).",
    ]
    return "\n".join(lines) + "\n"
