"""Precision of the offline extractor on the technical set: every fact it extracts from the user's turns
of the generated conversations, labelled correct or wrong, with the rule and the labels checked in.

    .venv/bin/python bench/extraction_techchat.py                 # seed 29, 30 conversations
    .venv/bin/python bench/extraction_techchat.py --unlabelled    # list the facts no label covers yet

The set (evaluation.techchat) was not what the extractor was built on (LoCoMo and the support demo).
Each fact is extracted sentence by sentence from the user's turns, exactly as consolidation does
(consolidation.extractors.rules.extract_with_disclosures). Its label comes from
docs/benchmarks/extraction_sample_techchat.labels.json, written by hand: a label is given to a fact's
*shape* (its attribute and its statement with the planted value masked, from a sentence the generator
planted) or, for a fact from any other sentence (pasted code, README text, a request, a colleague's
tool), to the fact itself. The labelling rule is in docs/benchmarks/extraction_sample_techchat.md.
Writes that report and extraction_sample_techchat.jsonl (every fact with its sentence and label).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "docs" / "benchmarks"
LABELS = DOCS / "extraction_sample_techchat.labels.json"


def shape(statement: str, subject: str, planted_values: list[str]) -> str:
    """The statement with its subject and any planted value masked: one label serves every conversation."""
    out = statement.replace(subject, "<user>")
    for value in sorted(planted_values, key=len, reverse=True):
        out = out.replace(value, "<v>")
    # Dates the extractor resolves ("the week before 27 June 2025") differ per conversation.
    return re.sub(
        r"(?:\d{1,2} )?(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{4}",
        "<date>",
        out,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--conversations", type=int, default=30)
    parser.add_argument("--unlabelled", action="store_true", help="print the facts no label covers, and stop")
    parser.add_argument("--report", default=str(DOCS / "extraction_sample_techchat.md"))
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
    import django

    django.setup()
    from consolidation.extractors.rules import extract_with_disclosures, sentences
    from evaluation import techchat

    conversations = techchat.generate(seed=args.seed, conversations=args.conversations)
    values = sorted({v for t in techchat.TRAITS for v in t.values}, key=len, reverse=True)
    labels = json.loads(LABELS.read_text()) if LABELS.exists() else {"shapes": {}, "facts": {}}
    rows = []
    for conv in conversations:
        planted = {e.label for q in conv.questions for e in (*q.evidence, *q.stale)}
        for turn in conv.turns:
            if turn.speaker != "user":
                continue
            for sentence in sentences(turn.text):
                for fact in extract_with_disclosures(sentence, conv.sample_id, turn.when):
                    origin = "planted" if sentence in planted else "other"
                    key = (
                        f"{fact.attribute} | {shape(fact.statement, conv.sample_id, values)}"
                        if origin == "planted"
                        else f"{fact.attribute} | {fact.statement.replace(conv.sample_id, '<user>')}"
                    )
                    label = labels["shapes" if origin == "planted" else "facts"].get(key)
                    rows.append(
                        {
                            "subject": conv.sample_id,
                            "turn": turn.external_id,
                            "sentence": sentence,
                            "origin": origin,
                            "attribute": fact.attribute,
                            "value": fact.value,
                            "statement": fact.statement,
                            "key": key,
                            "label": label,
                        }
                    )
    missing = sorted({r["key"] for r in rows if r["label"] is None})
    if args.unlabelled or missing:
        for key in missing:
            example = next(r for r in rows if r["key"] == key)
            print(json.dumps({"key": key, "origin": example["origin"], "sentence": example["sentence"][:200]}))
        if missing:
            sys.exit(f"{len(missing)} fact shapes have no label in {LABELS.relative_to(ROOT)}")
        return
    command = "bench/extraction_techchat.py " + " ".join(sys.argv[1:])
    (DOCS / "extraction_sample_techchat.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    Path(args.report).write_text(report(rows, labels, command=command.strip(), digest=techchat.digest(conversations)))
    print(Path(args.report).read_text())


def report(rows: list[dict], labels: dict, *, command: str, digest: str) -> str:
    def precision(subset: list[dict]) -> str:
        if not subset:
            return "–"
        good = sum(r["label"]["correct"] for r in subset)
        return f"{good / len(subset):.3f} ({good}/{len(subset)})"

    by_origin = {o: [r for r in rows if r["origin"] == o] for o in ("planted", "other")}
    attributes = Counter(r["attribute"] for r in rows)
    wrong = Counter((r["label"]["why"], r["key"]) for r in rows if not r["label"]["correct"] or r["label"]["why"])
    lines = [
        "# Extractor precision on the technical set (hand-labelled)",
        "",
        f"Produced by `{command}`: every fact the offline extractor takes from the user's turns of the "
        f"technical set (evaluation.techchat, digest `{digest}`), labelled by hand.",
        "",
        "| facts | precision | from planted statements | from other sentences |",
        "|---:|---:|---:|---:|",
        f"| {len(rows)} | **{precision(rows)}** | {precision(by_origin['planted'])} | {precision(by_origin['other'])} |",
        "",
        "## The labelling rule",
        "",
        *(f"- {line}" for line in labels["rule"]),
        "",
        "## Attributes",
        "",
        "| attribute | facts |",
        "|---|---:|",
        *(f"| `{a}` | {n} |" for a, n in attributes.most_common()),
        "",
        "## Wrong facts, and right facts with a flaw (slot, grammar), by reason",
        "",
        "| reason | fact (shape) | count |",
        "|---|---|---:|",
        *(f"| {why} | `{key}` | {n} |" for (why, key), n in wrong.most_common()),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
