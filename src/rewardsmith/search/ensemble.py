"""Ensembles of discovered rewards, trained and compared on one held-out test set.

Each configuration is the base rewards plus a selection of admitted candidates, summed
element-wise (weight 1 each), trained with GRPO for `steps` steps from the same starting
policy and seed, then judged greedily on the validation and the test problems:

- `base`: the base rewards alone;
- `top1` (the best single candidate), `topK`: the K best of the search's ranking;
- `diverseK`: round-robin over the rounds, each round's best not yet taken first, skipping a
  candidate whose proxy scores correlate above `DUPLICATE_CORRELATION` with one already
  taken (the same reward twice adds nothing);
- `randomK`: K admitted candidates drawn at random (the control: does selection matter?).

The best ensemble (topK or diverseK with K >= 3, by *validation* F1, so the test set that
reports it did not pick it) and the base are retrained with `seeds - 1` more seeds for the
seed spread. On the test set: bootstrap 95% CIs of accuracy and F1, exact McNemar for every
pair of seed-0 configurations with Bonferroni, and which ones are indistinguishable
(`search.stats`); the starting policy, untrained, is judged on the same problems and each
configuration is tested against it (`start`: did GRPO help at all?). Everything goes to
`RUNDIR/ensembles/ensembles.json`; each configuration is saved as soon as it is judged, so
an interrupted `search ensemble` continues where it stopped.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.files import atomic_write, is_regular, read_json
from rewardsmith.library.store import Library
from rewardsmith.search.fitness import (
    GRPORun,
    candidate_tool,
    grpo_fitness,
    read_eval,
    starting_fitness,
)
from rewardsmith.search.loop import START_RUN, SearchConfig
from rewardsmith.search.metrics import EnsembleRun, GRPOMetrics
from rewardsmith.search.results import (
    ENSEMBLES_DIR,
    ENSEMBLES_FILE,
    CandidateRecord,
    RunDir,
    ranked,
)
from rewardsmith.search.stats import describe, indistinguishable, pairwise, spread, versus
from rewardsmith.search.task import SearchTask, run_task

#: Proxy-score correlation above which two candidates count as the same reward.
DUPLICATE_CORRELATION = 0.95
#: What a configuration's run folder was trained for.
PLAN_FILE = "ensemble.json"
Progress = Callable[[str], None]


def _correlation(a: Sequence[float], b: Sequence[float]) -> float:
    if len(set(a)) < 2 or len(set(b)) < 2:
        return 1.0 if list(a) == list(b) else 0.0
    return statistics.correlation(a, b)


def select_top(ranking: Sequence[CandidateRecord], k: int) -> list[str]:
    return [r.name for r in ranking[:k]]


def select_diverse(
    ranking: Sequence[CandidateRecord], k: int, scores: dict[str, list[float]]
) -> list[str]:
    """Round-robin over rounds, best first within each, near-duplicates skipped."""
    by_round: dict[int, list[CandidateRecord]] = {}
    for r in ranking:
        by_round.setdefault(r.round, []).append(r)
    chosen: list[str] = []
    skipped: list[str] = []
    while len(chosen) < k and any(by_round.values()):
        for round_no in sorted(by_round):
            if not by_round[round_no] or len(chosen) == k:
                continue
            r = by_round[round_no].pop(0)
            mine = scores.get(r.name)
            if mine is not None and any(
                c in scores and _correlation(mine, scores[c]) > DUPLICATE_CORRELATION
                for c in chosen
            ):
                skipped.append(r.name)
                continue
            chosen.append(r.name)
    # Too few distinct rewards: fill with the best near-duplicates rather than fall short.
    return chosen + skipped[: k - len(chosen)]


def select_random(admitted: Sequence[CandidateRecord], k: int, seed: int) -> list[str]:
    return [r.name for r in random.Random(seed * 7_919 + k).sample(list(admitted), k)]


def plan(
    records: Sequence[CandidateRecord],
    sizes: Sequence[int],
    scores: dict[str, list[float]],
    seed: int = 0,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The configurations to train (`{name: {kind, size, members}}`) and notes on sizes
    that could not be filled."""
    admitted = [r for r in ranked(records) if r.admitted]
    configs: dict[str, dict[str, Any]] = {"base": {"kind": "base", "size": 0, "members": []}}
    notes = []
    if admitted:
        configs["top1"] = {"kind": "top", "size": 1, "members": select_top(admitted, 1)}
    for k in sizes:
        if k > len(admitted):
            notes.append(f"size {k}: only {len(admitted)} admitted candidates")
            continue
        configs[f"top{k}"] = {"kind": "top", "size": k, "members": select_top(admitted, k)}
        configs[f"diverse{k}"] = {
            "kind": "diverse",
            "size": k,
            "members": select_diverse(admitted, k, scores),
        }
        configs[f"random{k}"] = {
            "kind": "random",
            "size": k,
            "members": select_random(admitted, k, seed),
        }
    return configs, notes


def seed_candidates(configs: dict[str, dict[str, Any]]) -> list[str]:
    """The configurations the best is chosen from for more seeds (topK and diverseK, K >= 3),
    in plan order (ties go to the first)."""
    return [n for n, c in configs.items() if c["kind"] in ("top", "diverse") and c["size"] >= 3]


