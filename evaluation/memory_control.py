"""The learned value judged on answers (issue 41): a simulated agent's feedback on one half of a set's
conversations, the tenant's value model trained from it by the job users run, then the other half asked
without feedback and measured against the formula.

What is here is the scoring and the report; `manage.py memory_control_eval` asks the API.

- The simulated agent marks used the served items that hold a question's evidence by the grounded rule
  (evaluation.grounding): an item one of whose sources is an evidence turn, and which is a verbatim
  excerpt of it or has a line restating it. No other item is marked.
- Each question of the held-out half is scored once per policy and budget, as memory_eval scores it
  (evaluation.recall.Tally): grounded recall_all, plain recall_all, answer containment; and the used
  items the agent would have marked (what the off-policy estimate predicts).
- The difference model - formula is paired by question; its 95% interval is a percentile bootstrap over
  questions (2,000 draws, seeded).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.grounding import content_terms
from evaluation.recall import Evidence, Question, ServedItem, Tally, grounded_found, resolve_sources
from router.learning import switch_estimate
from router.rendering import LINE_PREFIX

LAYERS = ("procedural", "semantic", "episodic")
BOOTSTRAP = 2000
METRICS = (
    ("grounded recall_all", "grounded"),
    ("plain recall_all", "plain"),
    ("answer containment", "contained"),
    ("used items per context", "used"),
)


def answer_items(data: Mapping[str, Any]) -> list[tuple[str, ServedItem]]:
    """The items of a POST /v1/context answer with their ids, placed as memory_eval places them."""
    prompt = str(data["prompt"]) + "\n"
    out: list[tuple[str, ServedItem]] = []
    for layer in LAYERS:
        for item in data["layers"][layer]:
            at = prompt.find(f"{LINE_PREFIX}{item['text']}\n")
            sources = tuple(
                (str(s["external_id"]), (int(s["span"][0]), int(s["span"][1])) if s.get("span") else None)
                for s in item["sources"]
                if s.get("external_id")
            )
            out.append((str(item["id"]), ServedItem(item["text"], at if at >= 0 else len(prompt) + len(out), sources)))
    return out


def used_item_ids(
    question: Question,
    items: Sequence[tuple[str, ServedItem]],
    contents: Mapping[str, str],
    turn_terms: Callable[[Evidence], frozenset[str]],
) -> list[str]:
    """The served items a simulated agent marks used: those that hold some of the question's evidence by
    the grounded rule."""
    used = []
    for item_id, item in items:
        sources = resolve_sources([item], contents)
        if any(grounded_found(e, sources, turn_terms(e)).found for e in question.evidence):
            used.append(item_id)
    return used


@dataclass(frozen=True)
class Outcome:
    """One question asked once: found in full (grounded, plain), answer contained (None: not scored),
    items the agent would mark used, tokens served."""

    grounded: bool
    plain: bool
    contained: bool | None
    used: int
    tokens: int


def score(
    question: Question,
    data: Mapping[str, Any],
    contents: Mapping[str, str],
    turn_terms: Callable[[Evidence], frozenset[str]],
) -> tuple[Outcome, list[str]]:
    """How one answer scores, as memory_eval scores it, and the items the agent would mark used."""
    items = answer_items(data)
    served = resolve_sources([item for _, item in items], contents)
    tally = Tally()
    tally.add(
        question,
        served,
        int(data["tokens"]["total"]),
        None,
        turn_terms=turn_terms,
        prompt_terms=content_terms(str(data["prompt"])) if question.answer else None,
    )
    used = used_item_ids(question, items, contents, turn_terms)
    outcome = Outcome(
        grounded=tally.grounded_all == 1,
        plain=tally.all == 1,
        contained=bool(tally.contained) if tally.answers else None,
        used=len(used),
        tokens=int(data["tokens"]["total"]),
    )
    return outcome, used


def _value(outcome: Outcome, key: str) -> float | None:
    value = getattr(outcome, key)
    return None if value is None else float(value)


@dataclass(frozen=True)
class Paired:
    n: int
    model: float
    formula: float
    difference: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float | int]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def paired(model: Sequence[Outcome], formula: Sequence[Outcome], key: str, *, seed: int = 0) -> Paired | None:
    """Mean of `key` under each policy over the questions both scored, and the paired difference's 95%
    bootstrap interval."""
    pairs = [
        (m, f)
        for m, f in ((_value(a, key), _value(b, key)) for a, b in zip(model, formula, strict=True))
        if m is not None and f is not None
    ]
    if not pairs:
        return None
    return paired_arrays(np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]), seed=seed)


def paired_arrays(m: np.ndarray, f: np.ndarray, *, seed: int = 0) -> Paired:
    """The means of two scores of the same questions, and their difference's 95% percentile bootstrap
    interval over the questions (BOOTSTRAP draws, seeded)."""
    d = m - f
    rng = np.random.default_rng(seed)
    draws = d[rng.integers(0, len(d), size=(BOOTSTRAP, len(d)))].mean(axis=1)
    return Paired(
        n=len(d),
        model=float(m.mean()),
        formula=float(f.mean()),
        difference=float(d.mean()),
        low=float(np.percentile(draws, 2.5)),
        high=float(np.percentile(draws, 97.5)),
    )


@dataclass
class HalfRun:
    """One direction: feedback on `trained_on`, measured on `measured_on`."""

    trained_on: str
    measured_on: str
    feedback_contexts: int = 0
    feedback_used: int = 0
    feedback_questions: int = 0
    job: str = ""
    model: dict[str, Any] = field(default_factory=dict)
    # With a trial: the model the first part's feedback trained (`model` is then what the job left after
    # the rest of the half was asked under the trial), and the rest's questions, contexts, used items.
    first_model: dict[str, Any] = field(default_factory=dict)
    trial_questions: int = 0
    trial_contexts: int = 0
    trial_used: int = 0
    trial_job: str = ""
    # The policy measured as "model": "served" (it earned the switch), "forced", or "none" (no model).
    mode: str = "none"
    # (policy, budget) -> one Outcome per question of the measured half, in order.
    outcomes: dict[tuple[str, int], list[Outcome]] = field(default_factory=dict)

    def comparison(self, budget: int, key: str) -> Paired | None:
        model, formula = self.outcomes.get(("model", budget)), self.outcomes.get(("formula", budget))
        if not model or not formula:
            return None
        return paired(model, formula, key)

    def as_dict(self) -> dict[str, Any]:
        budgets = sorted({b for _, b in self.outcomes})
        return {
            "trained_on": self.trained_on,
            "measured_on": self.measured_on,
            "feedback_contexts": self.feedback_contexts,
            "feedback_used": self.feedback_used,
            "feedback_questions": self.feedback_questions,
            "job": self.job,
            "model": self.model,
            "first_model": self.first_model,
            "trial_questions": self.trial_questions,
            "trial_contexts": self.trial_contexts,
            "trial_used": self.trial_used,
            "trial_job": self.trial_job,
            "mode": self.mode,
            "comparison": {
                str(b): {key: (c.as_dict() if (c := self.comparison(b, key)) else None) for _, key in METRICS}
                for b in budgets
            },
            # Per question, in order, so that two runs on the same questions can be paired
            # (bench/memory_control_diff.py).
            "outcomes": {
                f"{policy}@{budget}": [[o.grounded, o.plain, o.contained, o.used] for o in outcomes]
                for (policy, budget), outcomes in sorted(self.outcomes.items())
            },
        }


@dataclass(frozen=True)
class CurvePoint:
    """One checkpoint of the learning curve: after `contexts` contexts with feedback (from `questions`
    questions), the model the job trained (its estimate), and the next block's questions at the curve's
    budget under the formula and the model."""

    questions: int
    contexts: int
    used: int
    version: int | None
    state: str
    estimate: Mapping[str, Any]
    block: int
    formula: float
    model: float | None
    formula_plain: float
    model_plain: float | None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _f(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _estimate_cell(estimate: Mapping[str, Any]) -> str:
    if not estimate:
        return "–"
    return (
        f"{_f(estimate.get('model'))} vs {_f(estimate.get('formula'))} "
        f"({_f(estimate.get('difference'), sign=True)} [{_f(estimate.get('low'), sign=True)}, "
        f"{_f(estimate.get('high'), sign=True)}], {estimate.get('contexts')} contexts)"
    )


def _switch_cell(kind: str, read: Mapping[str, Any], estimate: Mapping[str, Any]) -> str:
    """The estimate the switch read; where that is the doubly robust one, inverse propensity's beside it."""
    if read is estimate:
        return _estimate_cell(estimate)
    return (
        _estimate_cell(read)[:-1] + f", {kind}; inverse propensity {_f(estimate.get('difference'), sign=True)} "
        f"[{_f(estimate.get('low'), sign=True)}, {_f(estimate.get('high'), sign=True)}])"
    )


