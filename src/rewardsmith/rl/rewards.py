"""Rewards for GRPO rollouts: one or more rewardsmith tools (or composites), weighted and summed.

A tool is a library name (`gsm8k`, `math@2`, `gsm8k_with_format`), a `RewardTool`, or
`router` / `router:BACKEND` (`embedded`, `llm`, `rules`): the router picks the tool(s) for each
sample, as `rewardsmith score` does without `--tool`.

Each tool scores the whole rollout batch once through a `Scorer`; the weighted sum follows
the one rule of `rewardsmith.combine` (a `timeout` / `error` part counts 0, a part that does
not apply is left out, an invalid reference makes the whole sum unscored). A completion whose
sum is unscored (None) is marked in `ScoredBatch.valid` and counted in the metrics
(`reward/total/not_scored_frac`); the trainer gives it 0 or leaves it out of the update
(`GRPOConfig.skip_unscored`). Every tool's mean and every component's mean are reported,
so composites such as `gsm8k_with_format` show their parts.

**Growing the library** (`synthesize=True`, with the `router` reward): a task the library
cannot grade is synthesized for from its first samples with references (CodeVerify, then the
admission gate; `rewardsmith.synth.session`); until a tool is admitted its samples are
unscored. Each synthesis is reported once, with the training step, in
`ScoredBatch.admissions` and as a `train_synthesis` event in the library log.

**Per-task metrics**: those of `rewardsmith.reward_metrics` for every tool
(`rewardsmith/<task>/<tool>/mean`, `.../not_scored_frac`, `.../failed_frac`; under the router
the tool is the routed or synthesized one, unversioned), and, when the samples carry a task,
`rewardsmith/<task>/total/not_scored_frac`: the share of the task's samples whose weighted
sum is unscored (left out of the update or given 0).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.combine import Weighted, combine, component_means
from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library
from rewardsmith.reward_metrics import metric_name, task_metrics
from rewardsmith.rollout_log import rollout_record
from rewardsmith.scoring import Scorer
from rewardsmith.types import Reward, RewardTool, Sample

ToolRef = str | RewardTool
#: The reward name that hands each sample to the router instead of a fixed tool.
ROUTER = "router"
#: How CodeVerify writes a synthesized verifier (`rewardsmith.synth.pipeline`).
SYNTH_BACKENDS = ("offline", "llm")


def parse_rewards(text: str) -> list[str]:
    """`"gsm8k,format_tags"` -> `["gsm8k", "format_tags"]`."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ConfigError("--reward needs at least one tool, e.g. --reward gsm8k,format_tags")
    return names


def tool_name(tool: ToolRef) -> str:
    return tool if isinstance(tool, str) else tool.spec.name


def _is_router(tool: ToolRef) -> bool:
    return isinstance(tool, str) and (tool == ROUTER or tool.startswith(ROUTER + ":"))


def total_not_scored(tasks: Sequence[str | None], valid: Sequence[bool]) -> dict[str, float]:
    """Per task, the share of its samples whose weighted sum is unscored:
    `rewardsmith/<task>/total/not_scored_frac` (the naming of `rewardsmith.reward_metrics`)."""
    counts: dict[str | None, list[bool]] = defaultdict(list)
    for task, ok in zip(tasks, valid, strict=True):
        counts[task].append(ok)
    return {
        metric_name(task, "total", "not_scored_frac"): 1 - sum(flags) / len(flags)
        for task, flags in sorted(counts.items(), key=lambda kv: str(kv[0]))
    }


@dataclass
class ScoredBatch:
    """Rewards of one rollout batch: the weighted total per completion and what made it up."""

    total: list[float]
    per_tool: dict[str, list[float]]
    metrics: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    #: The weighted sum of each completion as one `Reward` (status, components, reasons).
    combined: list[Reward] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    #: False where the weighted sum is unscored (its `total` is 0.0 as a placeholder).
    valid: list[bool] = field(default_factory=list)
    #: Syntheses this batch ran (`RewardSet` docstring): one dict each.
    admissions: list[dict[str, Any]] = field(default_factory=list)

    def audit_rows(
        self, step: int, group_size: int, verdicts: Sequence[Any]
    ) -> list[dict[str, Any]]:
        """One rollout line (`rewardsmith.rollout_log`) per completion: the sample, its
        weighted reward (`reward` is the GRPO reward: 0.0 where the sum is unscored; `status`
        says so), each tool's part (`rewards`), its GRPO group (`step-S/prompt-P`) and its
        verdict: what `rewardsmith profile` / `compare` and a reward-hacking audit read
        (`grpo train --log-completions-every`)."""
        rows = []
        for i, (sample, reward) in enumerate(zip(self.samples, self.combined, strict=True)):
            row = rollout_record(
                sample,
                reward,
                group=f"step-{step}/prompt-{i // group_size}",
                step=step,
                source="grpo",
            )
            row["reward"] = self.total[i]
            row["rewards"] = {name: values[i] for name, values in self.per_tool.items()}
            row["correct"] = verdicts[i].correct
            row["parseable"] = verdicts[i].parseable
            rows.append(row)
        return rows