def train_configuration(
    task: SearchTask,
    rd: RunDir,
    config: SearchConfig,
    members: list[str],
    out: Path,
    steps: int,
    seed: int,
    held_out: tuple[Any, Any],
    lib: Library,
) -> GRPOMetrics:
    """Train the base rewards plus `members` for `steps` from the run's starting policy into
    `out` and judge it on the (validation, test) sets; returns `grpo_fitness`'s metrics. A
    folder trained for another selection or budget is started over, never continued."""
    want = {"members": members, "steps": steps, "seed": seed}
    marker = out / PLAN_FILE
    if out.exists() and (not is_regular(marker) or read_json(marker) != want):
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(marker, json.dumps(want) + "\n")
    validation, test = held_out
    tools = [candidate_tool(m, rd.read_source(m)) for m in members]
    try:
        return grpo_fitness(
            task,
            [*task.base_tools(), *tools],
            GRPORun(out, steps, seed, config.grpo_backend, config.device),
            {"test": test, "validation": validation},
            library=lib,
        )
    finally:
        for tool in tools:
            tool.close()


def run_ensembles(
    rundir: str | Path,
    sizes: Sequence[int] = (3, 5, 10),
    seeds: int = 3,
    *,
    steps: int | None = None,
    library: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Train and compare every configuration (see the module docstring); returns the
    summary also written to `ensembles/ensembles.json`."""
    say = progress or (lambda msg: None)
    rd = RunDir(rundir).require()
    state = rd.read_state()
    config = SearchConfig.from_dict(state.config)
    task = run_task(state)
    validation, test = task.held_out()
    records = rd.read_records()
    scores = {r.name: s["pool"] for r in records if (s := rd.proxy_scores(r.name))}
    configs, notes = plan(records, sizes, scores, config.seed)
    steps = steps or 2 * max(config.grpo_steps)
    folder = rd.sub(ENSEMBLES_DIR)
    summary_path = f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}"
    summary: dict[str, Any] = rd.read_json(summary_path) or {}
    if summary.get("steps") != steps or summary.get("sizes") != list(sizes):
        summary = {"steps": steps, "sizes": list(sizes), "runs": {}}
    summary.update(notes=notes, configs=configs, seeds=seeds)
    lib = Library(library)
    try:

        def train(name: str, members: list[str], seed: int) -> EnsembleRun:
            key = name if seed == config.seed else f"{name}@seed{seed}"
            done = summary["runs"].get(key)
            if done and done.get("members") == members and read_eval(folder / "runs" / key):
                return EnsembleRun.from_dict(done)
            say(
                f"ensemble {key}: base + {len(members)} ({', '.join(members) or '-'}), {steps} steps"
            )
            out = folder / "runs" / key
            trained = train_configuration(
                task, rd, config, members, out, steps, seed, (validation, test), lib
            )
            run = EnsembleRun.of(trained, name, seed, members)
            summary["runs"][key] = run.to_dict()
            rd.write_json(summary_path, summary)
            say(f"ensemble {key}: test F1 {run.f1:.3f}, accuracy {run.accuracy:.3f}")
            return run

        for name, cfg in configs.items():
            train(name, cfg["members"], config.seed)
        best = max(seed_candidates(configs), key=lambda n: _validation_f1(summary, n), default=None)
        summary["best"] = best
        spreads: dict[str, Any] = {}
        for name in [n for n in (best, "base") if n]:
            f1s = [EnsembleRun.from_dict(summary["runs"][name]).f1]
            for k in range(1, seeds):
                f1s.append(train(name, configs[name]["members"], config.seed + k).f1)
            spreads[name] = spread(f1s)
        summary["seed_spread"] = spreads
        start = read_eval(folder / "runs" / START_RUN)
        if start is None or not start.judged_on("test"):
            say("the starting policy, before GRPO: judging it on the same problems")
            starting_fitness(
                task, {"test": test, "validation": validation}, folder / "runs" / START_RUN
            )
    finally:
        lib.close()
    summary.update(compare(folder, configs, config.seed))
    rd.write_json(summary_path, summary)
    return summary


def compare(folder: Path, configs: dict[str, dict[str, Any]], seed: int) -> dict[str, Any]:
    """Test-set CIs, pairwise McNemar (Bonferroni) and the indistinguishable table of the
    seed-0 configurations."""
    outcomes: dict[str, list[bool]] = {}
    described: dict[str, Any] = {}
    for name in configs:
        data = read_eval(folder / "runs" / name)
        if data is None:
            continue
        outcomes[name] = data.correct("test")
        described[name] = describe(data.correct("test"), data.parseable("test"), seed)
    tests = pairwise(outcomes)
    out: dict[str, Any] = {
        "test": described,
        "mcnemar": tests,
        "indistinguishable": indistinguishable(list(outcomes), tests),
    }
    start = read_eval(folder / "runs" / START_RUN)
    if start is not None and start.judged_on("test"):
        # The untrained policy: not one of the compared configurations (the Bonferroni
        # family stays the same); each configuration is tested against it on its own.
        out["start"] = {
            "test": describe(start.correct("test"), start.parseable("test"), seed),
            "versus": versus(start.correct("test"), outcomes),
        }
    return out


def _validation_f1(summary: dict[str, Any], name: str) -> float:
    """A trained configuration's F1 on the validation problems (what picks the best)."""
    validation = EnsembleRun.from_dict(summary["runs"][name]).on("validation")
    if validation is None:
        raise KeyError(f"ensemble {name} was not judged on the validation problems")
    return validation.f1
