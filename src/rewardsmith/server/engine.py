"""Scoring with a per-request deadline that holds for any tool.

A request's batch first runs whole on one worker (`workers.WorkerPool`), as `rewardsmith
score` would score it, for at most `SPLIT_FRACTION` of the time left to its deadline. Almost
every batch ends there. A batch that overruns (a sample hangs, or the batch is simply slow)
has its worker killed and replaced, and falls back to per-sample scoring: every sample is
sent on its own, spread over the workers, until the deadline. A sample still unscored at the
deadline (its worker is killed too) is `timeout`; one whose worker crashed is `error`. So
one hanging sample costs its batch the deadline, never its other rewards, and whatever hung
is stopped. Tools that bound their own work (the math tool's per-step deadlines, the
sandbox's wall-clock limit) answer `timeout` themselves, without this.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rewardsmith.errors import ConfigError, RewardsmithError
from rewardsmith.library.registry import allowed_factory
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.rollout_log import RolloutLog
from rewardsmith.router.embedder import model_modules
from rewardsmith.server.config import ServerConfig
from rewardsmith.server.jobs import Reply, RequestJob, RouteJob, TaskMap, score_job
from rewardsmith.server.payloads import (
    Counts,
    FieldError,
    Kind,
    Location,
    RequestProblem,
    check_tools,
    counts,
    parse,
    render,
    request_rows,
)
from rewardsmith.server.workers import ScorerSpec, WorkerPool
from rewardsmith.types import Reward, Sample

# The whole batch gets this share of the time to the deadline; per-sample scoring the rest.
SPLIT_FRACTION = 0.5


class Unavailable(RewardsmithError):
    """The server cannot take the request now (no worker in time): a 503."""


class RequestRefused(RewardsmithError):
    """A body that does not validate (422) or lists too many samples (413)."""

    def __init__(self, problem: RequestProblem) -> None:
        self.problem = problem
        super().__init__(problem.message or "invalid request")


@dataclass(frozen=True)
class _Call:
    """One request's scoring choice as workers take it (None, None: the server's), its
    deadline, and the tool names behind it (for the rewards of unscored samples)."""

    tool: str | None
    task_map: TaskMap | None
    deadline: float
    tool_name: str | None
    tool_map: Mapping[str, str]


@dataclass
class Outcome:
    """A request's answer: the response body, the (tool, status) counts of its rewards, and
    how many samples hit the server's deadline (for the metrics)."""

    body: bytes
    counts: Counts
    deadline_timeouts: int = 0


