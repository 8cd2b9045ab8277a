"""Verdicts of the `code` tool: the program runs' records read here, each test decided where
the program cannot reach it.

A decomposed run of the program (`rewardsmith.sandbox.harness`, `tests` mode) reports, per
decomposed test, the values of the calls into the program; an in-process run reports the
pass/fail of the tests that had to run whole (`plan`). A decomposed test is decided

- here, when its check is a comparison with a literal, or with a value the judge prepared
  from the test's own code, or a truth test (`op`): the value is decoded as plain data
  (`rewardsmith.sandbox.plain`: only builtin types are built, its size, depth and hashing
  bounded) and compared with the builtins' own `==`; no code of the program or of the
  reference runs in this process;
- by a judge run otherwise: a sandboxed run of its own that never held the program
  evaluates the check on the values (`judge_job`, `settle`).

The records come from the program's process, so they can say anything; what they can say
that counts is which values its calls returned. A record out of order, a test reported in
the wrong form, a line without the nonce, all mean the channel was tampered with, and the
sample scores 0.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.harness import channel_records
from rewardsmith.sandbox.judge import failed_call
from rewardsmith.sandbox.pool import ExecutionResult
from rewardsmith.tools.code.plan import Plan, Slot
from rewardsmith.types import Status

# Reasons quote at most this much of a failure message.
REASON_CHARS = 160
# Literals parsed from references, kept for the next sample of the same task.
LITERAL_CACHE = 4096


@dataclass
class Outcome:
    """What the runs of one sample say: verdicts per test, or a failure.

    `verdicts[i]` is None while test i waits for the judge (`pending[i]` holds its values)."""

    total: int
    status: Status = "ok"
    reason: str = ""
    verdicts: list[bool | None] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    loaded: bool | None = None
    load_reason: str = ""
    pending: dict[int, Any] = field(default_factory=dict)

    @classmethod
    def for_tests(cls, total: int) -> Outcome:
        """An outcome whose `total` tests are decided in any order (`decide`)."""
        return cls(total, verdicts=[None] * total, reasons=[""] * total)

    @property
    def passed(self) -> int:
        return 0 if self.status != "ok" else sum(v is True for v in self.verdicts)

    def first_failure(self) -> str:
        """The reason of the first failure, in test order ("" when all passed)."""
        if self.loaded is False:
            return f"program failed to load: {self.load_reason}"
        for verdict, reason in zip(self.verdicts, self.reasons, strict=True):
            if verdict is False:
                return reason
        return ""

    def record(self, verdict: bool | None, failure: str) -> None:
        """The next test's verdict, and its failure message (kept only when it failed)."""
        self.verdicts.append(verdict)
        self.reasons.append(failure if verdict is False else "")

    def decide(self, i: int, verdict: bool | None, failure: str) -> None:
        """Test i's verdict (None: it waits for the judge), and why it failed."""
        self.verdicts[i] = verdict
        self.reasons[i] = f"test {i} failed: {failure}" if verdict is False else ""

    def fail(self, status: Status, reason: str) -> None:
        """The whole sample fails (a run timed out, crashed or was tampered with); the first
        failure is the one reported."""
        if self.status == "ok":
            self.status, self.reason = status, reason[:REASON_CHARS]
        self.pending = {}


def read_records(
    result: ExecutionResult, nonce: str, slots: Sequence[Slot], plan: Plan, out: Outcome
) -> None:
    """One program run's records into `out`: exactly `load`, then a record for each job item
    that reports (`slots`: its test and form: `values` for a decomposed test, `test` for one
    run in process), in order, then `done N` (N items). Decides every test it can here; the
    rest wait in `out.pending`."""
    expected = [(position, slot) for position, slot in enumerate(slots) if slot is not None]
    seen = 0
    load = ""  # this run's `load` record: "", "ok" or "fail"
    done = False
    for record in channel_records(result.channel, nonce):
        if record is None:
            return out.fail("error", "result channel tampered with (unsigned record)")
        kind, index, text = record
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return out.fail("error", f"harness error: {text}")
        in_order = (load == "") if kind == "load" else (load == "ok" and not done)
        if not in_order:
            return out.fail("error", "result channel tampered with (bad sequence)")
        if kind == "load":
            load = "ok" if index == "ok" else "fail"
            if load == "fail" and out.loaded is not False:
                out.loaded, out.load_reason = False, text
            elif out.loaded is None:
                out.loaded = True
        elif kind in ("values", "test"):
            if seen >= len(expected) or index != str(expected[seen][0]):
                return out.fail("error", "result channel tampered with (bad test index)")
            i, form = expected[seen][1]
            if kind != form:
                return out.fail("error", "result channel tampered with (a test in the wrong form)")
            seen += 1
            verdict, reason = _decide(plan, i, kind, text, out)
            out.decide(i, verdict, reason)
        elif kind == "done":
            if index != str(len(slots)) or seen != len(expected):
                return out.fail("error", "result channel tampered with (bad count)")
            done = True
        else:
            return out.fail("error", "result channel tampered with (unknown record)")
    if result.status != "ok":
        status: Status = "timeout" if result.status == "timeout" else "error"
        return out.fail(status, f"{result.status}: {result.reason}")
    if load != "fail" and not done:
        why = f"program ended before the tests finished ({seen} of {len(expected)} reported)"
        return out.fail("error", why)
    return None


