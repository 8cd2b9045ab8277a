"""Tool `code`: run a completion's program against the tests in the reference, in the sandbox.

The reference holds the tests in one of the formats code datasets use (HumanEval, MBPP,
stdin/stdout cases, plain assertions: `rewardsmith.tools.code_reference`); the code is the
last fenced ```python block of the completion (or the last fenced block, or the whole
completion). Score = fraction of tests passed, or 1.0/0.0 with `strict=True`; components
`passed`, `total` and `in_process`; the reason names the first failure. A run that times out
or crashes (memory, signal, early exit, a broken result channel) scores 0.0 with status
`timeout` or `error` (DESIGN.md, failure policy).

Where the verdict is decided: each assertion is split (`rewardsmith.tools.code_split`) into
the calls into the program, which the program's process evaluates and sends back as plain
data, and the rest, which the run's judge evaluates, a process the program cannot touch
(`rewardsmith.sandbox.judge`). The expected side of an assertion never reaches the program's
process, and the program influences its score only through what its functions return (or,
for stdin/stdout cases, what it prints: that comparison happens here). An assertion that
cannot be split runs whole in the program's process, comparing plain data there; its verdict
can be faked by a program that tampers with its own interpreter, and `in_process` counts
such tests.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits
from rewardsmith.tools.base import make_reward
from rewardsmith.tools.code_reference import (
    TestSuite,
    build_program,
    extract_code,
    normalize_output,
    parse_reference,
)
from rewardsmith.tools.code_split import program_names
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

__all__ = ["CodeTool", "extract_code", "parse_reference", "read_records"]

# Programs longer than this are not run: no real solution is that long, and the source has
# to travel through a pipe and be compiled.
MAX_CODE_CHARS = 100_000
# stdin/stdout cases compare whole outputs, so a run keeps this much of its stdout.
STDOUT_LIMIT_BYTES = 1_000_000
# Reasons quote at most this much of a failure message.
REASON_CHARS = 160


@dataclass
class _Outcome:
    passed: int = 0
    total: int = 0
    status: Status = "ok"
    reason: str = ""
    failures: list[str] = field(default_factory=list)


def read_records(result: ExecutionResult, nonce: str, total: int) -> _Outcome:
    """Check the judge's records: exactly `load`, tests 0..total-1 in order, `done`.

    Only the judge writes them; anything else on the channel (a line without the nonce, a
    duplicate, a test out of order) means the channel was broken into, and the run scores 0.
    """
    out = _Outcome(total=total)
    verdicts: list[bool] = []
    loaded: bool | None = None
    done = False
    for line in result.channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce:
            return _Outcome(0, total, "error", "result channel tampered with (unsigned record)")
        kind, index, text = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return _Outcome(0, total, "error", f"harness error: {text}"[:REASON_CHARS])
        if (
            done
            or (kind != "load" and loaded is not True)
            or (kind == "load" and loaded is not None)
        ):
            return _Outcome(0, total, "error", "result channel tampered with (bad sequence)")
        if kind == "load":
            loaded = index == "ok"
            if not loaded:
                out.failures.append(f"program failed to load: {text}")
        elif kind == "test":
            if index != str(len(verdicts)) or len(verdicts) >= total:
                return _Outcome(0, total, "error", "result channel tampered with (bad test index)")
            verdicts.append(text == "pass")
            if text != "pass":
                out.failures.append(f"test {index} failed: {text.removeprefix('fail ')}")
        elif kind == "done":
            if index != str(total) or len(verdicts) != total:
                return _Outcome(0, total, "error", "result channel tampered with (bad count)")
            done = True
        else:
            return _Outcome(0, total, "error", "result channel tampered with (unknown record)")
    out.passed = sum(verdicts)
    if result.status != "ok":
        out.passed = 0
        out.status = "timeout" if result.status == "timeout" else "error"
        out.reason = f"{result.status}: {result.reason}"
    elif loaded is False:
        out.reason = out.failures[0]
    elif not done:
        out.passed = 0
        out.status = "error"
        reported = len(verdicts)
        out.reason = f"program ended before the tests finished ({reported} of {total} reported)"
    return out


class CodeTool(RewardTool):
    """Unit-test reward for code completions, run in a `rewardsmith.sandbox.Sandbox`.

    `strict`: 1.0 only when every test passes. `timeout`: CPU seconds per program run, and
    its wall-clock limit, which stretches up to `wall_stretch` times while the run waits for
    a CPU on a busy machine (`SandboxLimits.wall_stretch`); `memory_mb`: memory for all of a run's processes together;
    `workers`: warm zygotes; `preload`: extra modules the zygotes import; `read_only_paths`:
    host paths the programs may read (nothing else of the host is visible).
    `strict_equality` (default on): tests compare plain data, outside the program where the
    assertion allows (see the module docstring); off, every test runs whole inside the
    program's process with Python's own `==` (for tests that compare instances of the
    solution's classes; such verdicts can be faked by a hostile program).
    """

    def __init__(
        self,
        spec: ToolSpec,
        strict: bool = False,
        timeout: float = 10.0,
        memory_mb: int = 512,
        workers: int = 2,
        preload: Sequence[str] = (),
        strict_equality: bool = True,
        read_only_paths: Sequence[str] = (),
        wall_stretch: float = SandboxLimits.wall_stretch,
    ) -> None:
        if timeout <= 0 or memory_mb < 16 or workers < 1:
            raise ConfigError(
                f"tool {spec.name!r}: timeout must be > 0, memory_mb >= 16 and workers >= 1"
            )
        self.spec = spec
        self.strict = strict
        self.strict_equality = strict_equality
        self.limits = SandboxLimits(
            wall_seconds=timeout,
            wall_stretch=wall_stretch,
            cpu_seconds=timeout,
            memory_mb=memory_mb,
            output_bytes=STDOUT_LIMIT_BYTES,
        )
        self.workers = workers
        self.preload = tuple(preload)
        self.read_only_paths = tuple(read_only_paths)
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            try:
                self._sandbox = Sandbox(
                    self.workers, self.limits, self.preload, read_only_paths=self.read_only_paths
                )
            except ValueError as exc:
                raise ConfigError(f"tool {self.spec.name!r}: {exc}") from None
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __getstate__(self) -> dict[str, Any]:
        # Picklable into worker processes (trainer adapters): the copy starts its own pool.
        return {**self.__dict__, "_sandbox": None}

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        suites: dict[str | None, TestSuite | InvalidReferenceError] = {}
        rewards: list[Reward | None] = [None] * len(samples)
        jobs: list[dict[str, Any]] = []
        owners: list[tuple[int, TestSuite]] = []  # the sample each job belongs to
        for i, sample in enumerate(samples):
            suite = self._suite(sample.reference, suites)
            if isinstance(suite, InvalidReferenceError):
                rewards[i] = make_reward(self.spec, None, "invalid_reference", str(suite))
                continue
            code = extract_code(sample.completion or "")
            if not code.strip():
                rewards[i] = make_reward(self.spec, 0.0, reason="no code found")
                continue
            if len(code) > MAX_CODE_CHARS:
                rewards[i] = make_reward(
                    self.spec, 0.0, reason=f"code longer than {MAX_CODE_CHARS} characters"
                )
                continue
            suite = self._shadowed(sample.reference, suite, code, suites)
            for job in self._jobs(code, suite):
                jobs.append(job)
                owners.append((i, suite))
        results = self.sandbox.map(jobs) if jobs else []
        grouped: dict[int, tuple[TestSuite, list[tuple[dict[str, Any], ExecutionResult]]]] = {}
        for (i, suite), job, result in zip(owners, jobs, results, strict=True):
            grouped.setdefault(i, (suite, []))[1].append((job, result))
        for i, (suite, runs) in grouped.items():
            rewards[i] = self._reward(suite, runs)
        return [r for r in rewards if r is not None]

    def _shadowed(
        self, reference: Any, suite: TestSuite, code: str, cache: dict[Any, Any]
    ) -> TestSuite:
        """The suite split again when the program defines a builtin the judge would call
        (MBPP's `def sum(a, b)` under test as `sum(10, 15) == 6`)."""
        if not suite.judge_builtins:
            return suite
        shadowed = suite.judge_builtins & program_names(build_program(code, suite))
        if not shadowed:
            return suite
        key = (reference, shadowed)
        if key not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cache[key] = parse_reference(reference, self.strict_equality, shadowed)
        result = cache[key]
        assert isinstance(result, TestSuite)
        return result

    def _suite(
        self, reference: str | None, cache: dict[str | None, TestSuite | InvalidReferenceError]
    ) -> TestSuite | InvalidReferenceError:
        if reference not in cache:
            try:
                if reference is None:
                    raise InvalidReferenceError("missing reference (the tests)")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # old escapes ('\\d') in dataset tests
                    cache[reference] = parse_reference(reference, self.strict_equality)
            except InvalidReferenceError as exc:
                cache[reference] = exc
        return cache[reference]

    @staticmethod
    def _jobs(code: str, suite: TestSuite) -> list[dict[str, Any]]:
        if suite.format == "stdio":
            return [
                {"mode": "exec", "source": code, "stdin": given, "expected": expected}
                for given, expected in suite.cases
            ]
        return [
            {
                "mode": "tests",
                "source": build_program(code, suite),
                "setup": suite.setup,
                "judge_setup": suite.judge_setup,
                "tests": [t.job() for t in suite.tests],
                "entry_point": suite.entry_point,
                "candidate": suite.candidate,
                "nonce": secrets.token_hex(16),
            }
        ]

    def _reward(
        self, suite: TestSuite, runs: list[tuple[dict[str, Any], ExecutionResult]]
    ) -> Reward:
        if suite.format == "stdio":
            outcome = self._stdio_outcome(runs)
        else:
            job, result = runs[0]
            outcome = read_records(result, job["nonce"], suite.total)
        components = {
            "passed": float(outcome.passed),
            "total": float(outcome.total),
            "in_process": float(suite.in_process),
        }
        if outcome.status != "ok":
            return make_reward(self.spec, 0.0, outcome.status, outcome.reason, components)
        fraction = outcome.passed / outcome.total if outcome.total else 0.0
        score = float(fraction == 1.0) if self.strict else fraction
        reason = outcome.reason or (
            outcome.failures[0] if outcome.failures else f"passed {outcome.passed}/{outcome.total}"
        )
        if suite.in_process and not outcome.failures and not outcome.reason:
            reason += f" ({suite.in_process} judged inside the program's process)"
        return make_reward(self.spec, score, "ok", reason[:REASON_CHARS], components)

    @staticmethod
    def _stdio_outcome(runs: list[tuple[dict[str, Any], ExecutionResult]]) -> _Outcome:
        out = _Outcome(total=len(runs))
        for case, (job, result) in enumerate(runs):
            if result.status == "timeout":
                return _Outcome(0, len(runs), "timeout", f"case {case}: {result.reason}")
            if result.status in ("memory", "killed", "error"):
                return _Outcome(
                    0, len(runs), "error", f"case {case}: {result.status}: {result.reason}"
                )
            if result.status != "ok":
                tail = result.stderr.strip().splitlines()[-1:] or [result.reason]
                out.failures.append(f"case {case} failed: {tail[0]}")
            elif normalize_output(result.stdout) != normalize_output(job["expected"]):
                out.failures.append(f"case {case}: wrong output")
            else:
                out.passed += 1
        return out
