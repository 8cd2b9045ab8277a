"""`score`: route every sample to its tool, score each tool's share as one batch, and
return the rewards in input order.

The tool for a sample is `task_map[sample.task]` when the map names its task, else `tool`.
With neither a tool nor a task map, the router picks the tool(s) for each sample (see
`rewardsmith.router`); a sample the router sends to "synthesize" is `not_applicable` with
the router's reason. With a task map, a sample whose task the map does not name gets no
tool and is `not_applicable`. A tool that raises or returns the wrong number of rewards is a bug in that tool:
its samples get status `error`; the rest of the batch is unaffected.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rewardsmith.errors import ConfigError, RewardsmithError
from rewardsmith.jsonl import as_samples
from rewardsmith.library.store import Library
from rewardsmith.types import Reward, RewardTool, Sample

if TYPE_CHECKING:
    from rewardsmith.router import Decision, Router

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
        *,
        router: Router | str | None = None,
    ) -> None:
        """`router`: a `Router`, or a backend name ("embedded", "llm", "rules") for the router
        built on first use; the router is used only when neither `tool` nor `task_map` is
        given (default backend: "embedded")."""
        self._owns_library = not isinstance(library, Library)
        self.library = library if isinstance(library, Library) else Library(library)
        self.default = self._resolve(tool) if tool is not None else None
        self.by_task = {task: self._resolve(name) for task, name in (task_map or {}).items()}
        self._router: Router | None = (
            router if router is not None and not isinstance(router, str) else None
        )
        self._router_backend = router if isinstance(router, str) else "embedded"
        self._owns_router = self._router is None
        #: The router's decision for each sample of the last `score` call (None: not routed).
        self.last_decisions: list[Decision | None] = []
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

    @property
    def routing(self) -> bool:
        """True when neither a tool nor a task map was given: the router picks tools."""
        return self.default is None and not self.by_task

    @property
    def router(self) -> Router:
        """The router, built on first use (loading its embedding model takes seconds)."""
        if self._router is None:
            from rewardsmith.router import Router

            self._router = Router(self.library, self._router_backend)  # type: ignore[arg-type]
        return self._router

    def score(self, samples: Iterable[Sample | Mapping[str, Any]]) -> list[Reward]:
        batch = as_samples(samples)
        groups: dict[int, list[int]] = defaultdict(list)
        tools: dict[int, RewardTool] = {}
        rewards: list[Reward | None] = [None] * len(batch)
        decisions: list[Decision | None] = [None] * len(batch)
        if self.routing and batch:
            decisions = list(self.router.route(batch))
        # Samples routed to several weighted tools are scored by each, then combined.
        combined: dict[int, list[tuple[RewardTool, float]]] = {}
        for i, sample in enumerate(batch):
            decision = decisions[i]
            if decision is not None:
                if decision.action != "tool":
                    rewards[i] = Reward(
                        None,
                        "not_applicable",
                        reason=f"router: no library tool fits, synthesis requested "
                        f"({decision.kind}): {decision.why}",
                    )
                    continue
                try:
                    parts = [(self.library.get(t.tool), t.weight) for t in decision.tools]
                except RewardsmithError as exc:  # a routed tool that cannot be built
                    log.error("routed tool for sample %d cannot be built: %s", i, exc)
                    rewards[i] = Reward(0.0, "error", reason=f"routed tool unavailable: {exc}")
                    continue
                if len(parts) > 1:
                    combined[i] = parts
                    for part, _ in parts:
                        groups[id(part)].append(i)
                        tools[id(part)] = part
                    continue
                chosen: RewardTool | None = parts[0][0]
            else:
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
        by_part: dict[tuple[int, str], Reward] = {}
        for key, indices in groups.items():
            chosen = tools[key]
            start = time.perf_counter()
            for i, reward in zip(
                indices, self._score_with(chosen, [batch[i] for i in indices]), strict=True
            ):
                if i in combined:
                    by_part[(i, chosen.spec.ref)] = reward
                else:
                    rewards[i] = reward
            elapsed = time.perf_counter() - start
            for i in indices:
                seconds[i] = elapsed / len(indices)
            self.timing.seconds[chosen.spec.ref] += elapsed
            self.timing.samples[chosen.spec.ref] += len(indices)
        for i, parts in combined.items():
            rewards[i] = combine_rewards([(by_part[(i, t.spec.ref)], w) for t, w in parts])
        self.last_seconds = seconds
        self.last_decisions = decisions
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
        if self._router is not None and self._owns_router:
            self._router.close()
        if self._owns_library:
            self.library.close()


def combine_rewards(parts: list[tuple[Reward, float]]) -> Reward:
    """A weighted sum of several tools' rewards for one sample (a router decision with more
    than one tool). The first part is the primary tool: when it did not score `ok`, its
    reward is returned as is; another part that did not score counts as 0."""
    primary = parts[0][0]
    if primary.status != "ok" or primary.score is None:
        return primary
    total = sum(
        w * (r.score if r.status == "ok" and r.score is not None else 0.0) for r, w in parts
    )
    components = {r.tool: (r.score or 0.0) for r, _ in parts}
    tools = "+".join(r.tool for r, _ in parts)
    reasons = "; ".join(f"{r.tool} x{w:g}: {r.reason}" for r, w in parts if r.reason)
    return Reward(total, "ok", components, tools, reasons)


def score(
    samples: Iterable[Sample | Mapping[str, Any]],
    tool: ToolChoice = None,
    *,
    task_map: Mapping[str, str] | None = None,
    library: Library | str | Path | None = None,
    router: Router | str | None = None,
) -> list[Reward]:
    """Score samples with one tool (`tool="math"`), a tool per task (`task_map`), or, with
    neither, the tool(s) the router picks per task signature (`router`: a `Router` or a
    backend name, default "embedded").

    `samples` are `Sample`s or dicts in the JSONL format; returns one `Reward` per sample, in
    order. `library` is a `Library` or a path to one (default: `~/.rewardsmith/library.db`).
    """
    scorer = Scorer(tool, task_map, library, router=router)
    try:
        return scorer.score(samples)
    finally:
        scorer.close()
