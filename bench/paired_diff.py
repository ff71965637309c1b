"""Two memory_eval runs compared question by question (evaluation.paired): per budget and half (LoCoMo
conversations 0-4, 5-9, all), grounded and plain recall_all and answer containment of each side, their
paired difference and its 95% bootstrap interval, and whether side A holds against side B (at least B
less the interval).

    .venv/bin/python bench/paired_diff.py .data/packer/base.json .data/packer/base.json \
        --method-b engram-episodic --label-a "all layers" --label-b "episodic only"
    .venv/bin/python bench/paired_diff.py .data/packer/off_swap.json .data/packer/base.json \
        --label-a "swap off" --label-b "all parts"

The JSON files are those `bench/locomo.py --json` (memory_eval) writes; each holds per-question scores.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import django_ready  # noqa: E402

django_ready()  # evaluation.paired reads the scorer, which imports the project's models
from evaluation.paired import compare, markdown  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="side A's memory_eval JSON")
    parser.add_argument("b", help="side B's memory_eval JSON")
    parser.add_argument("--method-a", default="engram")
    parser.add_argument("--method-b", default="engram")
    parser.add_argument("--label-a", default="A")
    parser.add_argument("--label-b", default="B")
    parser.add_argument("--out", default="", help="also write the table here")
    args = parser.parse_args()
    a = json.loads(Path(args.a).read_text())
    b = json.loads(Path(args.b).read_text())
    rows = compare(a, b, method_a=args.method_a, method_b=args.method_b)
    table = markdown(rows, label_a=args.label_a, label_b=args.label_b, halves=a.get("halves", {}))
    sys.stdout.write(table)
    if args.out:
        Path(args.out).write_text(table)


if __name__ == "__main__":
    main()
