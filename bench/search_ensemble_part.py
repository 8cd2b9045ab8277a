"""Train some of a search run's ensemble configurations in another process, so that
`rewardsmith search ensemble` can use two cores.

`search ensemble` trains its configurations one after another. This trains the named ones
(`base`, `top3`, `random5@seed1`, ...) exactly as `search ensemble` would: the same plan
(`search.ensemble.plan`: the run's ranking, proxy scores and seed), the same rewards
(base rewards plus the members), the same starting policy, seed, steps, folder
(`RUNDIR/ensembles/runs/KEY`, with its plan marker) and held-out sets. With `--merge` it
then adds each finished configuration's metrics to `ensembles/ensembles.json` (only while
no `search ensemble` runs on the folder), so a following `search ensemble` with the same
`--sizes` and `--steps` finds them done and only trains, compares and judges the rest.

    python bench/search_ensemble_part.py RUNDIR base base@seed1 base@seed2 --steps 60
    python bench/search_ensemble_part.py RUNDIR --merge --steps 60     # after every part
    python bench/search_ensemble_part.py RUNDIR --best --steps 60      # prints e.g. top3
    rewardsmith search ensemble RUNDIR --steps 60 --sizes 3,5,10 --seeds 3

Each part writes `ensembles/runs/KEY/part.json` (the metrics `search ensemble` keeps).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

PART_FILE = "part.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rundir", type=Path)
    parser.add_argument("keys", nargs="*", help="configurations: NAME or NAME@seedN")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--sizes", default="3,5,10")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--merge", action="store_true", help="add finished parts to the summary")
    parser.add_argument(
        "--best",
        action="store_true",
        help="print the configuration `search ensemble` retrains with more seeds (topK or "
        "diverseK, K >= 3, best by validation F1 in the merged summary)",
    )
    args = parser.parse_args(argv)

    import torch

    from rewardsmith.files import atomic_write, is_regular, read_json
    from rewardsmith.library.store import Library
    from rewardsmith.search.ensemble import plan, seed_candidates, train_configuration
    from rewardsmith.search.fitness import read_eval
    from rewardsmith.search.loop import SearchConfig
    from rewardsmith.search.metrics import EnsembleRun
    from rewardsmith.search.results import ENSEMBLES_DIR, ENSEMBLES_FILE, RunDir
    from rewardsmith.search.task import run_task

    torch.set_num_threads(args.threads)
    sizes = [int(s) for s in args.sizes.split(",")]
    rd = RunDir(args.rundir).require()
    state = rd.read_state()
    config = SearchConfig.from_dict(state.config)
    task = run_task(state)
    records = rd.read_records()
    scores = {r.name: s["pool"] for r in records if (s := rd.proxy_scores(r.name))}
    configs, _notes = plan(records, sizes, scores, config.seed)
    runs = rd.sub(ENSEMBLES_DIR) / "runs"
    if args.keys:
        validation, test = task.held_out()
    for key in args.keys:
        name, _, seed_text = key.partition("@seed")
        if name not in configs:
            parser.error(f"{key}: no configuration {name!r}; the plan has {sorted(configs)}")
        seed = int(seed_text) if seed_text else config.seed
        members = configs[name]["members"]
        out = runs / key
        if is_regular(out / PART_FILE) and read_eval(out):
            print(f"{key}: done before", file=sys.stderr)
            continue
        print(f"[{time.strftime('%H:%M:%S')}] {key}: base + {members}", file=sys.stderr)
        with Library(None) as lib:
            trained = train_configuration(
                task, rd, config, members, out, args.steps, seed, (validation, test), lib
            )
        run = EnsembleRun.of(trained, name, seed, members)
        atomic_write(out / PART_FILE, json.dumps(run.to_dict()) + "\n")
        print(
            f"[{time.strftime('%H:%M:%S')}] {key}: test F1 {run.f1:.3f}, "
            f"accuracy {run.accuracy:.3f} ({run.seconds:.0f} s)",
            file=sys.stderr,
        )
    if args.merge:
        path = f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}"
        summary = rd.read_json(path) or {}
        if summary.get("steps") != args.steps or summary.get("sizes") != sizes:
            summary = {"steps": args.steps, "sizes": sizes, "runs": {}}
        for folder in sorted(runs.iterdir()) if runs.is_dir() else []:
            part = folder / PART_FILE
            if is_regular(part) and read_eval(folder):
                summary["runs"][folder.name] = read_json(part)
        rd.write_json(path, summary)
        print(f"merged: {sorted(summary['runs'])}", file=sys.stderr)
    if args.best:
        runs_done = (rd.read_json(f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}") or {}).get("runs", {})
        # The rule and the order of `search.ensemble.run_ensembles` (ties: the first).
        eligible = seed_candidates(configs)
        missing = [n for n in eligible if n not in runs_done]
        if missing:
            parser.error(f"--best: not merged yet: {missing}")
        print(max(eligible, key=lambda n: runs_done[n]["sets"]["validation"]["f1"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
