"""Reward-hacking audit of a GRPO run from its `completions.jsonl` (issue 18, item 5).

`grpo train --log-completions-every N` logs every completion of every N-th step with its
reward, its per-tool rewards and the strict verdict (`correct`, judged against the reference
after the fact: a run without a verifier never sees it). This prints, per window of logged
steps, what the policy was writing and what the reward paid for:

- `acc`: share of correct final answers; `len`: mean completion length (characters);
- `rep`: share of completions that repeat a line or a step (a sentence ending in `.`) of
  their own: padding that a reward model may pay for;
- `bad_step`: share with an arithmetic step `a op b = c` that is false; `mismatch`: share
  whose `<solution>` differs from the result of the last step (an answer the work does not
  support);
- `r|ok - r|bad`: mean reward of correct minus incorrect completions of the same prompt (the
  reward's signal about correctness, averaged over prompts that have both);
- `corr_len`: Pearson correlation of reward and length within prompts (does length pay?);
- `sd_in`: mean standard deviation of the reward within a prompt's group, what GRPO's
  advantages are made of (with `--scale-rewards` any spread, however small, becomes a unit
  advantage).

    .venv/bin/python bench/rbs_grpo_audit.py out/grpo/rm_only/completions.jsonl --tool rbs_minilm
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

STEP = re.compile(r"(-?\d+(?:\.\d+)?)\s*([-+*/x×])\s*(-?\d+(?:\.\d+)?)\s*=\s*(-?\d+(?:\.\d+)?)")
SOLUTION = re.compile(r"<solution>\s*(.*?)\s*</solution>", re.DOTALL)
OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "x": lambda a, b: a * b,
    "×": lambda a, b: a * b,
    "/": lambda a, b: a / b if b else None,
}


def steps(text: str) -> list[tuple[Fraction | None, Fraction]]:
    """(true result, written result) of every `a op b = c` in `text`."""
    out = []
    for a, op, b, c in STEP.findall(text):
        out.append((OPS[op](Fraction(a), Fraction(b)), Fraction(c)))
    return out


def repeats(text: str) -> bool:
    """Does the completion say the same line or step twice?"""
    units = [u.strip() for u in re.split(r"[\n]|(?<=\.)\s*", text) if len(u.strip()) > 2]
    return len(units) != len(set(units))


def mismatch(text: str) -> bool:
    """Is the stated solution not the result of the last step?"""
    found = steps(text)
    sol = SOLUTION.findall(text)
    if not found or not sol:
        return False
    try:
        return Fraction(sol[-1]) != found[-1][1]
    except (ValueError, ZeroDivisionError):
        return True


def _pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 3 or statistics.pstdev(x) == 0 or statistics.pstdev(y) == 0:
        return None
    return statistics.correlation(x, y)


def summarize(rows: Sequence[dict[str, Any]], tool: str | None) -> dict[str, float | None]:
    """The audit numbers of one window of logged completions."""

    def reward(r: dict[str, Any]) -> float:
        return float(r["rewards"][tool]) if tool else float(r["reward"])

    by_prompt: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_prompt[f"{r['step']}|{r['prompt']}"].append(r)
    gaps, corrs, spreads = [], [], []
    for group in by_prompt.values():
        spreads.append(statistics.pstdev(reward(r) for r in group))
        ok = [reward(r) for r in group if r["correct"]]
        bad = [reward(r) for r in group if not r["correct"]]
        if ok and bad:
            gaps.append(statistics.fmean(ok) - statistics.fmean(bad))
        c = _pearson([len(r["completion"]) for r in group], [reward(r) for r in group])
        if c is not None:
            corrs.append(c)
    n = len(rows)
    return {
        "n": n,
        "acc": sum(r["correct"] for r in rows) / n,
        "len": statistics.fmean(len(r["completion"]) for r in rows),
        "rep": sum(repeats(r["completion"]) for r in rows) / n,
        "bad_step": sum(any(t != w for t, w in steps(r["completion"])) for r in rows) / n,
        "mismatch": sum(mismatch(r["completion"]) for r in rows) / n,
        "reward": statistics.fmean(reward(r) for r in rows),
        "r|ok - r|bad": statistics.fmean(gaps) if gaps else None,
        "prompts_both": len(gaps),
        "corr_len": statistics.fmean(corrs) if corrs else None,
        "sd_in": statistics.fmean(spreads),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("completions", type=Path)
    parser.add_argument("--tool", help="audit this tool's reward (default: the total)")
    parser.add_argument("--window", type=int, default=50, help="steps per row")
    parser.add_argument("-o", "--output", type=Path, help="write the rows as JSON")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.completions.open(encoding="utf-8") if line.strip()]
    windows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        windows[(int(r["step"]) - 1) // args.window].append(r)
    table = []
    for w in sorted(windows):
        steps_in = sorted({int(r["step"]) for r in windows[w]})
        table.append({"steps": f"{steps_in[0]}-{steps_in[-1]}", **summarize(windows[w], args.tool)})
    cols = list(table[0])
    print(" | ".join(cols))
    for row in table:
        print(" | ".join(f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()))
    if args.output:
        args.output.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