def _trial_cell(trial: Mapping[str, Any]) -> str:
    """The trial's estimate, with the confidence sequence that decides and the inverse-propensity figure
    beside it, where the trial logged them."""
    if "sequence_low" not in trial:
        return _estimate_cell(trial)
    ips = trial.get("inverse_propensity") or {}
    return (
        f"{_f(trial.get('model'))} vs {_f(trial.get('formula'))} ({_f(trial.get('difference'), sign=True)} "
        f"[{_f(trial.get('low'), sign=True)}, {_f(trial.get('high'), sign=True)}], sequence "
        f"[{_f(trial.get('sequence_low'), sign=True)}, {_f(trial.get('sequence_high'), sign=True)}], "
        f"{trial.get('contexts')} contexts"
        + (
            f"; inverse propensity {_f(ips.get('difference'), sign=True)} [{_f(ips.get('low'), sign=True)}, "
            f"{_f(ips.get('high'), sign=True)}]"
            if ips
            else ""
        )
        + ")"
    )


def model_label(mode: str) -> str:
    return {"served": "learned (served)", "forced": "learned (forced)", "none": "learned (no model)"}[mode]


def run_table(run: HalfRun, budgets: Sequence[int]) -> list[str]:
    label = model_label(run.mode)
    lines = [
        f"| budget | metric | formula | {label} | difference [95% interval] | questions |",
        "|---:|---|---:|---:|---|---:|",
    ]
    for b in budgets:
        for name, key in METRICS:
            c = run.comparison(b, key)
            if c is None:
                continue
            digits = 2 if key == "used" else 3
            lines.append(
                f"| {b} | {name} | {_f(c.formula, digits)} | {_f(c.model, digits)} | "
                f"{_f(c.difference, digits, True)} [{_f(c.low, digits, True)}, {_f(c.high, digits, True)}] | {c.n} |"
            )
    return lines