def _decide(plan: Plan, i: int, kind: str, text: str, out: Outcome) -> tuple[bool | None, str]:
    """A test's verdict from its record (None: it waits for the judge), and why it failed."""
    if kind == "test":
        return text == "pass", text.removeprefix("fail ")
    test = plan.suite.tests[i]
    try:
        values = json.loads(text)
    except (ValueError, RecursionError):
        return False, "the program reported values that are not JSON"
    if isinstance(values, list) and len(values) > len(test.holes):
        return False, "the program reported more values than the test has calls"
    failure = failed_call(values)
    if failure:
        return False, failure
    if len(values) != len(test.holes):
        return False, "the program reported fewer values than the test has calls"
    if plan.mode(i) == "judge":
        out.pending[i] = values
        return None, ""
    expected = plan.expected[i] if test.expect_key else _literal(test.expected or "None")
    return compare(test.op, values[0]["value"], expected)


def compare(op: str, encoded: Any, expected: Any) -> tuple[bool, str]:
    """Decide a check of the caller's (`op`: a comparison or a truth test) on the plain
    value the program reported, with builtin types only."""
    try:
        value = plain.decode(encoded)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return False, f"the program reported a value that is not plain data ({exc})"
    if op in ("truth", "not"):
        passed = bool(value) is (op == "truth")
    elif op in ("==", "!="):
        passed = (value == expected) is (op == "==")
    else:
        passed = (value is expected) is (op == "is")
    return (True, "") if passed else (False, "AssertionError")


@lru_cache(maxsize=LITERAL_CACHE)
def _literal(source: str) -> Any:
    return ast.literal_eval(source)


def judge_job(plan: Plan, outcome: Outcome, nonce: str) -> dict[str, Any]:
    """A judge run for the tests still pending: the suite's trusted steps, in order, and for
    the pending ones the check and the reported values."""
    tests: list[dict[str, Any]] = []
    for i, test in enumerate(plan.suite.tests):
        entry: dict[str, Any] = {"steps": [list(s) for s in test.steps if s[0] == "run"]}
        if i in outcome.pending:
            entry.update(check=test.check, values=outcome.pending[i])
        tests.append(entry)
    setup = [list(s) for s in plan.suite.setup_steps if s[0] == "run"]
    return {"mode": "judge", "setup": setup, "tests": tests, "nonce": nonce}


def settle(outcome: Outcome, result: ExecutionResult, nonce: str) -> None:
    """Fill in the pending verdicts from the judge run's records: `test I pass|fail`, in
    order, then `done N`. A judge run that failed fails its tests, saying why."""
    expected = sorted(outcome.pending)
    decided: dict[int, tuple[bool, str]] = {}
    complete = False
    for record in channel_records(result.channel, nonce):
        if record is None or record[0] in ("exit", "memory"):
            continue
        kind, index, text = record
        if kind == "test" and index.isdigit() and int(index) in outcome.pending:
            decided[int(index)] = (text == "pass", text.removeprefix("fail "))
        elif kind == "done" and index == str(len(expected)):
            complete = True
    why = f"the judge run ended with status {result.status}: {result.reason}"
    if result.status == "ok" and not complete:
        why = "the judge run ended without deciding every test"
    for i in expected:
        verdict, reason = decided.get(i, (False, why))
        outcome.decide(i, verdict, reason)
    outcome.pending = {}


def stdio_outcome(results: Sequence[ExecutionResult], expected: Sequence[str]) -> Outcome:
    """stdin/stdout cases: one run each, stdout compared here with the expected output (which
    never went to the program's run)."""
    from rewardsmith.tools.code.suite import normalize_output

    out = Outcome(len(results), loaded=True)
    for case, (result, wanted) in enumerate(zip(results, expected, strict=True)):
        if result.status == "timeout":
            return Outcome(len(results), "timeout", f"case {case}: {result.reason}")
        if result.status in ("memory", "killed", "error"):
            return Outcome(len(results), "error", f"case {case}: {result.status}: {result.reason}")
        if result.status != "ok":
            tail = result.stderr.strip().splitlines()[-1:] or [result.reason]
            out.record(False, f"case {case} failed: {tail[0]}")
        else:
            right = normalize_output(result.stdout) == normalize_output(wanted)
            out.record(right, f"case {case}: wrong output")
    return out
