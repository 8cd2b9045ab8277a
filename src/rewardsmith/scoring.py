"""`score`: route every sample to its tool, score each tool's share as one batch, and
return the rewards in input order.

The tool for a sample is `task_map[sample.task]` when the map names its task, else `tool`.
With neither a tool nor a task map, the router picks the tool(s) for each sample (see
`rewardsmith.router`); a sample the router sends to "synthesize" is `not_applicable` with
the router's reason, unless the scorer synthesizes (`synthesize=True`: a gated new tool
scores it, see `rewardsmith.synth.session`). With a task map, a sample whose task the map
does not name gets no tool and is `not_applicable`. A router decision that names several weighted tools is scored by
a composite of them (`rewardsmith.combine`'s rule). A tool that raises or returns the wrong
number of rewards is a bug in that tool: its samples get status `error`; the rest of the
batch is unaffected.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

from rewardsmith.errors import ConfigError, RewardsmithError
from rewardsmith.library.store import Library
from rewardsmith.samples import as_samples
from rewardsmith.tools.base import score_batch
from rewardsmith.tools.composite import CompositeTool
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

if TYPE_CHECKING:
    from rewardsmith.router import Decision, Router
    from rewardsmith.synth.admission import SynthOutcome
    from rewardsmith.synth.session import SynthesisSession

log = logging.getLogger(__name__)

ToolChoice = str | RewardTool | None
# How `check_task_map` names samples without a `task` field.
NO_TASK = "(no task)"


def parse_task_map(text: str) -> dict[str, str]:
    """`"gsm8k=gsm8k,math500=math"` -> `{"gsm8k": "gsm8k", "math500": "math"}`."""
    mapping: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        task, sep, tool = part.partition("=")
        if not sep or not task.strip() or not tool.strip():
            raise ConfigError(f"bad task map entry {part!r}: expected TASK=TOOL")
        mapping[task.strip()] = tool.strip()
    return mapping


def check_task_map(
    mapping: Mapping[str, str], tasks: Iterable[str | None], *, has_default: bool
) -> dict[str, int]:
    """Check a task map against the `task` fields of a whole input (the CLI's file).

    A key that matches no task in the input is a typo that would silently leave that task
    unscored: raises `ConfigError` naming it and the tasks the input has. Returns the number
    of samples per task the map does not name (`"(no task)"` for samples without one) when
    there is no default tool for them (`has_default=False`); those samples will be
    `not_applicable`, and the caller warns once. Not used per batch (a trainer's batch need
    not hold every task of its map).
    """
    counts: dict[str, int] = defaultdict(int)
    for task in tasks:
        counts[task if task is not None else NO_TASK] += 1
    unknown = sorted(key for key in mapping if key not in counts)
    if unknown:
        present = ", ".join(f"{t} ({n})" for t, n in sorted(counts.items())[:20])
        raise ConfigError(
            f"--task-map key(s) {', '.join(map(repr, unknown))} match no task in the input; "
            f"its tasks (samples): {present}"
        )
    if has_default:
        return {}
    return {task: n for task, n in sorted(counts.items()) if task not in mapping}


@dataclass
class ToolTiming:
    """Seconds spent in each tool and how many samples it scored."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    samples: dict[str, int] = field(default_factory=lambda: defaultdict(int))


@dataclass(frozen=True)
class ScoreResult(Sequence[Reward]):
    """What `Scorer.score` returns: one `Reward` per sample, in order (the result is itself a
    sequence of them), the router's `Decision` per sample (None where a tool or task map
    chose), and the seconds attributed to each sample (its tool batch's time split evenly)."""

    rewards: list[Reward]
    decisions: list[Decision | None]
    seconds: list[float]

    def __len__(self) -> int:
        return len(self.rewards)

    @overload
    def __getitem__(self, index: int) -> Reward: ...

    @overload
    def __getitem__(self, index: slice) -> list[Reward]: ...

    def __getitem__(self, index: int | slice) -> Reward | list[Reward]:
        return self.rewards[index]

    def __iter__(self) -> Iterator[Reward]:
        return iter(self.rewards)


class Scorer:
    """Resolves tools once and scores batches; reuse one across batches (the CLI does)."""

    def __init__(
        self,
        tool: ToolChoice = None,
        task_map: Mapping[str, str] | None = None,
        library: Library | str | Path | None = None,
        *,
        router: Router | str | None = None,
        synthesize: bool = False,
        llm_fallback: bool = True,
        synth_backend: str = "offline",
    ) -> None:
        """`router`: a `Router`, or a backend name ("embedded", "llm", "rules") for the router
        built on first use; the router is used only when neither `tool` nor `task_map` is
        given (default backend: "embedded"). `synthesize`: samples the router sends to
        "synthesize" get a synthesized, gated tool (see `rewardsmith.synth.session`).
        `llm_fallback=False`: a router built here with the "llm" backend is strict (an
        endpoint that cannot be used raises instead of falling back, `rewardsmith.router.llm`).
        `synth_backend`: how CodeVerify writes a synthesized verifier, `offline` or `llm`."""
        self._owns_library = not isinstance(library, Library)
        self.library = library if isinstance(library, Library) else Library(library)
        self.default = self._resolve(tool) if tool is not None else None
        self.by_task = {task: self._resolve(name) for task, name in (task_map or {}).items()}
        self._router: Router | None = (
            router if router is not None and not isinstance(router, str) else None
        )
        self._router_backend = router if isinstance(router, str) else "embedded"
        self._owns_router = self._router is None
        self._llm_fallback = llm_fallback
        # The composite for each multi-tool router decision, built once.
        self._composites: dict[tuple[tuple[str, float], ...], RewardTool] = {}
        self.timing = ToolTiming()
        self._synthesis: SynthesisSession | None = None
        if synthesize:
            # synth loads math-verify and sympy (about a second): only when it is asked for.
            from rewardsmith.synth.session import SynthesisSession

            self._synthesis = SynthesisSession(self.library, backend=synth_backend)

    def _resolve(self, tool: str | RewardTool) -> RewardTool:
        return tool if isinstance(tool, RewardTool) else self.library.get(tool)

    def tool_for(self, sample: Sample) -> RewardTool | None:
        if sample.task is not None and sample.task in self.by_task:
            return self.by_task[sample.task]
        return self.default

    @property
    def synthesized(self) -> list[SynthOutcome]:
        """Every synthesis this scorer ran, in order (admitted or not); empty without
        `synthesize=True`."""
        return list(self._synthesis.outcomes) if self._synthesis else []

    @property
    def routing(self) -> bool:
        """True when neither a tool nor a task map was given: the router picks tools."""
        return self.default is None and not self.by_task

    @property
    def router(self) -> Router:
        """The router, built on first use (loading its embedding model takes seconds)."""
        if self._router is None:
            from rewardsmith.router import Router

            self._router = Router(
                self.library,
                self._router_backend,  # type: ignore[arg-type]
                llm_fallback=self._llm_fallback,
            )
        return self._router

    def score(self, samples: Iterable[Sample | Mapping[str, Any]]) -> ScoreResult:
        """One `Reward` per sample, in order, with the router's decisions and timings."""
        batch = as_samples(samples)
        rewards: list[Reward | None] = [None] * len(batch)
        decisions: list[Decision | None] = [None] * len(batch)
        if self.routing and batch:
            decisions = list(self.router.route(batch))
        synthesized = self._synthesis.resolve(batch, decisions) if self._synthesis else {}
        groups: dict[int, list[int]] = defaultdict(list)
        tools: dict[int, RewardTool] = {}
        for i, sample in enumerate(batch):
            chosen, unscored = synthesized.get(i) or self._choose(sample, decisions[i])
            if chosen is None:
                rewards[i] = unscored
                continue
            groups[id(chosen)].append(i)
            tools[id(chosen)] = chosen
        seconds = [0.0] * len(batch)
        for key, indices in groups.items():
            chosen = tools[key]
            start = time.perf_counter()
            scored = score_batch(chosen, [batch[i] for i in indices])
            for i, reward in zip(indices, scored, strict=True):
                rewards[i] = reward
            elapsed = time.perf_counter() - start
            for i in indices:
                seconds[i] = elapsed / len(indices)
            self.timing.seconds[chosen.spec.ref] += elapsed
            self.timing.samples[chosen.spec.ref] += len(indices)
        out: list[Reward] = []
        for i, maybe in enumerate(rewards):
            if maybe is None:  # a bug here, never a silently shorter list
                log.error("sample %d got no reward from the scorer", i)
                maybe = Reward(0.0, "error", reason="internal error: the sample was not scored")
            out.append(maybe)
        return ScoreResult(out, decisions, seconds)

    def _choose(
        self, sample: Sample, decision: Decision | None
    ) -> tuple[RewardTool | None, Reward | None]:
        """The tool for one sample, or None and the reward that says why it gets none."""
        if decision is None:
            chosen = self.tool_for(sample)
            if chosen is None:
                return None, Reward(None, "not_applicable", reason=self._unmapped(sample.task))
            return chosen, None
        if decision.action != "tool":
            why = (
                f"router: no library tool fits, synthesis requested ({decision.kind}): "
                f"{decision.why}"
            )
            return None, Reward(None, "not_applicable", reason=why)
        try:
            return self._decided_tool(decision), None
        except RewardsmithError as exc:  # a routed tool that cannot be built
            log.error("routed tool cannot be built: %s", exc)
            return None, Reward(0.0, "error", reason=f"routed tool unavailable: {exc}")

    def _unmapped(self, task: str | None) -> str:
        """Why a sample the task map does not cover gets no tool (the map names it)."""
        tasks = ", ".join(sorted(self.by_task)[:10]) + (", ..." if len(self.by_task) > 10 else "")
        if task is None:
            return (
                f"the sample has no `task` field and the task map ({tasks}) routes by task, "
                "with no default tool: add a `task` the map names, or pass a tool"
            )
        return (
            f"task {task!r} is not in the task map ({tasks}) and no default tool was given: "
            "add it to the map, or pass a tool"
        )

    def _decided_tool(self, decision: Decision) -> RewardTool:
        """The decision's tool; several tools become one weighted-sum composite."""
        if len(decision.tools) == 1:
            return self.library.get(decision.tools[0].tool)
        key = tuple((t.tool, t.weight) for t in decision.tools)
        if key not in self._composites:
            parts = [{"tool": t.tool, "weight": t.weight} for t in decision.tools]
            refs = "+".join(self.library.get(t.tool).spec.ref for t in decision.tools)
            spec = ToolSpec(name="routed", kind="composite", description=f"router: {refs}")
            self._composites[key] = CompositeTool(spec, parts, self.library.get, label=refs)
        return self._composites[key]

    def close(self) -> None:
        if self._router is not None and self._owns_router:
            self._router.close()
        if self._owns_library:
            self.library.close()


# Samples `score` hands the scorer at once when it reports progress: GRPO groups and tool
# pools stay busy, and the callback is called often enough to move a progress bar.
PROGRESS_CHUNK = 256

ProgressCallback = Callable[[int, int], None]


def score(
    samples: Iterable[Sample | Mapping[str, Any]],
    tool: ToolChoice = None,
    *,
    task_map: Mapping[str, str] | None = None,
    library: Library | str | Path | None = None,
    router: Router | str | None = None,
    progress: ProgressCallback | None = None,
) -> list[Reward]:
    """Score samples with one tool (`tool="math"`), a tool per task (`task_map`), or, with
    neither, the tool(s) the router picks per task signature (`router`: a `Router` or a
    backend name, default "embedded").

    `samples` are `Sample`s or dicts in the JSONL format; returns one `Reward` per sample, in
    order. `library` is a `Library` or a path to one (default: `~/.rewardsmith/library.db`).
    `progress(done, total)` is called after every `PROGRESS_CHUNK` samples, scored as one
    batch each (without it, all samples are one batch), e.g. to move a tqdm or rich bar. When done, one INFO line on the
    `rewardsmith.scoring` logger sums up: samples, seconds, mean reward, count per status.
    """
    batch = as_samples(samples)
    start = time.perf_counter()
    scorer = Scorer(tool, task_map, library, router=router)
    rewards: list[Reward] = []
    try:
        # Without a callback the whole input is one batch, as before (one call per tool).
        chunk = PROGRESS_CHUNK if progress is not None else max(len(batch), 1)
        for begin in range(0, len(batch), chunk):
            rewards.extend(scorer.score(batch[begin : begin + chunk]).rewards)
            if progress is not None:
                progress(len(rewards), len(batch))
        if progress is not None and not batch:
            progress(0, 0)
    finally:
        scorer.close()
    log.info("%s", summary_line(rewards, time.perf_counter() - start))
    return rewards


def summary_line(rewards: Sequence[Reward], seconds: float) -> str:
    """`scored 10000 samples in 14.6 s (685/s): mean reward 0.412; ok 9000, timeout 3, ...`."""
    counts: dict[str, int] = defaultdict(int)
    for reward in rewards:
        counts[reward.status] += 1
    scored = [r.score for r in rewards if r.score is not None]
    mean = f"{sum(scored) / len(scored):.3f}" if scored else "-"
    rate = f" ({len(rewards) / seconds:.0f}/s)" if seconds > 0 and rewards else ""
    statuses = ", ".join(f"{status} {n}" for status, n in sorted(counts.items())) or "none"
    return f"scored {len(rewards)} samples in {seconds:.1f} s{rate}: mean reward {mean}; {statuses}"
