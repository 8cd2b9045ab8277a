"""Multi-fidelity fitness of reward candidates.

**Level 0, the proxy** (`proxy_fitness`, seconds per candidate). The candidate, run in the
sandbox like any `reward_function` tool, scores the run's fixed pool of rollouts
(`search.response_pool`) and its hacking probes:

- `separation`: within each prompt's group that holds both right and wrong responses, the
  probability that a right response scores above a wrong one (ties count half), averaged
  over groups and mapped to [-1, 1] (2 AUC - 1). GRPO compares responses within a group,
  so this is the signal the candidate adds where the answer check already has one;
- `probe_payout`: how far above the pool's mean score the probes are paid, as a share of
  the candidate's range (`BOUNDS`), averaged over probes (0: no hack pays; 1: every hack
  gets the full range more than a typical response);
- `coverage`: share of groups in which the candidate's scores differ (where it gives GRPO
  any signal at all, including groups whose responses are all wrong);
- `reference_free`: the scores do not change when each response gets another prompt's
  reference (a *structural* reward: it never reads the answer check's reference);
- incentives away from correctness (`search.incentives`, on answer twins and well-formed
  wrong probes built from the pool): `twin_direction` (right vs wrong answer in the same
  response), `silent_direction` (with every answer wrong, the form of right responses vs
  that of wrong ones), `wrong_payout` (tricks paid above a plain wrong answer), and
  `misdirection` = max(0, -twin_direction) + max(0, -silent_direction);
- `fitness` = separation - probe_payout - wrong_payout - misdirection, what successive
  halving ranks by (without incentives material, separation - probe_payout).

**Level 1, GRPO** (`grpo_fitness`): a short GRPO run of the task's policy with the base
rewards plus the candidate (element-wise sum), then greedy accuracy and F1 (with bootstrap
95% CIs, `rl.stats`) on the validation problems. Level 2 is the same through TRL
(`backend="trl"`, for a GPU). A run folder keeps metrics, the last checkpoint (a later rung
continues it: rung budgets are cumulative steps) and `eval.json` with every completion.
"""

from __future__ import annotations

import json
import logging
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.files import atomic_write, is_regular, read_json
from rewardsmith.jsonl import read_jsonl
from rewardsmith.sandbox.probe import CheckReport
from rewardsmith.search.incentives import (
    Incentives,
    silent_direction,
    twin_direction,
    wrong_payouts,
)
from rewardsmith.search.metrics import GRPOMetrics, PolicyEval, ProxyMetrics
from rewardsmith.search.response_pool import PoolItem
from rewardsmith.search.task import SearchTask
from rewardsmith.tools.reward_fn import RewardFunctionTool, reward_code_report
from rewardsmith.types import RewardTool, Sample, ToolSpec

log = logging.getLogger(__name__)

EVAL_FILE = "eval.json"
#: Steps at the start and the end of a run whose means give a training statistic's change.
TREND_FRACTION = 0.2
BACKENDS = ("embedded", "trl")


def candidate_check(source: str, *, workers: int = 1) -> CheckReport:
    """The 4-stage check of a candidate's source, at the limits `candidate_tool` runs it
    with: the one check; building the tool afterwards reuses its report."""
    return reward_code_report(source, workers=workers)


def candidate_tool(name: str, source: str, *, workers: int = 1) -> RewardFunctionTool:
    """A candidate's source as a sandboxed tool (the check of `candidate_check`, reused for
    the same source; a source that does not pass raises `ConfigError`)."""
    spec = ToolSpec(name=name, kind="code", provenance="search", needs_reference=False)
    return RewardFunctionTool(spec, source, workers=workers)


# -- level 0 -------------------------------------------------------------------------------


def _scores(tool: RewardTool, items: Sequence[PoolItem], references: Sequence[str]) -> list[float]:
    samples = [
        Sample(completion=it.completion, prompt=it.prompt, reference=ref, task=it.task)
        for it, ref in zip(items, references, strict=True)
    ]
    return [
        r.score if r.score is not None and r.status == "ok" else 0.0 for r in tool.score(samples)
    ]


