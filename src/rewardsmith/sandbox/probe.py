"""The 4-stage admission check for generated reward functions, and running admitted ones.

Generated code (`def reward(completions, references=None, prompts=None, **kw) -> list[float]`,
from CodeVerify or the reward-function search) runs only after `check_reward_code` admits it.
The stages follow the search-driven reward-design paper's sandbox check:

1. static: the AST policy of `rewardsmith.sandbox.policy` (import allowlist, no dunder
   escapes, no eval/exec/open/compile/getattr...);
2. locked execution: the code runs only in the process sandbox (limits, no network, empty
   directory); a run that times out, exhausts memory or dies fails here;
3. restricted namespace: inside the sandbox the module executes with safe builtins and
   read-only views of the import allowlist, under an audit hook (`confine.py`), and must
   define a callable `reward`;
4. probe: on a batch drawn fresh for this check (`probe_data.py`), in runs of the size
   production scores in (`CHUNK_SIZE`), `reward` must return finite floats within the
   declared bounds, the same for a sample whatever run, position, batch size or neighbours
   it had, and no string literal of the code may make a wrong answer pay
   (`probe_checks.py`).

Every run calls `reward` once per sample, in a fresh namespace (`reward_run.py`): what the
check sees is what production gets.

Bounds come from a module-level literal `BOUNDS = (low, high)` in the code, else the
`bounds` argument, else `DEFAULT_BOUNDS`. Each rejection names its stage and reason.
"""

from __future__ import annotations

import ast
import json
import math
import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from rewardsmith.sandbox import probe_data
from rewardsmith.sandbox.harness import channel_records
from rewardsmith.sandbox.policy import static_check
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits, default_sandbox
from rewardsmith.sandbox.probe_checks import ProbeRuns, plan_runs

STAGE_NAMES = {1: "static", 2: "locked execution", 3: "restricted namespace", 4: "probe"}
DEFAULT_BOUNDS = (-1.0, 1.0)
# Probe calls are small: a reward function that needs more than this is not admitted.
PROBE_LIMITS = SandboxLimits(wall_seconds=5.0, cpu_seconds=5.0, memory_mb=256)

# Samples per sandbox run when a tool scores: stage 4 probes in runs of this size too, so
# the code cannot tell a check from production by its batch (`RewardFunctionTool`).
CHUNK_SIZE = 64
# Literals tried as backdoor triggers, at most (each costs a few probe samples).
MAX_TRIGGERS = 200


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
    seed: int | None = None  # the probe batches' seed: `check_reward_code(..., seed=seed)`
    # The strings tried as backdoor triggers (literals, folded constants, regex examples,
    # strings the loaded module held): the gate tries them on its own data too.
    literals: tuple[str, ...] = ()

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
    result: ExecutionResult, nonce: str, calls: int, strings: list[str] | None = None
) -> list[Any] | ChannelFailure:
    """The `reward`-mode records: one value per batch (a list of floats, or
    `{"error": ...}`), or a `ChannelFailure` saying what went wrong instead. The strings the
    module holds (a job with `strings`) are added to `strings`."""
    results: list[Any] = []
    loaded = False
    for record in channel_records(result.channel, nonce):
        if record is None:
            return ChannelFailure(False, "a result record without the run's nonce")
        kind, index, text = record
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return ChannelFailure(False, f"the harness reported: {text}")
        if kind == "load":
            if index != "ok":
                return ChannelFailure(True, text or "the code did not load")
            loaded = True
        elif kind == "strings" and loaded and not results and strings is not None:
            try:
                held = json.loads(text)
            except ValueError:
                return ChannelFailure(False, "the strings record is not JSON")
            if isinstance(held, list):
                strings.extend(x for x in held if isinstance(x, str))
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


def reward_job(
    source: str, batches: Sequence[Mapping[str, Sequence[Any]]], strings: bool = False
) -> dict[str, Any]:
    """A sandbox job that loads `source` in the restricted namespace and calls `reward` on
    each sample of each batch; `strings`: also report the strings the module holds."""
    return {
        "mode": "reward",
        "source": source,
        "batches": [{k: list(v) for k, v in b.items()} for b in batches],
        "nonce": secrets.token_hex(16),
        "strings": strings,
    }


