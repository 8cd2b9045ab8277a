"""A generated reward function, admitted by the 4-stage check, run on batches in the sandbox.

The tool's config carries the source: `{"factory":
"rewardsmith.tools.reward_fn:RewardFunctionTool", "params": {"source": "def reward(...)..."}}`.
Construction runs `rewardsmith.sandbox.check_reward_code` and refuses code that is not
admitted (`ConfigError` naming the stage and reason), so a library never stores a reward
function that failed the check. An admitted source is checked once per process for the
same run settings (`checked_report`): one source is built several times (synthesis gates
it, the library validates it on `add`, then builds it to score; search checks a candidate,
then scores and trains with it), and each build reuses that one report. Scoring sends each
batch, in chunks, to the sandbox, where the function runs in the restricted namespace; a run
that fails scores its chunk 0.0 with status `error` or `timeout`; a score outside the
declared bounds is clipped and the reason says so.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits
from rewardsmith.sandbox.probe import (
    CHUNK_SIZE,
    ChannelFailure,
    CheckReport,
    check_reward_code,
    parse_reward_records,
    reward_job,
)
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

# Check reports kept, newest last: a search run checks a few hundred candidates.
MAX_CHECKED = 512
# (SHA-256 of the exact source, bounds given, limits, chunk size, workers) -> its admission.
# Everything that decides what the check ran is in the key, so a reused report is one of
# exactly the code and settings that then run. In this process's memory only: no file,
# library row or run folder can mark code as checked.
_checked: OrderedDict[tuple[Any, ...], CheckReport] = OrderedDict()
_checked_lock = threading.Lock()


def run_limits(timeout: float, memory_mb: int, wall_seconds: float | None) -> SandboxLimits:
    """The limits a reward-function tool's runs get (and its check runs under)."""
    return SandboxLimits(
        wall_seconds=timeout if wall_seconds is None else wall_seconds,
        cpu_seconds=timeout,
        memory_mb=memory_mb,
    )


def checked_report(
    source: str,
    bounds: tuple[float, float] | None,
    limits: SandboxLimits,
    *,
    chunk_size: int = CHUNK_SIZE,
    workers: int = 1,
    sandbox: Callable[[], Sandbox] | None = None,
) -> CheckReport:
    """The 4-stage check's report for `source` run with these settings: the admitting one this
    process already has, else a fresh check (in `sandbox()`, or a pool of `workers` started
    and closed for it). Only admissions are kept: a rejection may come from the machine (a
    run timed out under load), so a rejected source is checked again when built again."""
    key = (hashlib.sha256(source.encode()).hexdigest(), bounds, limits, chunk_size, workers)
    with _checked_lock:
        report = _checked.get(key)
        if report is not None:
            _checked.move_to_end(key)
            return report
    own = None if sandbox is not None else Sandbox(workers, limits)
    try:
        report = check_reward_code(
            source,
            bounds=bounds,
            sandbox=sandbox() if sandbox is not None else own,
            limits=limits,
            chunk_size=chunk_size,
        )
    finally:
        if own is not None:
            own.close()
    if report.admitted:
        with _checked_lock:
            _checked[key] = report
            while len(_checked) > MAX_CHECKED:
                _checked.popitem(last=False)
    return report


def reward_code_report(
    source: str,
    bounds: Sequence[float] | None = None,
    timeout: float = 10.0,
    memory_mb: int = 256,
    workers: int = 1,
    wall_seconds: float | None = None,
) -> CheckReport:
    """The report `RewardFunctionTool(spec, source, ...)` with these parameters gets (the
    same key, so building that tool afterwards runs no second check)."""
    given = (float(bounds[0]), float(bounds[1])) if bounds is not None else None
    limits = run_limits(timeout, memory_mb, wall_seconds)
    return checked_report(
        source, given, limits, chunk_size=RewardFunctionTool.chunk_size, workers=workers
    )


