"""Where each test of a suite is decided, and the runs that decide it.

A suite (`suite.TestSuite`) says, per test, what the program's process runs and
what the judge does (`split`). Some of it needs values of the test's own first: the
trusted names the program's code reads (`lst` in `candidate(lst)`), and the expected sides
the caller compares with (`odd_sum`). A judge run prepares them once per suite (`prepare_job`,
`plan_from`), in a sandboxed run that never holds any program; the `Plan` then knows, per
test, whether the caller decides it, a judge run does, or it runs in process: a test whose
values cannot travel as plain data (a function or an instance of a class the test defines,
handed to the program), and every later test that reads what it bound, runs whole in the
program's process, and the reward counts it in `in_process`.

Per sample, the plan gives at most two runs of the program (`program_job`, `in_process_job`):

- the *decomposed* run: the program, the setup's imports, and per test the statements that
  call the program and its calls (holes), the trusted values they read sent as plain data.
  Nothing else of the test: no expected value, no table, no setup statement;
- the *in-process* run, only when some test must run in process: the setup and the tests
  as written, each earlier test's statements replayed, each in-process test whole. Its
  verdicts are the program's to fake, which the reward says; it cannot reach the other run
  (a run of its own: nothing one run makes outlives it).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.harness import channel_records
from rewardsmith.sandbox.pool import ExecutionResult
from rewardsmith.tools.code.suite import TestSuite, build_program

Mode = Literal["caller", "judge", "in_process"]
# A job item's place in the records: (test index, "values" | "test"), or None (no record).
Slot = tuple[int, str] | None


@dataclass(frozen=True)
class Plan:
    """A suite, with the values its judge prepared: `inputs` (key -> what the program's
    run binds: `{"value": plain}` or `{"import": [module, name]}`), `expected` (test index
    -> the decoded value the caller compares with) and `dropped` (tests that must run in
    process because a value they need cannot travel as data)."""

    suite: TestSuite
    inputs: Mapping[str, Any] = field(default_factory=dict)
    expected: Mapping[int, Any] = field(default_factory=dict)
    dropped: frozenset[int] = frozenset()

    def mode(self, i: int) -> Mode:
        test = self.suite.tests[i]
        if test.in_process or i in self.dropped:
            return "in_process"
        if test.needs_judge or (test.expect_key and i not in self.expected):
            return "judge"
        return "caller"

    @property
    def in_process(self) -> int:
        """How many tests run whole in the program's process (counted in the reward)."""
        return sum(self.mode(i) == "in_process" for i in range(len(self.suite.tests)))

    def program_job(self, code: str) -> tuple[dict[str, Any], list[Slot]] | None:
        """The decomposed run's job (no nonce yet) and what each item reports; None when
        no test is decomposed."""
        tests = self.suite.tests
        decomposed = [i for i in range(len(tests)) if self.mode(i) != "in_process"]
        if not decomposed:
            return None
        # In-process tests whose statements bound program names a decomposed test reads.
        wanted = set(decomposed)
        for i in range(len(tests) - 1, -1, -1):  # `needs` points to earlier tests only
            if i in wanted:
                wanted |= tests[i].needs
        items: list[dict[str, Any]] = []
        slots: list[Slot] = []
        keys = [step[1] for step in self.suite.setup_steps if step[0] == "bind"]
        for i in sorted(wanted - self.dropped):
            test = tests[i]
            keys += test.inputs
            if i in decomposed:
                items.append(
                    {"pre": test.program_pre, "holes": list(test.holes), "truth": test.truth}
                )
                slots.append((i, "values"))
            elif test.program_pre:
                items.append({"pre": test.program_pre})
                slots.append(None)
        job = self._job(code, self.suite.program_setup, items)
        job["inputs"] = {key: self.inputs[key] for key in keys}
        return job, slots

    def in_process_job(self, code: str) -> tuple[dict[str, Any], list[Slot]] | None:
        """The in-process run's job and what each item reports; None when no test runs in
        process."""
        tests = self.suite.tests
        inside = [i for i in range(len(tests)) if self.mode(i) == "in_process"]
        if not inside:
            return None
        items: list[dict[str, Any]] = []
        slots: list[Slot] = []
        for i in range(inside[-1] + 1):
            if i in inside:
                items.append({"code": tests[i].whole})
                slots.append((i, "test"))
            elif tests[i].pre:
                items.append({"pre": tests[i].pre})
                slots.append(None)
        return self._job(code, self.suite.setup, items), slots

    def _job(self, code: str, setup: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "mode": "tests",
            "source": build_program(code, self.suite),
            "setup": setup,
            "tests": items,
            "entry_point": self.suite.entry_point,
            "candidate": self.suite.candidate,
        }


def prepare_job(suite: TestSuite, nonce: str) -> dict[str, Any]:
    """A judge run that computes the suite's values (`judge.py`, preparing)."""
    return {
        "mode": "judge",
        "prepare": True,
        "setup": [list(step) for step in suite.setup_steps],
        "tests": [{"steps": [list(step) for step in test.steps]} for test in suite.tests],
        "nonce": nonce,
    }


def plan_from(suite: TestSuite, result: ExecutionResult | None, nonce: str) -> tuple[Plan, bool]:
    """The plan for `suite` from its prepare run's records (None: it needed none), and
    whether it is final (the run completed; otherwise what could not be prepared runs in
    process, or in a judge run, and the next call prepares again)."""
    if result is None:
        return Plan(suite), True
    values, complete = _prepared(result, nonce)
    expects = {t.expect_key: i for i, t in enumerate(suite.tests) if t.expect_key}
    inputs: dict[str, Any] = {}
    expected: dict[int, Any] = {}
    for key, value in values.items():
        if key in expects and "value" in value:
            with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):
                expected[expects[key]] = plain.decode(value["value"])
        elif key not in expects and ("value" in value or "import" in value):
            inputs[key] = value
    setup_keys = [step[1] for step in suite.setup_steps if step[0] == "bind"]
    dropped: set[int] = set()
    for i, test in enumerate(suite.tests):
        missing = any(key not in inputs for key in (*setup_keys, *test.inputs))
        if missing or test.needs & dropped:
            dropped.add(i)
    return Plan(suite, inputs, expected, frozenset(dropped)), complete


def _prepared(result: ExecutionResult, nonce: str) -> tuple[dict[str, Any], bool]:
    """The values a prepare run reported (key -> its JSON object), and whether it finished."""
    values: dict[str, Any] = {}
    done = False
    for record in channel_records(result.channel, nonce):
        if record is None:
            continue
        kind, index, text = record
        if kind == "value":
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict) and len(value) == 1:
                values[index] = value
        elif kind == "done":
            done = index == str(len(values))
    return values, done and result.status == "ok"
