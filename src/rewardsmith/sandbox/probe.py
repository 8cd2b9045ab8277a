"""The 4-stage admission check for generated reward functions, and running admitted ones.

Generated code (`def reward(completions, references=None, prompts=None, **kw) -> list[float]`,
from CodeVerify or the reward-function search) runs only after `check_reward_code` admits it.
The stages follow the search-driven reward-design paper's sandbox check:

1. static: the AST policy of `rewardsmith.sandbox.policy` (import allowlist, no dunder
   escapes, no eval/exec/open/compile/getattr...);
2. locked execution: the code runs only in the process sandbox (limits, no network, empty
   directory); a run that times out, exhausts memory or dies fails here;
3. restricted namespace: inside the sandbox the module executes with safe builtins and the
   import allowlist only, and must define a callable `reward`;
4. probe: `reward` is called twice on a probe batch and must return, both times, the same
   list of finite floats, one per completion, within the declared bounds.

Bounds come from a module-level literal `BOUNDS = (low, high)` in the code, else the
`bounds` argument, else `DEFAULT_BOUNDS`. Each rejection names its stage and reason.
"""

from __future__ import annotations

import ast
import json
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rewardsmith.sandbox.policy import static_check
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits, default_sandbox

STAGE_NAMES = {1: "static", 2: "locked execution", 3: "restricted namespace", 4: "probe"}
DEFAULT_BOUNDS = (-1.0, 1.0)
# Probe calls are small: a reward function that needs more than this is not admitted.
PROBE_LIMITS = SandboxLimits(wall_seconds=5.0, cpu_seconds=5.0, memory_mb=256)

# Completions of the shapes a reward function meets in training: right, wrong, empty, long,
# non-ASCII, code, tags. References may be None, as for format rewards.
PROBE_BATCH: Mapping[str, Sequence[Any]] = {
    "completions": [
        "The answer is 42.",
        "<think>2 + 2 = 4</think> The answer is \\boxed{4}.",
        "",
        "I am not sure.",
        "def f(x):\n    return x + 1",
        "Die Antwort ist 7. ✓",
        "<thinking>steps</thinking><solution>12</solution>",
        "word " * 400,
    ],
    "references": ["42", "4", "3", None, "f(1) == 2", "7", "12", "1"],
    "prompts": [
        "What is 6 * 7?",
        "What is 2 + 2?",
        "What is 1 + 2?",
        "Say something.",
        "Write f that adds one.",
        "Was ist 3 + 4?",
        "What is 3 * 4?",
        "Count to one.",
    ],
}


@dataclass(frozen=True)
class StageResult:
    """The outcome of one stage."""

    stage: int
    name: str
    passed: bool
    reason: str = ""


@dataclass(frozen=True)
class CheckReport:
    """What `check_reward_code` found: admitted or not, and every stage that ran."""

    admitted: bool
    stages: tuple[StageResult, ...]
    bounds: tuple[float, float] = DEFAULT_BOUNDS
    probe_scores: tuple[float, ...] = ()

    @property
    def failed_stage(self) -> StageResult | None:
        return next((s for s in self.stages if not s.passed), None)

    @property
    def reason(self) -> str:
        failed = self.failed_stage
        if failed is None:
            return "admitted"
        return f"stage {failed.stage} ({failed.name}): {failed.reason}"


def _stage(n: int, passed: bool, reason: str = "") -> StageResult:
    return StageResult(n, STAGE_NAMES[n], passed, reason)