class RewardFunctionTool(RewardTool):
    """Runs an admitted `def reward(completions, references, prompts)` in the sandbox."""

    # Samples per sandbox run: big enough to amortize the run, small enough to spread over
    # workers. The 4-stage check probes in runs of this size too.
    chunk_size = CHUNK_SIZE

    def __init__(
        self,
        spec: ToolSpec,
        source: str,
        bounds: Sequence[float] | None = None,
        timeout: float = 10.0,
        memory_mb: int = 256,
        workers: int = 1,
        wall_seconds: float | None = None,
    ) -> None:
        # `timeout` is the CPU limit of one run and, unless `wall_seconds` is given, its
        # wall-clock limit too. The limits are fixed here: the code is checked in a pool of
        # the size and limits of the one that scores, at the same chunk size, so it cannot
        # tell the check from production.
        self.spec = spec
        self.source = source
        self.limits = run_limits(timeout, memory_mb, wall_seconds)
        self.workers = workers
        self._sandbox: Sandbox | None = None
        given = (float(bounds[0]), float(bounds[1])) if bounds is not None else None
        report = checked_report(
            source,
            given,
            self.limits,
            chunk_size=self.chunk_size,
            workers=workers,
            sandbox=lambda: self.sandbox,
        )
        if not report.admitted:
            self.close()
            raise ConfigError(f"tool {spec.name!r}: reward code not admitted: {report.reason}")
        self.report = report
        self.bounds = report.bounds

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(self.workers, self.limits)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __getstate__(self) -> dict[str, object]:
        # Picklable into worker processes: the copy starts its own pool on first use.
        return {**self.__dict__, "_sandbox": None}

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        size = self.chunk_size
        chunks = [samples[i : i + size] for i in range(0, len(samples), size)]
        jobs = [
            reward_job(
                self.source,
                [
                    {
                        "completions": [s.completion for s in chunk],
                        "references": [s.reference for s in chunk],
                        "prompts": [s.prompt_text() for s in chunk],
                    }
                ],
            )
            for chunk in chunks
        ]
        out: list[Reward] = []
        for chunk, job, result in zip(chunks, jobs, self.sandbox.map(jobs), strict=True):
            out.extend(self._chunk_rewards(chunk, job["nonce"], result))
        return out

    def _chunk_rewards(
        self, chunk: Sequence[Sample], nonce: str, result: ExecutionResult
    ) -> list[Reward]:
        records = parse_reward_records(result, nonce, 1)
        if result.status != "ok" or isinstance(records, ChannelFailure):
            status: Status = "timeout" if result.status == "timeout" else "error"
            return [make_reward(self.spec, 0.0, status, _failure(result, records)) for _ in chunk]
        value = records[0]
        if isinstance(value, dict) or len(value) != len(chunk):
            reason = (
                f"the reward function failed: {value.get('error', 'a bad return value')}"
                if isinstance(value, dict)
                else f"the reward function returned {len(value)} scores for {len(chunk)} "
                "completions"
            )
            return [make_reward(self.spec, 0.0, "error", reason) for _ in chunk]
        low, high = self.bounds
        rewards = []
        for v in value:
            if isinstance(v, str):
                reason = f"the reward function returned a non-finite score ({v})"
                rewards.append(make_reward(self.spec, 0.0, "error", reason))
            elif not low <= v <= high:
                clipped = min(max(v, low), high)
                rewards.append(make_reward(self.spec, clipped, reason=f"clipped {v} to bounds"))
            else:
                rewards.append(make_reward(self.spec, float(v)))
        return rewards


def _failure(result: ExecutionResult, records: list[Any] | ChannelFailure) -> str:
    """What failed, for a chunk that has no scores: the run (how it ended) or its records."""
    if isinstance(records, ChannelFailure) and records.load:
        return f"the reward function failed to load: {records.reason}"
    if result.status != "ok":
        reason = f"the reward function's run ended with status {result.status}"
        reason += f": {result.reason}" if result.reason else ""
    else:
        reason = "the reward function's run ended without its scores"
    if isinstance(records, ChannelFailure):
        reason += f" ({records.reason})"
    return reason