class RewardSet:
    """Weighted sum of rewardsmith tools, scoring batches of (prompt, completion, reference)."""

    def __init__(
        self,
        tools: Sequence[ToolRef],
        weights: Sequence[float] | None = None,
        *,
        library: Library | str | Path | None = None,
        synthesize: bool = False,
        synth_backend: str = "offline",
    ) -> None:
        if not tools:
            raise ConfigError("GRPO needs at least one reward tool")
        if synthesize and not any(_is_router(t) for t in tools):
            raise ConfigError(
                "synthesis needs the router: add 'router' to the rewards (--reward router)"
            )
        if synth_backend not in SYNTH_BACKENDS:
            raise ConfigError(
                f"synthesis backend must be one of {SYNTH_BACKENDS}, got {synth_backend!r}"
            )
        self.synthesize = synthesize
        self.synth_backend = synth_backend
        if weights is not None and len(weights) != len(tools):
            raise ConfigError(f"{len(weights)} reward weights for {len(tools)} tools")
        names = [tool_name(t) for t in tools]
        if len(set(names)) != len(names):
            raise ConfigError(f"reward tools listed twice: {names}")
        self.names = names
        self.weights = [float(w) for w in (weights or [1.0] * len(tools))]
        self._parts = [Weighted(n, w) for n, w in zip(names, self.weights, strict=True)]
        self._owns_library = not isinstance(library, Library)
        self.library = library if isinstance(library, Library) else Library(library)
        self.scorers = [self._scorer(t) for t in tools]
        #: The `tool` of a combined reward: every tool's `name@version`, joined by `+`.
        self.label = "+".join(
            s.default.spec.ref if s.default is not None else n
            for n, s in zip(names, self.scorers, strict=True)
        )
        self._reported = [0] * len(self.scorers)

    def _scorer(self, tool: ToolRef) -> Scorer:
        if isinstance(tool, str) and _is_router(tool):
            backend = tool.partition(":")[2] or "embedded"
            return Scorer(
                None,
                library=self.library,
                router=backend,
                synthesize=self.synthesize,
                synth_backend=self.synth_backend,
            )
        return Scorer(tool, library=self.library)

    def score(
        self,
        prompts: Sequence[str],
        completions: Sequence[str],
        references: Sequence[str | None],
        tasks: Sequence[str | None] | None = None,
        *,
        step: int | None = None,
    ) -> ScoredBatch:
        """Score a rollout batch; `tasks` (one per completion) route the samples and split
        the metrics by task; `step` is recorded with any synthesis this batch runs."""
        start = time.perf_counter()
        task_list = list(tasks) if tasks is not None else [None] * len(completions)
        samples = [
            Sample(completion=c, prompt=p, reference=r, task=t)
            for p, c, r, t in zip(prompts, completions, references, task_list, strict=True)
        ]
        n = len(samples)
        per_tool: dict[str, list[float]] = {}
        metrics: dict[str, float] = {}
        by_tool: list[list[Reward]] = []
        for name, scorer in zip(self.names, self.scorers, strict=True):
            rewards: list[Reward] = scorer.score(samples).rewards
            by_tool.append(rewards)
            values = [r.score if r.score is not None else 0.0 for r in rewards]
            per_tool[name] = values
            metrics[f"reward/{name}"] = sum(values) / max(1, n)
            not_scored = sum(r.score is None for r in rewards)
            failed = sum(r.status in ("error", "timeout") for r in rewards)
            if not_scored:
                metrics[f"reward/{name}/not_scored_frac"] = not_scored / n
            if failed:
                metrics[f"reward/{name}/failed_frac"] = failed / n
            for key, mean in component_means(rewards).items():
                metrics[f"reward/{name}/{key}"] = mean
            metrics.update(task_metrics(task_list, rewards))
        combined = [
            Reward(c.score, c.status, c.components, self.label, c.reason)
            for c in (combine(self._parts, [r[i] for r in by_tool]) for i in range(n))
        ]
        total = [c.score if c.score is not None else 0.0 for c in combined]
        valid = [c.score is not None for c in combined]
        unscored = n - sum(valid)
        if unscored:
            metrics["reward/total/not_scored_frac"] = unscored / n
        if any(t is not None for t in task_list):
            metrics.update(total_not_scored(task_list, valid))
        return ScoredBatch(
            total,
            per_tool,
            metrics,
            time.perf_counter() - start,
            combined=combined,
            samples=samples,
            valid=valid,
            admissions=self._new_syntheses(step),
        )

    def _new_syntheses(self, step: int | None) -> list[dict[str, Any]]:
        """Syntheses run since the last batch, each logged as a `train_synthesis` event."""
        out: list[dict[str, Any]] = []
        for k, scorer in enumerate(self.scorers):
            done = scorer.synthesized
            for outcome in done[self._reported[k] :]:
                made_for = outcome.details.get("task") or outcome.details.get("signature")
                record = {
                    "step": step,
                    "tool": outcome.stored_as,
                    "task": made_for,
                    "admitted": outcome.admitted,
                    "method": outcome.method,
                    "held_out_accuracy": outcome.report.accuracy,
                    "held_out_auc": outcome.report.auc,
                    "reason": outcome.reason,
                }
                detail = {k: v for k, v in record.items() if k != "tool"}
                self.library.log_event("train_synthesis", outcome.stored_as, **detail)
                out.append(record)
            self._reported[k] = len(done)
        return out

    def close(self) -> None:
        for scorer in self.scorers:
            scorer.close()
        if self._owns_library:
            self.library.close()
