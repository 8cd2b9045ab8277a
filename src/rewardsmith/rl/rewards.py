"""Rewards for GRPO rollouts: one or more rewardsmith tools (or composites), weighted and summed.

A tool is a library name (`gsm8k`, `math@2`, `gsm8k_with_format`), a `RewardTool`, or
`router` / `router:BACKEND` (`embedded`, `llm`, `rules`): the router picks the tool(s) for each
sample, as `rewardsmith score` does without `--tool`.

Each tool scores the whole rollout batch once through a `Scorer`; the weighted sum follows
the one rule of `rewardsmith.combine` (a `timeout` / `error` part counts 0, a part that does
not apply is left out, an invalid reference makes the whole sum unscored). A completion whose
sum is unscored (None) gets 0 as its GRPO reward and is counted in the metrics
(`reward/total/not_scored_frac`). Every tool's mean and every component's mean are reported,
so composites such as `gsm8k_with_format` show their parts, and so are the per-task metrics
of `rewardsmith.reward_metrics` (`rewardsmith/<task>/<tool>/mean`, `.../not_scored_frac`,
`.../failed_frac`) of every tool.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rewardsmith.combine import Weighted, combine, component_means
from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library
from rewardsmith.reward_metrics import task_metrics
from rewardsmith.rollout_log import rollout_record
from rewardsmith.scoring import Scorer
from rewardsmith.types import Reward, RewardTool, Sample

ToolRef = str | RewardTool
#: The reward name that hands each sample to the router instead of a fixed tool.
ROUTER = "router"


def parse_rewards(text: str) -> list[str]:
    """`"gsm8k,format_tags"` -> `["gsm8k", "format_tags"]`."""
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise ConfigError("--reward needs at least one tool, e.g. --reward gsm8k,format_tags")
    return names


def tool_name(tool: ToolRef) -> str:
    return tool if isinstance(tool, str) else tool.spec.name


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
    ) -> None:
        if not tools:
            raise ConfigError("GRPO needs at least one reward tool")
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

    def _scorer(self, tool: ToolRef) -> Scorer:
        if isinstance(tool, str) and (tool == ROUTER or tool.startswith(ROUTER + ":")):
            backend = tool.partition(":")[2] or "embedded"
            return Scorer(None, library=self.library, router=backend)
        return Scorer(tool, library=self.library)

    def score(
        self,
        prompts: Sequence[str],
        completions: Sequence[str],
        references: Sequence[str | None],
        tasks: Sequence[str | None] | None = None,
    ) -> ScoredBatch:
        start = time.perf_counter()
        task_list = list(tasks) if tasks is not None else [None] * len(completions)
        # The task keys the metrics and rollout lines; the tools score without it, as they
        # always have (a router reward would read it as a hint).
        samples = [
            Sample(completion=c, prompt=p, reference=r)
            for p, c, r in zip(prompts, completions, references, strict=True)
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
        unscored = sum(c.score is None for c in combined)
        if unscored:
            metrics["reward/total/not_scored_frac"] = unscored / n
        logged = [replace(s, task=t) for s, t in zip(samples, task_list, strict=True)]
        return ScoredBatch(total, per_tool, metrics, time.perf_counter() - start, combined, logged)

    def close(self) -> None:
        for scorer in self.scorers:
            scorer.close()
        if self._owns_library:
            self.library.close()
