"""Tool `code`: run a completion's program against the tests in the reference, in the sandbox.

The reference holds the tests in one of the formats code datasets use (HumanEval, MBPP,
stdin/stdout cases, plain assertions: `rewardsmith.tools.code.suite`); the code is the
last fenced ```python block of the completion (or the last fenced block, or the whole
completion). Score = fraction of tests passed, or 1.0/0.0 with `strict=True`; components
`passed`, `total` and `in_process`; the reason names the first failure. A run that times out
or crashes (memory, signal, early exit, a broken result channel) scores 0.0 with status
`timeout` or `error` (docs/architecture.md, Design, failure policy).

Where the verdict is decided: each assertion is split (`rewardsmith.tools.code.split`) into
the calls into the program, which the program's run evaluates and reports as plain data,
and the rest, the check, which is decided here on that data (a comparison with a literal or
with a value of the test's own, a truth test) or by a judge run, a sandboxed run that never
holds the program (`rewardsmith.tools.code.verdict`, `rewardsmith.sandbox.judge`). The
test's own statements and tables run in the judge: the program's run gets the calls, and
the arguments they need as plain data, which a judge run prepares once per reference
(`rewardsmith.tools.code.plan`). The expected side of an assertion, and the expected output
of a stdin/stdout case, never reach the program's process: it influences its score only
through what its functions return, or what it prints. A test that cannot be split (or whose
arguments cannot travel as data) runs whole in a run of its own, comparing plain data there;
its verdict can be faked by a program that tampers with its own interpreter, and
`in_process` counts such tests.
"""

from __future__ import annotations

import secrets
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits
from rewardsmith.tools.base import make_reward
from rewardsmith.tools.code.plan import Plan, Slot, plan_from, prepare_job
from rewardsmith.tools.code.split import program_names
from rewardsmith.tools.code.suite import (
    TestSuite,
    build_program,
    extract_code,
    parse_reference,
)
from rewardsmith.tools.code.verdict import (
    Outcome,
    judge_job,
    read_records,
    settle,
    stdio_outcome,
)
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

__all__ = ["CodeTool", "extract_code", "parse_reference"]

