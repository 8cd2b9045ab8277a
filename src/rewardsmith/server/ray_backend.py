"""Ray scale-out: sandbox workers and reward-model replicas as Ray actors.

`rewardsmith score --ray [ADDRESS]` and `rewardsmith serve --ray [ADDRESS]` open the tool
library as a `RayLibrary`: every tool it builds is the same tool as in-process, except that
a `code` tool's sandbox runs in `SandboxActor`s (each a real `rewardsmith.sandbox.Sandbox`
with one warm zygote, on whatever node Ray places it) and a `model` tool's network runs in
`ModelActor` replicas. The code that computes each reward is the same in both paths, so the
results are identical; what changes is where it runs and how much of it runs at once.

Actors are owned by the process that builds the tool (the CLI, or each scoring worker of the
server) and end with it; a worker killed at a deadline takes its actors along.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.errors import MissingDependencyError
from rewardsmith.library.store import Library
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits
from rewardsmith.types import RewardTool

log = logging.getLogger(__name__)

#: Reward-model replicas per model tool.
MODEL_REPLICAS = int(os.environ.get("REWARDSMITH_RAY_MODEL_REPLICAS", "2"))
#: Logical CPUs each actor asks Ray for.
ACTOR_CPUS = float(os.environ.get("REWARDSMITH_RAY_ACTOR_CPUS", "1"))


def _ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingDependencyError("ray", "ray") from exc
    return ray


def start_ray(address: str | None = None, num_cpus: int | None = None) -> str:
    """Join the Ray cluster at `address`, or start a local one (`num_cpus` logical CPUs);
    returns the address other processes join it with."""
    ray = _ray()
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "logging_level": logging.WARNING}
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(num_cpus=num_cpus, **kwargs)
    return str(ray.get_runtime_context().gcs_address)


def connect(address: str) -> None:
    """Join an already running cluster from another process (a scoring worker)."""
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address, logging_level=logging.WARNING)


class SandboxActor:
    """A sandbox worker: one warm zygote, runs one job at a time."""

    def __init__(self, limits: SandboxLimits, preload: Sequence[str]) -> None:
        self.sandbox = Sandbox(1, limits, preload)

    def run_job(self, job: Mapping[str, Any], limits: SandboxLimits | None) -> ExecutionResult:
        return self.sandbox.run_job(job, limits)


class ModelActor:
    """A reward-model replica: the model loaded once, scoring batches of texts."""

    def __init__(self, path: str, device: str, windows: Any, threads: int | None) -> None:
        from rewardsmith.models.loading import torch_threads
        from rewardsmith.rm.model import load_scorer

        torch_threads(threads)
        self.scorer = load_scorer(path, device=device, windows=windows)

    def score_texts(
        self, prompts: Sequence[str], completions: Sequence[str], batch_size: int
    ) -> list[float]:
        return list(self.scorer.score_texts(prompts, completions, batch_size))


class RaySandbox:
    """What `CodeTool` needs of a sandbox (`map`, `close`), with runs on `SandboxActor`s."""

    def __init__(self, actors: int, limits: SandboxLimits, preload: Sequence[str]) -> None:
        ray = _ray()
        from ray.util import ActorPool

        remote = ray.remote(num_cpus=ACTOR_CPUS)(SandboxActor)
        self.limits = limits
        self._actors = [remote.remote(limits, tuple(preload)) for _ in range(actors)]
        self._pool = ActorPool(self._actors)

    def map(
        self, jobs: Sequence[Mapping[str, Any]], limits: SandboxLimits | None = None
    ) -> list[ExecutionResult]:
        """Run jobs over the actors, as many at once as there are actors; input order."""
        pending = list(jobs)
        return list(self._pool.map(lambda actor, job: actor.run_job.remote(job, limits), pending))

    def close(self) -> None:
        ray = _ray()
        for actor in self._actors:
            ray.kill(actor)
        self._actors = []


class RayModelScorer:
    """What `ModelTool` needs of a loaded model (`score_texts`), answered by replicas. Each
    call goes whole to one replica (the same batch as in-process, so the same numbers); the
    calls take the replicas in turn."""

    def __init__(
        self, replicas: int, path: str, device: str, windows: Any, threads: int | None
    ) -> None:
        remote = _ray().remote(num_cpus=ACTOR_CPUS)(ModelActor)
        self._actors = [remote.remote(path, device, windows, threads) for _ in range(replicas)]
        self._turn = 0

    def score_texts(
        self, prompts: Sequence[str], completions: Sequence[str], batch_size: int = 16
    ) -> list[float]:
        actor = self._actors[self._turn % len(self._actors)]
        self._turn += 1
        values = actor.score_texts.remote(list(prompts), list(completions), batch_size)
        return list(_ray().get(values))


def attach(tool: RewardTool) -> RewardTool:
    """Move `tool`'s sandbox or model onto Ray actors (other tools run as they are)."""
    from rewardsmith.tools.code import CodeTool
    from rewardsmith.tools.model import ModelTool

    if isinstance(tool, CodeTool) and not isinstance(tool._sandbox, RaySandbox):
        # CodeTool builds its Sandbox on first use from `_sandbox`; this one is Ray's.
        tool._sandbox = RaySandbox(tool.workers, tool.limits, tool.preload)  # type: ignore[assignment]
    elif isinstance(tool, ModelTool) and not isinstance(tool._scorer, RayModelScorer):
        from rewardsmith.rm.model import Windows, read_rbs_config

        # The windows ModelTool.scorer() would settle on, so clipping is the same.
        saved = Windows(**read_rbs_config(tool.path).get("windows", {}))
        windows = Windows(
            tool.prompt_max_tokens or saved.prompt_max_tokens,
            tool.completion_max_tokens or saved.completion_max_tokens,
            tool.completion_side or saved.completion_side,  # type: ignore[arg-type]
        )
        tool._reads_end = windows.completion_side == "end"
        tool._scorer = RayModelScorer(
            MODEL_REPLICAS, str(tool.path), tool.device, windows, tool.threads
        )
    return tool


class RayLibrary(Library):
    """A `Library` whose tools run their sandboxes and models on Ray actors (`attach`)."""

    def get(self, ref: str) -> RewardTool:
        return attach(super().get(ref))
