"""`score`: route every sample to its tool, score each tool's share as one batch, and
return the rewards in input order.

The tool for a sample is `task_map[sample.task]` when the map names its task, else `tool`.
A sample that gets no tool is `not_applicable` (the router, a later capability, will fill
that gap). A tool that raises or returns the wrong number of rewards is a bug in that tool:
its samples get status `error`; the rest of the batch is unaffected.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.jsonl import as_samples
from rewardsmith.library.store import Library
from rewardsmith.types import Reward, RewardTool, Sample

log = logging.getLogger(__name__)

ToolChoice = str | RewardTool | None


def parse_task_map(text: str) -> dict[str, str]:
    """`"gsm8k=gsm8k,math500=math"` -> `{"gsm8k": "gsm8k", "math500": "math"}`."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        task, sep, tool = part.partition("=")
        if not sep or not task.strip() or not tool.strip():
            raise ConfigError(f"bad task map entry {part!r}: expected TASK=TOOL")
        mapping[task.strip()] = tool.strip()
    return mapping


@dataclass
class ToolTiming:
    """Seconds spent in each tool and how many samples it scored."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    samples: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Scorer:
    """Resolves tools once and scores batches; reuse one across batches (the CLI does)."""

    def __init__(
        self,
        tool: ToolChoice = None,
        task_map: Mapping[str, str] | None = None,
        library: Library | str | Path | None = None,
    ) -> None:
        self._owns_library = not isinstance(library, Library)
        self.library = library if isinstance(library, Library) else Library(library)
        self.default = self._resolve(tool) if tool is not None else None
        self.by_task = {task: self._resolve(name) for task, name in (task_map or {}).items()}
        self.timing = ToolTiming()
        #: Seconds attributed to each sample of the last `score` call (its tool batch's time
        #: split evenly), for per-task timing tables.
        self.last_seconds: list[float] = []

    def _resolve(self, tool: str | RewardTool) -> RewardTool:
        return tool if isinstance(tool, RewardTool) else self.library.get(tool)

    def tool_for(self, sample: Sample) -> RewardTool | None:
        if sample.task is not None and sample.task in self.by_task:
            return self.by_task[sample.task]
        return self.default

    def score(self, samples: Iterable[Sample | Mapping[str, Any]]) -> list[Reward]:
        batch = as_samples(samples)
        groups: dict[int, list[int]] = defaultdict(list)
        tools: dict[int, RewardTool] = {}
        rewards: list[Reward | None] = [None] * len(batch)
        for i, sample in enumerate(batch):
            chosen = self.tool_for(sample)
            if chosen is None:
                rewards[i] = Reward(
                    None,
                    "not_applicable",
                    reason=f"no tool for task {sample.task!r}: pass a tool or a task map",
                )
                continue
            groups[id(chosen)].append(i)
            tools[id(chosen)] = chosen
        seconds = [0.0] * len(batch)
        for key, indices in groups.items():
            chosen = tools[key]
            start = time.perf_counter()
            for i, reward in zip(
                indices, self._score_with(chosen, [batch[i] for i in indices]), strict=True
            ):
                rewards[i] = reward
            elapsed = time.perf_counter() - start
            for i in indices:
                seconds[i] = elapsed / len(indices)
            self.timing.seconds[chosen.spec.ref] += elapsed
            self.timing.samples[chosen.spec.ref] += len(indices)
        self.last_seconds = seconds
        return [r for r in rewards if r is not None]

    @staticmethod
    def _score_with(tool: RewardTool, samples: list[Sample]) -> list[Reward]:
        try:
            out = tool.score(samples)
            if len(out) != len(samples):
                raise RuntimeError(f"returned {len(out)} rewards for {len(samples)} samples")
        except Exception as exc:  # one broken tool must not take the batch down
            log.exception("tool %s failed on a batch of %d", tool.spec.ref, len(samples))
            reason = f"tool failed: {type(exc).__name__}: {exc}"
            return [Reward(0.0, "error", tool=tool.spec.ref, reason=reason) for _ in samples]
        return out

    def close(self) -> None:
        if self._owns_library:
            self.library.close()


def score(
    samples: Iterable[Sample | Mapping[str, Any]],
    tool: ToolChoice = None,
    *,
    task_map: Mapping[str, str] | None = None,
    library: Library | str | Path | None = None,
) -> list[Reward]:
    """Score samples with one tool (`tool="math"`) or a tool per task (`task_map`).

    `samples` are `Sample`s or dicts in the JSONL format; returns one `Reward` per sample, in
    order. `library` is a `Library` or a path to one (default: `~/.rewardsmith/library.db`).
    """
    scorer = Scorer(tool, task_map, library)
    try:
        return scorer.score(samples)
    finally:
        scorer.close()