class ScoringEngine:
    """The server's scoring: a worker pool, tool checks, deadlines."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.library = Library(config.library)
        self.spec = ScorerSpec(
            library=str(self.library.path),
            tool=config.tool,
            task_map=tuple(sorted(config.task_map.items())),
            router=config.router,
            synthesize=config.synthesize,
            ray_address=config.ray_address or "",
            max_batch=config.max_batch,
            request_log=config.request_log or "",
            ray_env=tuple((k, v) for k, v in os.environ.items() if k.startswith("RAY_"))
            if config.ray_address
            else (),
        )
        self.pool = WorkerPool(self.spec, config.workers, preload=self._factory_modules())
        self.ready = False
        # The workers append scored requests themselves; this one writes the per-sample path's.
        self.request_log = RolloutLog(config.request_log) if config.request_log else None

    def _factory_modules(self) -> list[str]:
        """The modules that implement the configured tools (unknown tools, and factories the
        library would refuse: none; preloading one would run its code); when the server
        routes, the router and what its embedding model imports (onnxruntime, or torch and
        transformers: seconds each worker would otherwise spend on its own)."""
        modules = []
        if not self.config.tool and not self.config.task_map and self.config.router != "rules":
            modules += ["rewardsmith.router.router", *model_modules()]
        for ref in [self.config.tool, *self.config.task_map.values()]:
            if not ref:
                continue
            try:
                factory = self.library.record(*parse_tool_ref(ref)).config.get("factory", "")
            except RewardsmithError:
                continue
            if allowed_factory(factory):
                modules.append(factory.partition(":")[0])
        return modules

    def check_startup(self) -> None:
        """Raise `FieldError` when a configured tool is unknown or retired."""
        self.check_tools(self.config.tool, self.config.task_map, ("--tool",), ("--task-map",))

    async def start(self) -> None:
        """Check the configured tools and start (and warm) the workers."""
        self.check_startup()
        await self.pool.start()
        self.ready = True

    async def close(self) -> None:
        self.ready = False
        await self.pool.close()
        self.library.close()
        if self.request_log is not None:
            self.request_log.close()

    # -- checks ---------------------------------------------------------------------------

    def check_tools(
        self,
        tool: str | None,
        task_map: Mapping[str, str] | None,
        tool_loc: Location = ("body", "tool"),
        map_loc: Location = ("body", "task_map"),
    ) -> None:
        """Raise `FieldError` naming the field when a tool is unknown or retired."""
        check_tools(self.library, tool, task_map, tool_loc, map_loc)

    def tool_ref(self, sample: Sample, tool: str | None, task_map: Mapping[str, str]) -> str:
        """`name@version` of the tool that scores `sample` ("" when the router picks)."""
        ref = task_map.get(sample.task) if sample.task is not None else None
        ref = ref or tool
        if not ref:
            return ""
        try:
            return self.library.record(*parse_tool_ref(ref)).spec.ref
        except RewardsmithError:
            return ref

    # -- scoring --------------------------------------------------------------------------

    async def score_request(
        self, kind: Kind, body: bytes, task: str | None = None, url_tool: str | None = None
    ) -> Outcome:
        """Answer a request body (see the module docstring): a worker validates it, scores
        it and writes the response (`payloads`); on the fallback path the body is read here
        and its samples scored one by one. Raises `RequestRefused` / `FieldError` for a body
        the server cannot take."""
        deadline = time.monotonic() + self.config.deadline_seconds
        reply = await self.pool.call(
            RequestJob(kind, body, task, url_tool), deadline, run_fraction=SPLIT_FRACTION
        )
        if reply.kind == "ok":
            if isinstance(reply.value, RequestProblem):
                raise RequestRefused(reply.value)
            data, tally = reply.value
            return Outcome(data, tally)
        self._raise_for(reply)
        parsed = parse(kind, body, self.library, self.config.max_batch, task, url_tool)
        if isinstance(parsed, RequestProblem):
            raise RequestRefused(parsed)
        call = self._call(parsed.tool, parsed.task_map, deadline)
        if len(parsed.samples) == 1:
            rewards = [self._unscored(parsed.samples[0], reply, call)]
        else:
            rewards = await self._one_by_one(parsed.samples, call)
        late = sum(r.status == "timeout" and r.reason.startswith(_DEADLINE) for r in rewards)
        if self.request_log is not None:
            self.request_log.write(request_rows(kind, parsed.samples, rewards))
        return Outcome(render(kind, rewards), counts(rewards), late)

    def _call(self, tool: str | None, task_map: TaskMap | None, deadline: float) -> _Call:
        if tool is None and task_map is None:  # the server's choice, which workers hold
            return _Call(None, None, deadline, self.config.tool, dict(self.config.task_map))
        return _Call(tool, task_map, deadline, tool, dict(task_map or ()))

    async def _one_by_one(self, samples: Sequence[Sample], call: _Call) -> list[Reward]:
        replies = await asyncio.gather(
            *(
                self.pool.call(score_job([s], call.tool, call.task_map), call.deadline)
                for s in samples
            )
        )
        rewards: list[Reward] = []
        for sample, reply in zip(samples, replies, strict=True):
            if reply.kind == "ok" and len(reply.value) == 1:
                rewards.append(Reward.from_dict(reply.value[0]))
            else:
                self._raise_for(reply)
                rewards.append(self._unscored(sample, reply, call))
        return rewards

    async def route(self, samples: Sequence[Sample]) -> list[dict[str, Any]]:
        """The router's decision for each sample (as `rewardsmith route` writes it)."""
        if not samples:
            return []
        deadline = time.monotonic() + self.config.deadline_seconds
        reply = await self.pool.call(RouteJob(list(samples)), deadline)
        if reply.kind == "ok":
            return list(reply.value)
        self._raise_for(reply)
        raise Unavailable(f"routing did not finish ({reply.kind}): {reply.value or 'try again'}")

    @staticmethod
    def _raise_for(reply: Reply) -> None:
        if reply.kind == "config":
            raise ConfigError(str(reply.value))
        if reply.kind == "field":
            location, message = reply.value
            raise FieldError(tuple(location), message)

    def _unscored(self, sample: Sample, reply: Reply, call: _Call) -> Reward:
        ref = self.tool_ref(sample, call.tool_name, call.tool_map)
        seconds = f"{self.config.deadline_seconds:g}"
        if reply.kind in ("timeout", "busy"):
            why = f"{_DEADLINE} of {seconds} s" + (
                " (no scoring worker was free)" if reply.kind == "busy" else ""
            )
            return Reward(0.0, "timeout", tool=ref, reason=why)
        if reply.kind == "died":
            why = f"the scoring worker crashed on this sample ({reply.value}); it was restarted"
            return Reward(0.0, "error", tool=ref, reason=why)
        return Reward(0.0, "error", tool=ref, reason=f"scoring failed: {reply.value}")


_DEADLINE = "not scored within the server's deadline"
