"""Train chosen candidates of a search run (base rewards + candidate) and the base rewards alone
for longer than the search did, and test each against base-only (exact McNemar) on the run's
validation problems: did a candidate the proxy demoted really do worse with more steps?

    .venv/bin/python bench/search_longer.py out/fidelity2 --steps 60 --out out/long60 \\
        r2_05_answer_follows_last_equa r1_11_tags_exact
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scipy.stats import binomtest

from rewardsmith.library.store import Library
from rewardsmith.search.fitness import GRPORun, candidate_tool, grpo_fitness, read_eval
from rewardsmith.search.results import RunDir
from rewardsmith.search.task import run_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rundir", type=Path)
    parser.add_argument("names", nargs="+")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    rd = RunDir(args.rundir).require()
    task = run_task(rd.read_run())
    validation, _ = task.held_out()
    library = Library(None)
    correct: dict[str, list[bool]] = {}
    for name in ["base", *args.names]:
        rewards: list = task.base_tools()
        tool = candidate_tool(name, rd.read_source(name)) if name != "base" else None
        if tool is not None:
            rewards.append(tool)
        try:
            run = GRPORun(args.out / name, args.steps, seed=args.seed)
            m = grpo_fitness(task, rewards, run, {"validation": validation}, library=library)
        finally:
            if tool is not None:
                tool.close()
        record = read_eval(args.out / name)
        assert record is not None
        correct[name] = record["sets"]["validation"]["correct"]
        print(f"{name}: F1 {m['f1']:.3f} {m['ci95']['f1']}, {m['seconds']} s", flush=True)
    base = correct["base"]
    for name in args.names:
        wins = sum(c and not b for c, b in zip(correct[name], base, strict=True))
        losses = sum(b and not c for c, b in zip(correct[name], base, strict=True))
        p = binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
        print(f"{name} vs base: {wins} vs {losses}, exact McNemar p {p:.3g} (uncorrected)")


if __name__ == "__main__":
    main()
