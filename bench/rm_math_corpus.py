"""Build the math corpus of the RBS acceptance run: plain text, no labels.

Documents: every GSM8K train problem followed by its worked solution (calculator annotations
`<<48/2=24>>` removed: they are not prose), and every MATH-500 problem followed by its
solution, except the MATH-500 problems that also appear in the evaluation file
`math/qwen25_math_cot_100_8samples.jsonl` (their solutions would leak into the math-pair
and best-of-8 evaluation). Output: JSONL with one `text` field.

    .venv/bin/python bench/rm_math_corpus.py --out /tmp/rbs_math_corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
_CALC = re.compile(r"<<[^<>]*>>")


def build(data: Path, out: Path) -> dict[str, int]:
    """Write the corpus; returns document counts per source and the excluded overlap."""
    held_out = {
        json.loads(line)["question"].strip()
        for line in (data / "math" / "qwen25_math_cot_100_8samples.jsonl").open(encoding="utf-8")
    }
    counts = {"gsm8k_train": 0, "math500": 0, "math500_excluded_overlap": 0}
    with out.open("w", encoding="utf-8") as fh:
        for line in (data / "gsm8k" / "train.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            text = row["question"].strip() + "\n\n" + _CALC.sub("", row["answer"]).strip()
            fh.write(json.dumps({"text": text}) + "\n")
            counts["gsm8k_train"] += 1
        for line in (data / "math" / "math500.jsonl").open(encoding="utf-8"):
            row = json.loads(line)
            if row["problem"].strip() in held_out:
                counts["math500_excluded_overlap"] += 1
                continue
            fh.write(
                json.dumps({"text": row["problem"].strip() + "\n\n" + row["solution"].strip()})
                + "\n"
            )
            counts["math500"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rbs_math_corpus.jsonl"))
    args = parser.parse_args()
    print(json.dumps({"out": str(args.out), **build(args.data, args.out)}))


if __name__ == "__main__":
    main()
