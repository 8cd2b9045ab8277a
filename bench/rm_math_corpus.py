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
  problems whose questions share the most words with it (an in-batch negative made hard);
- `val_boxed.jsonl`: the same test in the MATH style of worked solutions (LaTeX, `\\boxed{}`),
  from Minerva-math test problems (MIT courses, mostly physics and astronomy; not in the
  corpus): per problem its solution and 3 copies whose boxed answer is replaced by the boxed
  answer of another problem of the same kind (a number for a number).

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


def build(data: Path, out: Path, math_repeat: int = 1, seed: int = 0) -> dict[str, int]:
    """Write the corpus in a seeded random order; returns document counts per source.

    The sources are interleaved here because training reads the corpus through a shuffle
    buffer of 2,048 documents: written one source after the other, a run of a few thousand
    pairs would see only GSM8K. `math_repeat` writes each MATH-500 document that many times
    (MATH-500 is 495 documents against 7,473 from GSM8K).
    """
    if math_repeat < 1:
        raise ValueError("math_repeat must be >= 1")
    held_out = {
        json.loads(line)["question"].strip()
        for line in (data / "math" / "qwen25_math_cot_100_8samples.jsonl").open(encoding="utf-8")
    }
    counts = {"gsm8k_train": 0, "math500": 0, "math500_excluded_overlap": 0}
    texts = []
    for line in (data / "gsm8k" / "train.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        texts.append(row["question"].strip() + "\n\n" + _CALC.sub("", row["answer"]).strip())
        counts["gsm8k_train"] += 1
    for line in (data / "math" / "math500.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["problem"].strip() in held_out:
            counts["math500_excluded_overlap"] += 1
            continue
        texts.extend([row["problem"].strip() + "\n\n" + row["solution"].strip()] * math_repeat)
        counts["math500"] += 1
    random.Random(seed).shuffle(texts)
    with out.open("w", encoding="utf-8") as fh:
        for text in texts:
            fh.write(json.dumps({"text": text}) + "\n")
    counts["documents_written"] = len(texts)
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


def _boxed_span(solution: str) -> tuple[int, int] | None:
    """Start and end of the content of the only `\\boxed{...}` in `solution` (None unless one)."""
    spans = []
    start = solution.find("\\boxed{")
    while start >= 0:
        end, depth = start + len("\\boxed{"), 1
        while end < len(solution) and depth:
            depth += {"{": 1, "}": -1}.get(solution[end], 0)
            end += 1
        spans.append((start + len("\\boxed{"), end - 1))
        start = solution.find("\\boxed{", end)
    return spans[0] if len(spans) == 1 else None


def _minerva(data: Path, problems: int) -> list[tuple[str, str, tuple[int, int]]]:
    """(problem, solution, span of its boxed answer) of the first Minerva-math test problems
    with exactly one boxed answer."""
    rows = []
    for line in (data / "math" / "minerva_math.test.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        span = _boxed_span(row["solution"])
        if span is not None:
            rows.append((row["problem"].strip(), row["solution"].strip(), span))
        if len(rows) == problems:
            break
    return rows


def _is_number(answer: str) -> bool:
    return re.fullmatch(r"-?[\d.,]+(e-?\d+)?", answer.strip()) is not None


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
    boxed = []
    minerva = _minerva(data, problems)
    answers = [sol[a:b] for _, sol, (a, b) in minerva]
    for i, (question, solution, (a, b)) in enumerate(minerva):
        # Wrong final answers of the same kind (a number for a number), taken from other
        # problems: the solution is unchanged but for what its box states.
        others = {x for j, x in enumerate(answers) if j != i and x.strip() != answers[i].strip()}
        pool = sorted(x for x in others if _is_number(x) == _is_number(answers[i]))
        if len(pool) < VAL_NEGATIVES:  # few problems: any other answer
            pool = sorted(others)
        wrong = [solution[:a] + x + solution[b:] for x in rng.sample(pool, VAL_NEGATIVES)]
        boxed.append((question, [solution, *wrong], [True] + [False] * VAL_NEGATIVES))
    write("val_boxed.jsonl", boxed)
    return {
        "val_problems": len(rows),
        "val_pairs_per_file": len(rows) * VAL_NEGATIVES,
        "val_boxed_problems": len(boxed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rbs_math_corpus.jsonl"))
    parser.add_argument("--val-out", type=Path, default=None, help="also write validation files")
    parser.add_argument("--val-problems", type=int, default=200, help="GSM8K test problems")
    parser.add_argument(
        "--math-repeat", type=int, default=1, help="write each MATH-500 document N times"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the document order")
    args = parser.parse_args()
    counts = build(args.data, args.out, args.math_repeat, args.seed)
    if args.val_out is not None:
        counts.update(build_validation(args.data, args.val_out, args.val_problems))
    print(json.dumps({"out": str(args.out), **counts}))


if __name__ == "__main__":
    main()