def summary_table(runs: Sequence[HalfRun], budgets: Sequence[int]) -> list[str]:
    head = "| feedback on → measured on | model | estimate (before measuring) | trial estimate | " + " | ".join(
        f"Δ grounded @{b // 1000}K" for b in budgets
    )
    lines = [head + " | sign right |", "|---|---|---|---|" + "---|" * len(budgets) + "---|"]
    for run in runs:
        cells = []
        for b in budgets:
            c = run.comparison(b, "grounded")
            cells.append("–" if c is None else f"{c.difference:+.3f} [{c.low:+.3f}, {c.high:+.3f}]")
        est = run.model.get("estimate") or {}
        trial = run.model.get("trial") or {}
        # The trial's estimate decides where there was one, else the one the switch read: its sign is
        # what is checked.
        kind, read = switch_estimate(est) if est else ("", est)
        deciding = trial if "difference" in trial else read
        first = run.comparison(budgets[0], "grounded") if budgets else None
        right = "–"
        if deciding and first is not None:
            right = "yes" if np.sign(deciding.get("difference", 0.0)) == np.sign(first.difference) else "no"
        version = f"v{run.model['version']} ({run.model['state']})" if run.model else "none"
        trial_cell = _trial_cell(trial) if "difference" in trial else "–"
        lines.append(
            f"| {run.trained_on} → {run.measured_on} | {version}, measured {model_label(run.mode)} | "
            f"{_switch_cell(kind, read, est)} | {trial_cell} | " + " | ".join(cells) + f" | {right} |"
        )
    return lines


def curve_table(points: Sequence[CurvePoint]) -> list[str]:
    lines = [
        "| questions with feedback | contexts with feedback | used items | model | estimate (difference [95%]) | "
        "next block | formula grounded | model grounded | formula plain | model plain |",
        "|---:|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for p in points:
        est = p.estimate or {}
        est_cell = (
            f"{_f(est.get('difference'), sign=True)} [{_f(est.get('low'), sign=True)}, {_f(est.get('high'), sign=True)}]"
            if est
            else "–"
        )
        model = f"v{p.version} ({p.state})" if p.version is not None else p.state
        lines.append(
            f"| {p.questions} | {p.contexts} | {p.used} | {model} | {est_cell} | {p.block} | {_f(p.formula)} | "
            f"{_f(p.model)} | {_f(p.formula_plain)} | {_f(p.model_plain)} |"
        )
    return lines


def floor_sentence(points: Sequence[CurvePoint]) -> str:
    cleared = [p for p in points if p.estimate and float(p.estimate.get("low", -1.0)) > 0.0]
    if cleared:
        p = cleared[0]
        return (
            f"The estimate's interval first cleared 0 after {p.contexts} contexts with feedback "
            f"({p.questions} questions, {p.used} used items): model v{p.version}."
        )
    trained = [p for p in points if p.estimate]
    last = trained[-1] if trained else None
    if last is None:
        return "No model was trained on the data available: the thresholds were never met."
    return (
        f"The estimate's interval never cleared 0 on the data available: after {last.contexts} contexts with "
        f"feedback the estimate was {_estimate_cell(last.estimate)}. The floor is above this sample."
    )


def curve_chart(points: Sequence[CurvePoint], path: Path, *, budget: int, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7.5, 6.5), sharex=True, height_ratios=(3, 2))
    x = [p.contexts for p in points]
    top.plot(x, [p.formula for p in points], "o-", color="#888888", label="formula")
    model_x = [p.contexts for p in points if p.model is not None]
    top.plot(model_x, [p.model for p in points if p.model is not None], "o-", color="#1f77b4", label="learned value")
    top.set_ylabel(f"grounded recall_all @{budget} (next block)")
    top.set_ylim(0, 1)
    top.legend(loc="lower right")
    top.set_title(title, fontsize=10)
    est = [p for p in points if p.estimate]
    if est:
        ex = [p.contexts for p in est]
        diff = [float(p.estimate["difference"]) for p in est]
        low = [float(p.estimate["low"]) for p in est]
        high = [float(p.estimate["high"]) for p in est]
        bottom.fill_between(ex, low, high, color="#1f77b4", alpha=0.2, label="95% interval")
        bottom.plot(ex, diff, "o-", color="#1f77b4", label="estimate: model - formula")
    bottom.axhline(0.0, color="#444444", linewidth=0.8)
    bottom.set_ylabel("off-policy estimate\n(used items per context)")
    bottom.set_xlabel("contexts with feedback")
    bottom.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0
