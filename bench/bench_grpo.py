"""Benchmark: one GRPO step of the embedded trainer, its time split, and TRL's GRPOTrainer.

Both trainers start from the same testbed weights and run the same settings (prompts per
step, G, completion length, full fine-tuning or LoRA, AdamW, one update pass per rollout
batch) with the `gsm8k` + `format_tags` rewards. Reported:

- the embedded step split: generation / reward / update seconds and shares; the reward share
  must stay <= 5% (rewardsmith should never be the bottleneck of a trainer);
- the mean step time of each trainer (first step untimed: allocator and lazy-init warm-up)
  and their ratio, TRL / embedded.

Both sample until EOS or the length limit, so step times depend on what the policy writes;
the completion lengths are printed beside the times. Timings on a shared 2-vCPU machine vary
by +-15% from run to run; the ratio is the point.

    .venv/bin/python bench/bench_grpo.py [--policy testbed] [--steps 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from rewardsmith.rl.grpo import GRPOConfig, GRPOTrainer
from rewardsmith.rl.policies import load_policy
from rewardsmith.rl.prompts import load_items
from rewardsmith.rl.trl_backend import train_trl

REWARDS = ["gsm8k", "format_tags"]
# The acceptance bound on the reward's share of a step.
MAX_REWARD_SHARE = 0.05


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(float(r[key]) for r in rows if key in r)


def run_embedded(policy_name: str, config: GRPOConfig, work: Path) -> list[dict[str, Any]]:
    policy = load_policy(policy_name)
    items = load_items("testbed", 2_000, config.seed)
    trainer = GRPOTrainer(policy, REWARDS, items, config, work / "embedded", library=work / "l.db")
    rows = [trainer.train_step() for _ in range(config.steps)]
    trainer.reward.close()
    return rows[1:]


def run_trl(policy_name: str, config: GRPOConfig, work: Path) -> list[dict[str, Any]]:
    policy = load_policy(policy_name)
    items = load_items("testbed", 2_000, config.seed)
    rows: list[dict[str, Any]] = []
    train_trl(
        policy,
        REWARDS,
        items,
        config,
        work / "trl",
        library=work / "l.db",
        on_step=rows.append,
        save_model=False,
    )
    return rows[1:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", default="testbed", help="testbed, testbed-tiny, or a folder")
    parser.add_argument("--steps", type=int, default=5, help="timed steps (+1 warm-up)")
    parser.add_argument("--prompts-per-step", type=int, default=8)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--lora-rank", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    config = GRPOConfig(
        steps=args.steps + 1,
        prompts_per_step=args.prompts_per_step,
        group_size=args.group_size,
        max_new_tokens=args.max_new_tokens,
        lora_rank=args.lora_rank,
        lr=1e-4,
        seed=0,
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours = run_embedded(args.policy, config, work)
        theirs = run_trl(args.policy, config, work)
    step = _mean(ours, "time/step")
    split = {k: _mean(ours, f"time/{k}") for k in ("generate", "reward", "update")}
    reward_share = split["reward"] / step
    trl_step = _mean(theirs, "time/step")
    result = {
        "policy": args.policy,
        "settings": {
            "prompts_per_step": args.prompts_per_step,
            "group_size": args.group_size,
            "max_new_tokens": args.max_new_tokens,
            "lora_rank": args.lora_rank,
            "threads": args.threads,
            "timed_steps": args.steps,
        },
        "embedded": {
            "step_s": step,
            **{f"{k}_s": v for k, v in split.items()},
            **{f"{k}_share": v / step for k, v in split.items()},
            "completion_length": _mean(ours, "completion_length"),
        },
        "trl": {"step_s": trl_step, "completion_length": _mean(theirs, "completion_length")},
        "reward_share": reward_share,
        "reward_share_ok": reward_share <= MAX_REWARD_SHARE,
        "trl_over_embedded": trl_step / step,
    }
    print(f"policy {args.policy}, {args.prompts_per_step} prompts x G={args.group_size}, ")
    print(f"max {args.max_new_tokens} new tokens, {args.threads} threads, {args.steps} timed steps")
    print(f"{'':24}{'seconds':>10}{'share':>9}")
    for k, v in split.items():
        print(f"embedded {k:<15}{v:>10.3f}{v / step:>9.1%}")
    print(
        f"embedded step{'':11}{step:>10.3f}   (mean length {result['embedded']['completion_length']:.1f})"
    )  # type: ignore[index]
    print(
        f"TRL GRPOTrainer step{'':4}{trl_step:>10.3f}   (mean length {result['trl']['completion_length']:.1f})"
    )  # type: ignore[index]
    verdict = "ok" if result["reward_share_ok"] else "OVER"
    print(f"reward share {reward_share:.2%} (bound {MAX_REWARD_SHARE:.0%}: {verdict})")
    print(f"step time ratio TRL / embedded: {result['trl_over_embedded']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["reward_share_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