def declared_bounds(source: str) -> tuple[float, float] | None:
    """The module-level `BOUNDS = (low, high)` literal, if the code declares one."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "BOUNDS"
        ):
            try:
                low, high = ast.literal_eval(node.value)
                return float(low), float(high)
            except (ValueError, TypeError, SyntaxError):
                return None
    return None


class ChannelFailure(NamedTuple):
    """Why a `reward` run's records hold no results: the code failed to `load` (stage 3 of
    the check), or the channel says something else went wrong (`reason`)."""

    load: bool
    reason: str


def parse_reward_records(
    result: ExecutionResult, nonce: str, calls: int
) -> list[Any] | ChannelFailure:
    """The judge's `reward`-mode records: one value per call (a list of floats, or
    `{"error": ...}`), or a `ChannelFailure` saying what went wrong instead."""
    results: list[Any] = []
    loaded = False
    for line in result.channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce:
            return ChannelFailure(False, "a result record without the run's nonce")
        kind, index, text = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return ChannelFailure(False, f"the harness reported: {text}")
        if kind == "load":
            if index != "ok":
                return ChannelFailure(True, text or "the code did not load")
            loaded = True
        elif kind == "result" and loaded and index == str(len(results)):
            try:
                results.append(json.loads(text))
            except ValueError:
                return ChannelFailure(False, f"result record {index} is not JSON")
        elif kind == "done" and loaded and index == str(calls) and len(results) == calls:
            return results
        else:
            return ChannelFailure(False, f"a {kind} record out of order")
    if not loaded:
        return ChannelFailure(False, "the run ended before the code was loaded")
    return ChannelFailure(False, f"the run ended after {len(results)} of {calls} batches")


def reward_job(source: str, batches: Sequence[Mapping[str, Sequence[Any]]]) -> dict[str, Any]:
    """A sandbox job that loads `source` in the restricted namespace and calls `reward`."""
    return {
        "mode": "reward",
        "source": source,
        "batches": [{k: list(v) for k, v in b.items()} for b in batches],
        "nonce": secrets.token_hex(16),
    }


def check_reward_code(
    source: str,
    bounds: tuple[float, float] | None = None,
    probe_batch: Mapping[str, Sequence[Any]] | None = None,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits | None = None,
) -> CheckReport:
    """Run the 4-stage check on generated reward code; never raises on bad code.

    `probe_batch` maps `completions`, `references`, `prompts` to lists of one length
    (default `PROBE_BATCH`); `sandbox` defaults to the process-wide one.
    """
    bounds = declared_bounds(source) or bounds or DEFAULT_BOUNDS
    stages: list[StageResult] = []

    def rejected(stage: StageResult) -> CheckReport:
        stages.append(stage)
        return CheckReport(False, tuple(stages), bounds)

    violations = static_check(source)
    if violations:
        shown = "; ".join(str(v) for v in violations[:3])
        more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
        return rejected(_stage(1, False, shown + more))
    stages.append(_stage(1, True))
    if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] <= bounds[1]):
        return rejected(_stage(4, False, f"bad bounds {bounds}"))

    batch = probe_batch or PROBE_BATCH
    size = len(batch["completions"])
    job = reward_job(source, [batch, batch])
    result = (sandbox or default_sandbox()).run_job(job, limits or PROBE_LIMITS)
    records = parse_reward_records(result, job["nonce"], 2)
    if result.status != "ok":
        return rejected(_stage(2, False, f"{result.status}: {result.reason}"))
    if isinstance(records, ChannelFailure) and not records.load:
        return rejected(_stage(2, False, f"ok: {records.reason}"))
    stages.append(_stage(2, True))
    if isinstance(records, ChannelFailure):
        return rejected(_stage(3, False, records.reason))
    stages.append(_stage(3, True))

    first, second = records
    for value in (first, second):
        if isinstance(value, dict):
            return rejected(_stage(4, False, str(value.get("error", "bad return value"))))
        if len(value) != size:
            return rejected(
                _stage(4, False, f"returned {len(value)} scores for {size} completions")
            )
        bad = [v for v in value if isinstance(v, str)]
        if bad:
            return rejected(_stage(4, False, f"non-finite score {bad[0]}"))
    if first != second:
        return rejected(_stage(4, False, "not deterministic: two calls on one batch differ"))
    outside = [v for v in first if not bounds[0] <= v <= bounds[1]]
    if outside:
        return rejected(_stage(4, False, f"score {outside[0]} outside the bounds {bounds}"))
    stages.append(_stage(4, True))
    return CheckReport(True, tuple(stages), bounds, tuple(first))