# Programs longer than this are not run: no real solution is that long, and the source has
# to travel through a pipe and be compiled.
MAX_CODE_CHARS = 100_000
# stdin/stdout cases compare whole outputs, so a run keeps this much of its stdout.
STDOUT_LIMIT_BYTES = 1_000_000
# Reasons quote at most this much of a failure message.
REASON_CHARS = 160
# Plans (a suite with the values its judge prepared) kept across calls.
PLAN_CACHE = 4096


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
        # id(suite) -> (suite, its plan); the suite is kept so that its id stays its own.
        self._plans: OrderedDict[int, tuple[TestSuite, Plan]] = OrderedDict()
        self._plans_lock = threading.Lock()

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

    def use_sandbox(self, sandbox: Any) -> None:
        """Run on `sandbox` (anything with `map` and `close`, e.g. Ray actors) instead of a
        local pool; this tool closes it."""
        self.close()
        self._sandbox = sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __getstate__(self) -> dict[str, Any]:
        # Picklable into worker processes (trainer adapters): the copy starts its own pool.
        return {
            **self.__dict__,
            "_sandbox": None,
            "_plans": OrderedDict(),
            "_plans_lock": None,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._plans_lock = threading.Lock()

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        suites: dict[str | None, TestSuite | InvalidReferenceError] = {}
        rewards: list[Reward | None] = [None] * len(samples)
        programs: list[tuple[int, TestSuite, str]] = []
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
            programs.append((i, self._shadowed(sample.reference, suite, code, suites), code))
        plans = self._plan([suite for _, suite, _ in programs])
        jobs: list[dict[str, Any]] = []
        owners: list[tuple[int, list[Slot] | None]] = []  # the sample each job belongs to
        for i, suite, code in programs:
            for job, slots in self._jobs(code, suite, plans[id(suite)]):
                jobs.append(job)
                owners.append((i, slots))
        results = self.sandbox.map(jobs) if jobs else []
        suite_of = {i: suite for i, suite, _ in programs}
        outcomes: dict[int, Outcome] = {}
        stdio: dict[int, list[ExecutionResult]] = {}
        for (i, slots), job, result in zip(owners, jobs, results, strict=True):
            if slots is None:
                stdio.setdefault(i, []).append(result)
                continue
            plan = plans[id(suite_of[i])]
            outcome = outcomes.setdefault(i, Outcome.for_tests(plan.suite.total))
            read_records(result, job["nonce"], slots, plan, outcome)
        for i, runs in stdio.items():
            outcomes[i] = stdio_outcome(runs, [out for _, out in suite_of[i].cases])
        self._judge({i: plans[id(suite_of[i])] for i in outcomes}, outcomes)
        for i, outcome in outcomes.items():
            rewards[i] = self._reward(plans[id(suite_of[i])], outcome)
        return [r for r in rewards if r is not None]

    def _plan(self, suites: Sequence[TestSuite]) -> dict[int, Plan]:
        """The plan of every suite (`plan`): kept from earlier calls, static, or from a
        judge run that prepares its values (one per suite, all at once)."""
        plans: dict[int, Plan] = {}
        preparing: dict[int, TestSuite] = {}
        for suite in suites:
            with self._plans_lock:
                cached = self._plans.get(id(suite))
                if cached is not None and cached[0] is suite:
                    self._plans.move_to_end(id(suite))
            if cached is not None and cached[0] is suite:
                plans[id(suite)] = cached[1]
            elif suite.format == "stdio" or not suite.needs_preparing:
                plans[id(suite)] = self._keep(suite, Plan(suite))
            else:
                preparing[id(suite)] = suite
        nonces = [secrets.token_hex(16) for _ in preparing]
        jobs = [prepare_job(s, n) for s, n in zip(preparing.values(), nonces, strict=True)]
        results = self.sandbox.map(jobs) if jobs else []
        for suite, nonce, result in zip(preparing.values(), nonces, results, strict=True):
            plan, final = plan_from(suite, result, nonce)
            plans[id(suite)] = self._keep(suite, plan) if final else plan
        return plans

    def _keep(self, suite: TestSuite, plan: Plan) -> Plan:
        with self._plans_lock:
            self._plans[id(suite)] = (suite, plan)
            while len(self._plans) > PLAN_CACHE:
                self._plans.popitem(last=False)
        return plan

    def _judge(self, plans: dict[int, Plan], outcomes: dict[int, Outcome]) -> None:
        """Second round: one judge run per sample whose tests need one (`verdict`)."""
        waiting = [i for i, outcome in outcomes.items() if outcome.pending]
        jobs = [judge_job(plans[i], outcomes[i], secrets.token_hex(16)) for i in waiting]
        for i, job, result in zip(waiting, jobs, self.sandbox.map(jobs), strict=True):
            settle(outcomes[i], result, job["nonce"])

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
    def _jobs(
        code: str, suite: TestSuite, plan: Plan
    ) -> list[tuple[dict[str, Any], list[Slot] | None]]:
        """The runs of one sample: a run per stdin/stdout case, or the decomposed run and the
        in-process run its plan needs (`plan`), each with what its items report."""
        if suite.format == "stdio":
            return [
                # The expected output stays here: the program's run gets its stdin only.
                ({"mode": "exec", "source": code, "stdin": given}, None)
                for given, _ in suite.cases
            ]
        runs = [plan.program_job(code), plan.in_process_job(code)]
        return [
            ({**job, "nonce": secrets.token_hex(16)}, slots) for job, slots in filter(None, runs)
        ]

    def _reward(self, plan: Plan, outcome: Outcome) -> Reward:
        in_process = plan.in_process if plan.suite.format != "stdio" else 0
        components = {
            "passed": float(outcome.passed),
            "total": float(outcome.total),
            "in_process": float(in_process),
        }
        if outcome.status != "ok":
            return make_reward(self.spec, 0.0, outcome.status, outcome.reason, components)
        fraction = outcome.passed / outcome.total if outcome.total else 0.0
        score = float(fraction == 1.0) if self.strict else fraction
        reason = outcome.first_failure() or f"passed {outcome.passed}/{outcome.total}"
        if in_process and outcome.passed == outcome.total:
            reason += f" ({in_process} judged inside the program's process)"
        return make_reward(self.spec, score, "ok", reason[:REASON_CHARS], components)
