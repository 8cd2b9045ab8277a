"""Build the math corpus of the RBS acceptance run: plain text, no labels.

Documents: every GSM8K train problem followed by its worked solution (calculator annotations
`<<48/2=24>>` removed: they are not prose), and every MATH-500 problem followed by its
solution, except the MATH-500 problems that also appear in the evaluation file
`math/qwen25_math_cot_100_8samples.jsonl` (their solutions would leak into the math-pair
and best-of-8 evaluation). Output: JSONL with one `text` field.

`--val-out DIR` also writes two validation files from GSM8K *test* (never trained on), in the
best-of-N format `rm eval` reads (`question, response[N], score[N]`), so a configuration can be
chosen without looking at the Qwen test pairs:

- `val_arith.jsonl`: per problem its true solution (correct) and 3 copies in which every
  occurrence of the final answer is replaced by a wrong number (incorrect: the last step's
  arithmetic and the stated answer are wrong, the rest is the same text), the nearest thing
  to "a correct and an incorrect response to one problem" that needs no model outputs;
- `val_neighbor.jsonl`: per problem its true solution and the solutions of the 3 other test
  problems whose questions share the most words with it (an in-batch negative made hard).

    .venv/bin/python bench/rm_math_corpus.py --out /tmp/rbs_math_corpus.jsonl --val-out /tmp/rbs_val
"""

from __future__ import annotations

import argparse
import json
import random
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


_WORD = re.compile(r"[a-z]+")
# Wrong answers are drawn from these edits of the true one (all differ from it for a >= 0).
_WRONG = (
    lambda a: a + 1,
    lambda a: a + 2,
    lambda a: a + 10,
    lambda a: 2 * a + 1,
    lambda a: a * 3 + 3,
)
VAL_NEGATIVES = 3


def _gsm8k_test(data: Path, problems: int) -> list[tuple[str, str, str]]:
    """(question, solution without calculator annotations, final answer) of the first problems
    of GSM8K test whose final answer is a non-negative integer."""
    rows = []
    for line in (data / "gsm8k" / "test.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        solution = _CALC.sub("", row["answer"]).strip()
        answer = solution.rsplit("####", 1)[-1].strip().replace(",", "")
        if answer.isdigit():
            rows.append((row["question"].strip(), solution, answer))
        if len(rows) == problems:
            break
    return rows


def _wrong_solution(solution: str, answer: str, wrong: int) -> str:
    """`solution` with every standalone occurrence of `answer` (1,234 or 1234) replaced."""
    pattern = re.compile(r"(?<![\d.,])" + r",?".join(answer) + r"(?![\d]|[.,]\d)")
    return pattern.sub(str(wrong), solution)


def build_validation(
    data: Path, out_dir: Path, problems: int = 200, seed: int = 0
) -> dict[str, int]:
    """Write `val_arith.jsonl` and `val_neighbor.jsonl` (see the module doc); returns counts."""
    rng = random.Random(seed)
    rows = _gsm8k_test(data, problems)
    out_dir.mkdir(parents=True, exist_ok=True)
    words = [set(_WORD.findall(q.lower())) for q, _, _ in rows]

    def write(name: str, items: list[tuple[str, list[str], list[bool]]]) -> None:
        with (out_dir / name).open("w", encoding="utf-8") as fh:
            for question, responses, correct in items:
                order = list(range(len(responses)))
                rng.shuffle(order)  # ties go to the first response: keep the true one anywhere
                fh.write(
                    json.dumps(
                        {
                            "question": question,
                            "response": [responses[i] for i in order],
                            "score": [correct[i] for i in order],
                        }
                    )
                    + "\n"
                )

    arith = []
    for question, solution, answer in rows:
        edits = rng.sample(_WRONG, VAL_NEGATIVES)
        wrong = [_wrong_solution(solution, answer, f(int(answer))) for f in edits]
        arith.append((question, [solution, *wrong], [True] + [False] * VAL_NEGATIVES))
    neighbor = []
    for i, (question, solution, _) in enumerate(rows):
        others = sorted(
            (j for j in range(len(rows)) if j != i),
            key=lambda j: (-len(words[i] & words[j]) / max(1, len(words[i] | words[j])), j),
        )[:VAL_NEGATIVES]
        neighbor.append(
            (question, [solution, *(rows[j][1] for j in others)], [True] + [False] * VAL_NEGATIVES)
        )
    write("val_arith.jsonl", arith)
    write("val_neighbor.jsonl", neighbor)
    return {"val_problems": len(rows), "val_pairs_per_file": len(rows) * VAL_NEGATIVES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rbs_math_corpus.jsonl"))
    parser.add_argument("--val-out", type=Path, default=None, help="also write validation files")
    parser.add_argument("--val-problems", type=int, default=200, help="GSM8K test problems")
    args = parser.parse_args()
    counts = build(args.data, args.out)
    if args.val_out is not None:
        counts.update(build_validation(args.data, args.val_out, args.val_problems))
    print(json.dumps({"out": str(args.out), **counts}))


if __name__ == "__main__":
    main()
