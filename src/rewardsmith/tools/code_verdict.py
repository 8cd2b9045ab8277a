"""Verdicts of the `code` tool: the program run's records read here, each test decided where
the program cannot reach it.

A program run (`rewardsmith.sandbox.harness`, `tests` mode) reports, per test, the values of
the calls into the program (a decomposed test) or its own pass/fail (a test run in
process). A decomposed test is decided

- here, when its check is a comparison with a literal or a truth test (`op`): the value is
  decoded as plain data (`rewardsmith.sandbox.plain`: only builtin types are built) and
  compared with the literal (`ast.literal_eval`) using the builtins' own `==`; no code of the
  program or of the reference runs in this process;
- by a judge run otherwise (`needs_judge`): a sandboxed run of its own that never held the
  program evaluates the check on the values (`judge_job`, `settle`).

The records come from the program's process, so they can say anything; what they can say
that counts is which values its calls returned. A record out of order, a test reported in
the wrong form, a line without the nonce, all mean the channel was tampered with, and the
run scores 0.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.judge import failed_call
from rewardsmith.sandbox.pool import ExecutionResult
from rewardsmith.tools.code_reference import TestSuite
from rewardsmith.tools.code_split import SplitTest
from rewardsmith.types import Status

# Reasons quote at most this much of a failure message.
REASON_CHARS = 160
# Literals parsed from references, kept for the next sample of the same task.
LITERAL_CACHE = 4096


@dataclass
class Outcome:
    """What a run (or a set of stdin/stdout runs) says: verdicts per test, or a failure.

    `verdicts[i]` is None while test i waits for the judge (`pending[i]` holds its values)."""

    total: int
    status: Status = "ok"
    reason: str = ""
    verdicts: list[bool | None] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    loaded: bool | None = None
    load_reason: str = ""
    pending: dict[int, Any] = field(default_factory=dict)

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


def _broken(total: int, why: str) -> Outcome:
    return Outcome(total, "error", f"result channel tampered with ({why})")


def read_records(result: ExecutionResult, nonce: str, suite: TestSuite) -> Outcome:
    """The program run's records: exactly `load`, then tests 0..total-1 in order, each in the
    form the suite gave it (`values` for a decomposed test, `test` for one run in process),
    then `done total`. Decides every test it can here; the rest wait in `pending`."""
    total = suite.total
    out = Outcome(total)
    done = False
    for line in result.channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce:
            return _broken(total, "unsigned record")
        kind, index, text = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return Outcome(total, "error", f"harness error: {text}"[:REASON_CHARS])
        first = out.loaded is None
        if done or (kind == "load" and not first) or (kind != "load" and out.loaded is not True):
            return _broken(total, "bad sequence")
        if kind == "load":
            out.loaded, out.load_reason = index == "ok", text
        elif kind in ("values", "test"):
            i = len(out.verdicts)
            if index != str(i) or i >= total:
                return _broken(total, "bad test index")
            test = suite.tests[i]
            if (kind == "test") is not test.in_process:
                return _broken(total, "a test reported in the wrong form")
            verdict, reason = _decide(test, kind, text, out, i)
            out.record(verdict, f"test {i} failed: {reason}")
        elif kind == "done":
            if index != str(total) or len(out.verdicts) != total:
                return _broken(total, "bad count")
            done = True
        else:
            return _broken(total, "unknown record")
    if result.status != "ok":
        return Outcome(
            total,
            "timeout" if result.status == "timeout" else "error",
            f"{result.status}: {result.reason}",
        )
    if out.loaded is not False and not done:
        reported = len(out.verdicts)
        why = f"program ended before the tests finished ({reported} of {total} reported)"
        return Outcome(total, "error", why)
    if out.loaded is False:
        out.pending = {}
    return out


def _decide(test: SplitTest, kind: str, text: str, out: Outcome, i: int) -> tuple[bool | None, str]:
    """A test's verdict from its record (None: it waits for the judge), and why it failed."""
    if kind == "test":
        return text == "pass", text.removeprefix("fail ")
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
    if test.needs_judge:
        out.pending[i] = values
        return None, ""
    return compare(test, values[0]["value"])


def compare(test: SplitTest, encoded: Any) -> tuple[bool, str]:
    """Decide a test whose check is a comparison with a literal or a truth test, on the
    plain value the program reported, with builtin types only."""
    try:
        value = plain.decode(encoded)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return False, f"the program reported a value that is not plain data ({exc})"
    if test.op in ("truth", "not"):
        passed = bool(value) is (test.op == "truth")
    else:
        expected = _literal(test.expected)
        if test.op in ("==", "!="):
            passed = (value == expected) is (test.op == "==")
        else:
            passed = (value is expected) is (test.op == "is")
    return (True, "") if passed else (False, "AssertionError")


@lru_cache(maxsize=LITERAL_CACHE)
def _literal(source: str) -> Any:
    return ast.literal_eval(source)


def judge_job(suite: TestSuite, outcome: Outcome, nonce: str) -> dict[str, Any]:
    """A judge run for the tests still pending: the suite's trusted setup, each test's
    statements that do not touch the program (in order), and for the pending ones the check
    and the reported values."""
    tests: list[dict[str, Any]] = []
    for i, test in enumerate(suite.tests):
        entry: dict[str, Any] = {"judge_pre": test.judge_pre}
        if i in outcome.pending:
            entry.update(check=test.check, values=outcome.pending[i])
        tests.append(entry)
    return {"mode": "judge", "setup": suite.judge_setup, "tests": tests, "nonce": nonce}


def settle(outcome: Outcome, result: ExecutionResult, nonce: str) -> None:
    """Fill in the pending verdicts from the judge run's records: `test I pass|fail`, in
    order, then `done N`. A judge run that failed fails its tests, saying why."""
    expected = sorted(outcome.pending)
    decided: dict[int, tuple[bool, str]] = {}
    complete = False
    for line in result.channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce or parts[1] in ("exit", "memory"):
            continue
        kind, index, text = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        if kind == "test" and index.isdigit() and int(index) in outcome.pending:
            decided[int(index)] = (text == "pass", text.removeprefix("fail "))
        elif kind == "done" and index == str(len(expected)):
            complete = True
    why = f"the judge run ended with status {result.status}: {result.reason}"
    if result.status == "ok" and not complete:
        why = "the judge run ended without deciding every test"
    for i in expected:
        verdict, reason = decided.get(i, (False, why))
        outcome.verdicts[i] = verdict
        outcome.reasons[i] = "" if verdict else f"test {i} failed: {reason}"
    outcome.pending = {}


def stdio_outcome(results: Sequence[ExecutionResult], expected: Sequence[str]) -> Outcome:
    """stdin/stdout cases: one run each, stdout compared here with the expected output (which
    never went to the program's run)."""
    from rewardsmith.tools.code_reference import normalize_output

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