def within_group_separation(
    scores: Sequence[float], correct: Sequence[bool], groups: Sequence[int]
) -> float | None:
    """2 AUC - 1 of right against wrong responses, averaged over groups that hold both;
    None when no group does."""
    by_group: dict[int, tuple[list[float], list[float]]] = {}
    for s, ok, g in zip(scores, correct, groups, strict=True):
        by_group.setdefault(g, ([], []))[0 if ok else 1].append(s)
    aucs = []
    for right, wrong in by_group.values():
        if right and wrong:
            wins = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
            aucs.append(wins / (len(right) * len(wrong)))
    return 2 * statistics.fmean(aucs) - 1 if aucs else None


def proxy_fitness(
    tool: RewardFunctionTool,
    pool: Sequence[PoolItem],
    probes: Sequence[PoolItem],
    incentives: Incentives | None = None,
) -> tuple[ProxyMetrics, dict[str, list[float]]]:
    """Level-0 metrics (see the module docstring) and the raw scores (`pool`, `probes`, and
    with `incentives` `twin_right`, `twin_wrong`, `wrong_probes`)."""
    start = time.perf_counter()
    cpu = time.process_time()
    low, high = tool.bounds
    span = max(high - low, 1e-9)
    pool_scores = _scores(tool, pool, [it.reference for it in pool])
    probe_scores = _scores(tool, probes, [it.reference for it in probes])
    # Each response with the reference of the next prompt in the pool.
    refs = sorted({it.group: it.reference for it in pool}.items())
    shift = {g: refs[(i + 1) % len(refs)][1] for i, (g, _) in enumerate(refs)}
    swapped = _scores(tool, pool, [shift[it.group] for it in pool])
    separation = within_group_separation(
        pool_scores, [it.correct for it in pool], [it.group for it in pool]
    )
    mean = statistics.fmean(pool_scores) if pool_scores else 0.0
    payouts: dict[str, list[float]] = {}
    for item, s in zip(probes, probe_scores, strict=True):
        payouts.setdefault(item.probe or "?", []).append(max(0.0, s - mean) / span)
    payout = statistics.fmean([p for ps in payouts.values() for p in ps]) if payouts else 0.0
    by_group: dict[int, set[float]] = {}
    for item, s in zip(pool, pool_scores, strict=True):
        by_group.setdefault(item.group, set()).add(s)
    coverage = sum(len(v) > 1 for v in by_group.values()) / max(1, len(by_group))
    right = [s for s, it in zip(pool_scores, pool, strict=True) if it.correct]
    wrong = [s for s, it in zip(pool_scores, pool, strict=True) if not it.correct]
    sep = separation if separation is not None else 0.0
    raw = {"pool": pool_scores, "probes": probe_scores}
    aims: dict[str, Any] = {}
    penalty = 0.0
    if incentives is not None:
        aims, raw_aims = _incentive_metrics(tool, incentives, span)
        raw.update(raw_aims)
        penalty = aims["wrong_payout"] + aims["misdirection"]
    metrics: dict[str, Any] = {
        "separation": round(sep, 4),
        "probe_payout": round(payout, 4),
        "fitness": round(sep - payout - penalty, 4),
        **aims,
        "coverage": round(coverage, 4),
        "mean_right": round(statistics.fmean(right), 4) if right else None,
        "mean_wrong": round(statistics.fmean(wrong), 4) if wrong else None,
        "reference_free": swapped == pool_scores,
        "probes": {k: round(statistics.fmean(v), 4) for k, v in payouts.items()},
        "bounds": [low, high],
        "seconds": round(time.perf_counter() - start, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
    }
    if separation is None:
        metrics["note"] = "no prompt of the pool has both right and wrong responses"
    return ProxyMetrics.from_dict(metrics), raw


def _incentive_metrics(
    tool: RewardFunctionTool, incentives: Incentives, span: float
) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Twin and silent directions, well-formed wrong probes' payout (`search.incentives`)."""
    twins = incentives.twins
    right = _scores(tool, [_as_item(t.right, t) for t in twins], [t.reference for t in twins])
    wrong = _scores(tool, [_as_item(t.wrong, t) for t in twins], [t.reference for t in twins])
    probes = incentives.wrong_probes
    probe_scores = _scores(tool, probes, [it.reference for it in probes])
    bars = incentives.plain_wrong
    bar_scores = _scores(tool, bars, [it.reference for it in bars])
    twin = twin_direction(right, wrong)
    silent = silent_direction(twins, right, wrong)
    misdirection = max(0.0, -(twin or 0.0)) + max(0.0, -(silent or 0.0))
    by_kind = wrong_payouts(probes, probe_scores, incentives.probe_bar, bar_scores, span)
    flat = [p for ps in by_kind.values() for p in ps]
    metrics = {
        "twin_direction": None if twin is None else round(twin, 4),
        "silent_direction": None if silent is None else round(silent, 4),
        "wrong_payout": round(statistics.fmean(flat), 4) if flat else 0.0,
        "misdirection": round(misdirection, 4),
        "wrong_probes": {k: round(statistics.fmean(v), 4) for k, v in by_kind.items()},
        "twins": len(twins),
    }
    raw = {"twin_right": right, "twin_wrong": wrong, "wrong_probes": probe_scores}
    return metrics, {**raw, "plain_wrong": bar_scores}


def _as_item(completion: str, twin: Any) -> PoolItem:
    return PoolItem(
        twin.group, twin.prompt, twin.reference, completion, False, False, task=twin.task
    )


# -- level 1 / 2 ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GRPORun:
    """One GRPO run of a reward set: where, how long, with which seed and backend."""

    out: Path
    steps: int
    seed: int = 0
    backend: str = "embedded"
    device: str = "cpu"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ConfigError(f"GRPO backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.steps < 1:
            raise ConfigError(f"GRPO steps must be >= 1, got {self.steps}")


def grpo_fitness(
    task: SearchTask,
    rewards: Sequence[str | RewardTool],
    run: GRPORun,
    held_out: Mapping[str, Sequence[Any]],
    *,
    library: Any = None,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> GRPOMetrics:
    """Train with `rewards` (summed) for `run.steps` steps, continuing the newest checkpoint
    in `run.out` when there is one, then judge the policy (greedy) on each held-out set.
    Returns `GRPOMetrics` (`{accuracy, f1, ci95, steps, seconds, cpu_seconds, training}` for the first set
    and `sets` with each set's numbers when there are several); writes `eval.json` with
    every completion and verdict."""
    from rewardsmith.models.checkpoints import latest_checkpoint
    from rewardsmith.rl.grpo import GRPOConfig, GRPOTrainer
    from rewardsmith.rl.policies import load_policy, load_pretrained

    start, cpu = time.perf_counter(), time.process_time()
    config = GRPOConfig(
        **{**dict(task.grpo), "steps": run.steps, "seed": run.seed},
        answer_format=task.answer_format,  # type: ignore[arg-type]
        save_every=max(10, run.steps // 4),
    )
    policy = load_policy(task.policy, device=run.device)
    items = task.train_items()
    resume = latest_checkpoint(run.out) is not None
    if run.backend == "trl":
        from rewardsmith.rl.trl_backend import train_trl

        result = train_trl(
            policy,
            list(rewards),
            items,
            config,
            run.out,
            library=library,
            resume=resume,
            on_step=on_step,
        )
        assert result.model_dir is not None
        trained = load_pretrained(result.model_dir, device=run.device)
    else:
        trainer = GRPOTrainer(policy, list(rewards), items, config, run.out, library=library)
        trainer.train(resume=resume, on_step=on_step, save_model=False)
        policy.model = trainer.model
        trained = policy
    sets = judge_policy(task, trained, held_out, run.out, run.steps)
    first = next(iter(sets.values()))
    out = {
        **first,
        "steps": run.steps,
        "seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
        "training": training_trends(run.out / "metrics.jsonl"),
    }
    if len(sets) > 1:
        out["sets"] = sets
    return GRPOMetrics.from_dict(out)


def judge_policy(
    task: SearchTask, policy: Any, held_out: Mapping[str, Sequence[Any]], out: Path, steps: int
) -> dict[str, dict[str, Any]]:
    """Greedy accuracy and F1 (bootstrap 95% CIs) of `policy` on each held-out set; writes
    `out/eval.json` (`steps`, and per set every verdict and completion)."""
    from rewardsmith.rl.evaluate import evaluate_policy

    sets: dict[str, dict[str, Any]] = {}
    record: dict[str, Any] = {"steps": steps, "sets": {}}
    for set_name, problems in held_out.items():
        judged = evaluate_policy(
            policy,
            problems,
            answer_format=task.answer_format,  # type: ignore[arg-type]
            max_new_tokens=task.eval_max_new_tokens,
        )
        acc, f1 = judged.accuracy_ci(), judged.f1_ci()
        sets[set_name] = {
            "accuracy": round(acc.value, 4),
            "f1": round(f1.value, 4),
            "ci95": {
                "accuracy": [round(acc.low, 4), round(acc.high, 4)],
                "f1": [round(f1.low, 4), round(f1.high, 4)],
            },
        }
        record["sets"][set_name] = {
            "correct": judged.correct,
            "parseable": judged.parseable,
            "completions": judged.completions,
        }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / EVAL_FILE, json.dumps(record) + "\n")
    return sets


def starting_fitness(
    task: SearchTask, held_out: Mapping[str, Sequence[Any]], out: Path, device: str = "cpu"
) -> GRPOMetrics:
    """The task's policy before any GRPO, judged like a trained one (`steps` 0): the point
    every GRPO run should at least hold."""
    from rewardsmith.rl.policies import load_policy

    start = time.perf_counter()
    sets = judge_policy(task, load_policy(task.policy, device=device), held_out, out, 0)
    first = next(iter(sets.values()))
    metrics = {**first, "steps": 0, "seconds": round(time.perf_counter() - start, 1)}
    if len(sets) > 1:
        metrics["sets"] = sets
    return GRPOMetrics.from_dict(metrics)


def training_trends(metrics: Path) -> dict[str, dict[str, float]]:
    """Per reward component and for accuracy and length: the mean over the first and the
    last `TREND_FRACTION` of the steps (what the generator is told, what the audit reads)."""
    if not is_regular(metrics):
        return {}
    rows = read_jsonl(metrics, regular_only=True)
    if not rows:
        return {}
    k = max(1, int(len(rows) * TREND_FRACTION))
    keys = [
        key
        for key in rows[-1]
        if (key.startswith("reward/") and not key.endswith("_frac"))
        or key in ("reward", "accuracy", "parseable", "completion_length", "truncated")
    ]
    out: dict[str, dict[str, float]] = {}
    for key in keys:
        head = [float(r[key]) for r in rows[:k] if key in r]
        tail = [float(r[key]) for r in rows[-k:] if key in r]
        if head and tail:
            first, last = statistics.fmean(head), statistics.fmean(tail)
            out[key] = {
                "first": round(first, 4),
                "last": round(last, 4),
                "change": round(last - first, 4),
            }
    return out


def read_eval(out: Path) -> PolicyEval | None:
    """A finished run's `eval.json`, or None."""
    path = out / EVAL_FILE
    if not is_regular(path):
        return None
    data = read_json(path)
    return PolicyEval.from_dict(data) if isinstance(data, dict) else None
