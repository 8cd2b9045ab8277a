"""Best-of-N samples from a testbed policy, for `rewardsmith rm eval` (issue 18, item 4).

The policy (the warm-start testbed by default) samples N completions at temperature 1 (the
temperature GRPO samples at) for each of the first `--n` held-out testbed problems (the same
held-out split as `grpo eval`, which no RM corpus document and no GRPO prompt comes from).
Each completion is judged by the strict `<solution>` rule (`rl.answers.judge_answer`). The output is
a best-of-N file in the format `rm eval` reads: `question` (the exact prompt the policy read,
`Question: ...\\nAnswer: `, as the reward tools see it during GRPO), `response[N]`,
`score[N]` (correct or not: used only to grade a pick), `pred[N]` (the extracted answer, for
majority vote).

    .venv/bin/python bench/rbs_best_of_n.py --out out/bon/testbed_bo8.jsonl --n 500 -N 8
    rewardsmith rm eval -m MODEL -d out/bon/testbed_bo8.jsonl --no-untrained -o eval.json

`rm eval` then reports the reward model's pick beside random (expected accuracy of a uniform
pick), majority vote and the oracle (any correct), each with a 95% interval over problems,
and the paired difference model - random with its interval.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from rewardsmith.models.loading import torch_threads
from rewardsmith.rl.answers import extract_answer, judge_answer
from rewardsmith.rl.generation import generate
from rewardsmith.rl.policies import load_policy
from rewardsmith.rl.prompts import testbed_eval_problems


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--policy", default="testbed")
    parser.add_argument("--n", type=int, default=500, help="held-out problems")
    parser.add_argument("-N", "--samples", type=int, default=8, help="completions per problem")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--batch", type=int, default=32, help="problems per generation batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    torch_threads(args.threads)
    policy = load_policy(args.policy, device="cpu")
    problems = testbed_eval_problems(args.n, args.seed)
    torch.manual_seed(args.seed)
    start = time.perf_counter()
    rows = []
    for i in range(0, len(problems), args.batch):
        chunk = problems[i : i + args.batch]
        prompts = [policy.prompt_for(p.question) for p in chunk]
        rollout = generate(
            policy.model,
            policy.tokenizer,
            prompts,
            num_return=args.samples,
            max_new_tokens=args.max_new_tokens,
            temperature=args.temperature,
        )
        for j, (prompt, problem) in enumerate(zip(prompts, chunk, strict=True)):
            texts = rollout.texts[j * args.samples : (j + 1) * args.samples]
            answers = [extract_answer(t, policy.answer_format) for t in texts]
            rows.append(
                {
                    "question": prompt,
                    "response": texts,
                    "score": [
                        judge_answer(t, problem.reference, policy.answer_format).correct
                        for t in texts
                    ],
                    "pred": ["" if a is None else str(a) for a in answers],
                    "reference": problem.reference,
                }
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
    correct = [c for r in rows for c in r["score"]]
    oracle = sum(any(r["score"]) for r in rows) / len(rows)
    distinct = sum(len(set(r["response"])) for r in rows) / len(rows)
    print(
        f"{len(rows)} problems x {args.samples} samples in {time.perf_counter() - start:.0f} s: "
        f"sample accuracy {sum(correct) / len(correct):.3f}, oracle {oracle:.3f}, "
        f"distinct completions per problem {distinct:.2f} -> {args.out}"
    )


if __name__ == "__main__":
    main()
