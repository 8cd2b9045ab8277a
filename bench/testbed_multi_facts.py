"""Does reward design matter on the multi-task testbed? How often its sampled answers are right
by answer style and by whether the steps were written, with 95% intervals.

Samples `--samples` completions (temperature 1, as GRPO does) for each of `--per-family`
held-out problems per family, reads each completion's style (the first style marker it holds,
`rl.styles`) and whether it wrote worked steps before its answer, and grades it with its
family's own rule. Prints accuracy per style, with and without steps, per family and overall
(percentile-bootstrap 95% CIs, `rl.stats`), and the shares of each style: what a reward that
favours a format or intermediate steps changes.

    .venv/bin/python bench/testbed_multi_facts.py --per-family 100 --samples 4 --json out/facts.json
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

STYLE_MARKERS = (
    ("tags", re.compile(r"<thinking>|<solution>")),
    ("think_answer", re.compile(r"<think>|<answer>")),
    ("boxed", re.compile(r"\\boxed")),
    ("answer_is", re.compile(r"the answer is", re.IGNORECASE)),
    ("final", re.compile(r"final answer", re.IGNORECASE)),
    ("hashes", re.compile(r"####")),
)
_MARK = re.compile(r"<solution>|<answer>|\\boxed|the answer is|final answer|####", re.IGNORECASE)


def style_of(text: str) -> str:
    """The first style whose marker the completion holds (`other` when none)."""
    for name, pattern in STYLE_MARKERS:
        if pattern.search(text):
            return name
    return "other"


def wrote_steps(text: str) -> bool:
    """Worked steps before the answer: an equation (`a+b=c`) or a comparison chain before the
    first answer mark, or anything in `<thinking>`/`<think>`."""
    mark = _MARK.search(text)
    head = text[: mark.start()] if mark else text
    head = re.sub(r"</?think(ing)?>", " ", head)
    return bool(re.search(r"\d\s*[-+*/<>:]\s*\d|=", head)) or len(head.split()) >= 3


def _ci(values: list[bool]) -> dict[str, float]:
    from rewardsmith.rl.stats import accuracy_ci

    return {**accuracy_ci(values).to_dict(), "n": len(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="testbed-multi")
    parser.add_argument("--per-family", type=int, default=100)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    import torch

    from rewardsmith.rl.answers import judge_answer
    from rewardsmith.rl.generation import generate
    from rewardsmith.rl.policies import PRESETS, load_policy
    from rewardsmith.rl.prompts import multitask_eval_tasks

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    policy = load_policy(args.policy)
    sft = PRESETS[args.policy].sft_problems if args.policy in PRESETS else 60_000
    tasks = multitask_eval_tasks(args.per_family, 0, sft)
    rows: list[dict[str, Any]] = []
    for i in range(0, len(tasks), 32):
        chunk = tasks[i : i + 32]
        rollout = generate(
            policy.model,
            policy.tokenizer,
            [policy.prompt_for(t.question) for t in chunk],
            num_return=args.samples,
            max_new_tokens=args.max_new_tokens,
        )
        for k, text in enumerate(rollout.texts):
            task = chunk[k // args.samples]
            rows.append(
                {
                    "family": task.family,
                    "style": style_of(text),
                    "steps": wrote_steps(text),
                    "correct": judge_answer(text, task.reference, "family", task.family).correct,
                }
            )
    groups: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for r in rows:
        for fam in (r["family"], "all"):
            groups[(fam, "style", r["style"])].append(r["correct"])
            groups[(fam, "steps", "with steps" if r["steps"] else "direct")].append(r["correct"])
            groups[(fam, "all", "all")].append(r["correct"])
    report = {
        f"{fam} | {kind} | {value}": {**_ci(v), "share": len(v) / len(groups[(fam, "all", "all")])}
        for (fam, kind, value), v in sorted(groups.items())
    }
    for key, value in report.items():
        print(
            f"{key:48s} acc {value['value']:.3f} [{value['low']:.3f}, {value['high']:.3f}] "
            f"n={value['n']:5d} share {value['share']:.2f}"
        )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"settings": vars(args) | {"json": str(args.json)}, "groups": report}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
