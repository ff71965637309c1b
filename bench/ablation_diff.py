"""Where a layer costs recall: the questions whose evidence the episodic-only context finds and the
all-layers context misses, and what the all-layers context served instead.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/locomo.py --db engram_eval_mine --budgets 1000,4000     # written once
    .venv/bin/python bench/ablation_diff.py --db engram_eval_mine --benchmark locomo --budgets 1000,4000

Asks every question of a tenant that memory_eval wrote (in the scratch database `--db`) twice, with all
layers and with episodic and working only, at each budget; prints per budget and half how many questions
each mode alone finds, grounded (an item restates the evidence turn, evaluation.grounding; the default)
or plain (`--plain`: every source at its word), and for the losses the items of the other layers that
were served (type, tokens, value, score parts, text) and the evidence lines that the episodic-only
context served. Writes the losses as JSON lines to `--out`.
Nothing is written to the database but the traces and the revoked read key.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locomo import DATASET, _with_db  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--benchmark", default="locomo", choices=("locomo", "locomo-long", "updates", "techchat"))
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--budgets", default="1000,4000")
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--out", default="/tmp/ablation_diff.jsonl")
    parser.add_argument("--plain", action="store_true", help="count every cited source, grounded or not")
    args = parser.parse_args()
    os.environ["DATABASE_URL"] = _with_db(os.environ["DATABASE_URL"], args.db)
    os.environ["DATABASE_OWNER_URL"] = _with_db(os.environ["DATABASE_OWNER_URL"], args.db)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    import django

    django.setup()
    from evaluation.management.commands.memory_eval import TENANTS, Command, _Asker, served_items
    from evaluation.recall import evidence_found, evidence_turn_terms, grounded_found, half_of, resolve_sources
    from tenants.models import Tenant

    options = {
        "dataset": args.dataset,
        "every": args.every,
        "questions": 0,
        "conversations": 0,
        "seed": args.seed if args.seed is not None else 18,
        "seed_given": args.seed is not None,
    }
    conversations = Command()._conversations(args.benchmark, options)
    tenant = Tenant.objects.get(slug=TENANTS[args.benchmark])
    budgets = [int(b) for b in args.budgets.split(",")]
    tally: Counter[tuple[int, str, str]] = Counter()
    with _Asker(tenant) as asker, open(args.out, "w") as out:
        for index, conv in enumerate(conversations):
            half = half_of(index, len(conversations))
            contents = conv.contents()
            for q in conv.questions:
                if "overall" not in q.groups:
                    continue
                for budget in budgets:
                    answers = {}
                    for mode, layers in (("all", None), ("episodic", ("episodic", "working"))):
                        body = asker.body(q, budget, layers)
                        answers[mode] = asker.client.post("/v1/context", body, format="json").json()
                    found = {}
                    for mode, a in answers.items():
                        served = resolve_sources(served_items(a), contents)
                        found[mode] = all(
                            evidence_found(e, served).found
                            if args.plain
                            else grounded_found(e, served, evidence_turn_terms(e, contents)).found
                            for e in q.evidence
                        )
                    tally[(budget, half, f"all={found['all']:d} episodic={found['episodic']:d}")] += 1
                    if found["episodic"] and not found["all"]:
                        others = [
                            {k: item[k] for k in ("type", "tokens", "value", "score_parts", "text")}
                            for layer in ("semantic", "procedural")
                            for item in answers["all"]["layers"][layer]
                        ]
                        wanted = {e.external_id for e in q.evidence}
                        evidence_lines = [
                            {k: item[k] for k in ("type", "tokens", "value", "score_parts", "text")}
                            for item in answers["episodic"]["layers"]["episodic"]
                            if wanted & {s.get("external_id") for s in item["sources"]}
                        ]
                        episodic_all = answers["all"]["layers"]["episodic"]
                        out.write(
                            json.dumps(
                                {
                                    "question": q.text,
                                    "budget": budget,
                                    "half": half,
                                    "evidence": sorted(wanted),
                                    "evidence_lines_episodic_only": evidence_lines,
                                    "other_layers_served": others,
                                    "other_layer_tokens": answers["all"]["tokens"].get("semantic", 0)
                                    + answers["all"]["tokens"].get("procedural", 0),
                                    "episodic_lines_all": len(episodic_all),
                                    "lowest_episodic_value_all": min((i["value"] for i in episodic_all), default=None),
                                }
                            )
                            + "\n"
                        )
            print(f"{conv.sample_id}: {len(conv.questions)} questions", file=sys.stderr)
    print(f"{'plain' if args.plain else 'grounded'} recall_all")
    print("| budget | half | outcome | questions |\n|---:|---|---|---:|")
    for (budget, half, outcome), n in sorted(tally.items()):
        print(f"| {budget} | {half} | {outcome} | {n} |")


if __name__ == "__main__":
    main()