def check_reward_code(
    source: str,
    bounds: tuple[float, float] | None = None,
    probe_batch: Mapping[str, Sequence[Any]] | None = None,
    sandbox: Sandbox | None = None,
    limits: SandboxLimits | None = None,
    *,
    chunk_size: int = CHUNK_SIZE,
    seed: int | None = None,
) -> CheckReport:
    """Run the 4-stage check on generated reward code; never raises on bad code.

    Stage 4 draws a fresh batch of `chunk_size` samples (the size the code is scored in
    production) from `seed` (default: a random one, kept in the report so a rejection can be
    reproduced); `probe_batch` (`completions`, `references`, `prompts` lists of one length)
    adds samples of the caller's own. `sandbox` defaults to the process-wide one, `limits`
    to `PROBE_LIMITS` (a tool passes its own: what the code may use is what it gets).
    """
    bounds = declared_bounds(source) or bounds or DEFAULT_BOUNDS
    seed = secrets.randbits(63) if seed is None else seed
    stages: list[StageResult] = []

    def rejected(stage: StageResult) -> CheckReport:
        stages.append(stage)
        return CheckReport(False, tuple(stages), bounds, seed=seed)

    violations = static_check(source)
    if violations:
        shown = "; ".join(str(v) for v in violations[:3])
        more = f" (+{len(violations) - 3} more)" if len(violations) > 3 else ""
        return rejected(_stage(1, False, shown + more))
    stages.append(_stage(1, True))
    if not (math.isfinite(bounds[0]) and math.isfinite(bounds[1]) and bounds[0] <= bounds[1]):
        return rejected(_stage(4, False, f"bad bounds {bounds}"))

    rng = random.Random(seed)
    batch = _given(probe_batch) + probe_data.probe_batch(rng, max(2, chunk_size))
    box = sandbox or default_sandbox()
    run_limits = limits or PROBE_LIMITS
    load: list[ExecutionResult | ChannelFailure] = []
    held: list[str] = []  # strings the loaded module holds (reported by the first run)
    runs = ProbeRuns(lambda b: _score(box, source, b, run_limits, load, held), bounds)
    plan = plan_runs(batch, rng)
    first = runs.run(plan[:1])
    if load and isinstance(load[0], ExecutionResult):
        return rejected(_stage(2, False, f"{load[0].status}: {load[0].reason}"))
    if load and isinstance(load[0], ChannelFailure) and not load[0].load:
        return rejected(_stage(2, False, f"ok: {load[0].reason}"))
    stages.append(_stage(2, True))
    if load:
        return rejected(_stage(3, False, load[0].reason))
    stages.append(_stage(3, True))
    if isinstance(first, str):
        return rejected(_stage(4, False, first))
    for step in (
        runs.valid,
        lambda: _failed_run(runs.run(plan[1:])),
        runs.consistent,
        lambda: runs.no_trigger(batch, _literals(source, held), chunk_size),
        runs.valid,
    ):
        reason = step()
        if reason:
            return rejected(_stage(4, False, reason))
    stages.append(_stage(4, True))
    scores = tuple(runs.value(s) for s in plan[0])
    return CheckReport(True, tuple(stages), bounds, scores, seed, tuple(_literals(source, held)))


def _given(batch: Mapping[str, Sequence[Any]] | None) -> list[probe_data.ProbeSample]:
    if not batch:
        return []
    n = len(batch["completions"])
    refs = batch.get("references") or [None] * n
    prompts = batch.get("prompts") or [""] * n
    return [
        probe_data.ProbeSample(c, r, p)
        for c, r, p in zip(batch["completions"], refs, prompts, strict=True)
    ]


def _literals(source: str, held: Sequence[str]) -> list[str]:
    """The source's literals, then the strings the loaded module held that are not among
    them (at most `MAX_TRIGGERS` in all)."""
    return list(dict.fromkeys([*probe_data.source_literals(source), *held]))[:MAX_TRIGGERS]


def _failed_run(result: object) -> str:
    return result if isinstance(result, str) else ""


def _score(
    box: Sandbox,
    source: str,
    batches: list[list[probe_data.ProbeSample]],
    limits: SandboxLimits,
    load: list[ExecutionResult | ChannelFailure],
    held: list[str],
) -> list[list[float | str]] | str:
    """Score each batch in a run of its own; a reason when a run or a call failed. The
    first failure to run or load the code at all goes to `load` (stages 2 and 3); the first
    run reports the strings the module holds into `held`."""
    first = not load and not held
    jobs = [
        reward_job(
            source,
            [
                {
                    "completions": [s.completion for s in b],
                    "references": [s.reference for s in b],
                    "prompts": [s.prompt for s in b],
                }
            ],
            strings=first and k == 0,
        )
        for k, b in enumerate(batches)
    ]
    results = box.map(jobs, limits) if len(jobs) > 1 else [box.run_job(jobs[0], limits)]
    out: list[list[float | str]] = []
    for job, result, b in zip(jobs, results, batches, strict=True):
        records = parse_reward_records(result, job["nonce"], 1, held)
        if result.status != "ok":
            if not load:
                load.append(result)
            return f"a probe run ended with status {result.status}: {result.reason}"
        if isinstance(records, ChannelFailure):
            if not load:
                load.append(records)
            return f"a probe run failed: {records.reason}"
        value = records[0]
        if isinstance(value, dict):
            return str(value.get("error", "bad return value"))
        if len(value) != len(b):
            return f"returned {len(value)} scores for {len(b)} completions"
        out.append(value)
    return out
