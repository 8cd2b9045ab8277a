"""The run's judge: turns what the program's process reports into the run's result records.

The judge is the run's first process (`child.py`); the program runs in a process it forked
(`harness.py`), which never holds the result channel, the nonce or an expected value.
Records go on the channel as lines `NONCE KIND INDEX TEXT` (the caller checks the nonce and
the order: `rewardsmith.tools.code.read_records`, `rewardsmith.sandbox.probe`):

- `load ok|fail REASON`, then per test `test I pass` or `test I fail REASON`, then `done N`
  (`tests` mode); `result I JSON` per batch, then `done N` (`reward` mode);
- `memory 0` when the program saw a MemoryError, `error 0 REASON` when the program's
  process broke the protocol or the harness failed, and last `exit STATUS CPU` (a wait
  status, and CPU seconds when known), which lets the zygote answer at once.

A decomposed test (`rewardsmith.tools.code_split`) is decided here: its holes arrive as
plain data (`plain.py`), the judge binds them to `__rs_hole_K__` and evaluates the test's
`check` in its own namespace, where only the test's trusted setup ran. The program's
`__eq__`, its builtins, its patched modules play no part. A test run in process is relayed
as the program reported it: that is the one verdict the program's process can fake.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.harness import describe

# Reasons are for people: one line, clipped.
REASON_CHARS = 300
HOLE_NAME = "__rs_hole_{}__"


class ProtocolError(Exception):
    """The program's process sent what the harness never sends: it tampered with it."""


class Records:
    """The run's result records, buffered and written in one go."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.lines: list[str] = []

    def add(self, kind: str, index: Any, text: str = "") -> None:
        if kind != "result":  # a result is JSON, kept whole; any other text is a reason
            text = " ".join(str(text).split())[:REASON_CHARS]
        self.lines.append(f"{self.nonce} {kind} {index} {text}\n")

    def take(self) -> bytes:
        data = "".join(self.lines).encode("utf-8", "replace")
        self.lines = []
        return data


def program_part(job: Mapping[str, Any]) -> dict[str, Any]:
    """What the program's process gets of a job: never the checks, the judge's setup or the
    nonce."""
    part = {k: v for k, v in job.items() if k not in ("nonce", "judge_setup")}
    if job.get("mode") == "tests":
        part["tests"] = [
            {"code": t["code"]}
            if "code" in t
            else {"pre": t.get("pre", ""), "holes": t["holes"], "truth": bool(t.get("truth"))}
            for t in job["tests"]
        ]
    return part


class Judge:
    """Checks the program's messages against the job, in order, and records verdicts."""

    def __init__(self, job: Mapping[str, Any], records: Records) -> None:
        self.mode = job["mode"]
        self.records = records
        self.tests: Sequence[Mapping[str, Any]] = job.get("tests") or []
        self.batches = len(job.get("batches") or [])
        self.expected = len(self.tests) if self.mode == "tests" else self.batches
        self.next = 0  # the index of the next test or batch result
        self.loaded: bool | None = None
        self.finished = False  # `exit` arrived
        self.exit_code: int | None = None
        self.memory = False
        self.namespace: dict[str, Any] = {"__name__": "judge", "__builtins__": builtins}
        self.setup_error = ""
        self._judge_setup = job.get("judge_setup") or ""

    def run_setup(self) -> None:
        """Run the test's trusted setup here (imports the checks use); called while the
        program runs. A failure is kept: the checks that then fail say so."""
        if self.mode != "tests" or not self._judge_setup:
            return
        try:
            exec(compile(self._judge_setup, "<judge setup>", "exec"), self.namespace)
        except BaseException as exc:
            self.setup_error = describe(exc)

    def handle(self, message: Any) -> None:
        """One message of the program's process; raises `ProtocolError` on anything the
        harness would not send."""
        if not isinstance(message, dict) or self.finished:
            raise ProtocolError("a message after the end, or not an object")
        if message.get("memory") is True and len(message) == 1:
            if not self.memory:
                self.records.add("memory", 0, "MemoryError")
            self.memory = True
        elif "error" in message and len(message) == 1:
            self.records.add("error", 0, f"harness: {message['error']}")
        elif "exit" in message and len(message) == 1:
            if type(message["exit"]) is not int:
                raise ProtocolError("an exit code that is not a number")
            self.exit_code = message["exit"]
            self.finished = True
        elif "load" in message:
            self._load(message)
        elif "test" in message and self.mode == "tests":
            self._test(message)
        elif "result" in message and self.mode == "reward":
            self._result(message)
        else:
            raise ProtocolError("an unknown message")

    def done(self) -> None:
        """After the program's last message: `done N` if every test or batch was reported."""
        if self.mode != "exec" and self.loaded and self.next == self.expected:
            self.records.add("done", self.expected)

    def _load(self, message: Mapping[str, Any]) -> None:
        if self.mode == "exec" or self.loaded is not None:
            raise ProtocolError("a second load report")
        self.loaded = message["load"] == "ok"
        self.records.add("load", "ok" if self.loaded else "fail", str(message.get("reason", "")))

    def _in_order(self, index: Any) -> None:
        if not self.loaded or index != self.next or self.next >= self.expected:
            raise ProtocolError("a report out of order")
        self.next += 1

    def _result(self, message: Mapping[str, Any]) -> None:
        self._in_order(message["result"])
        self.records.add("result", message["result"], json.dumps(message.get("value")))

    def _test(self, message: Mapping[str, Any]) -> None:
        index = message["test"]
        self._in_order(index)
        test = self.tests[index]
        if "code" in test:  # run in process: the program's own verdict
            if "pass" not in message or not isinstance(message["pass"], bool):
                raise ProtocolError("a test run in process without a verdict")
            passed, reason = message["pass"], str(message.get("reason", ""))
        else:
            values = message.get("values")
            if not isinstance(values, list):
                raise ProtocolError("a decomposed test without values")
            passed, reason = self._check(test, values)
        self.records.add("test", index, "pass" if passed else f"fail {reason}")

    def _check(self, test: Mapping[str, Any], values: list[Any]) -> tuple[bool, str]:
        """Decide a decomposed test from its holes' values."""
        holes = test["holes"]
        if len(values) > len(holes) or not all(isinstance(v, dict) and len(v) == 1 for v in values):
            raise ProtocolError("values that do not match the test")
        namespace = self.namespace
        pre_error = ""
        if test.get("judge_pre"):  # always, in order: later tests may use what it binds
            try:
                exec(compile(test["judge_pre"], "<test setup>", "exec"), namespace)
            except BaseException as exc:
                pre_error = describe(exc)
        if values and "raised" in values[-1]:
            return False, str(values[-1]["raised"])
        if values and "not_plain" in values[-1]:
            return False, f"the program returned {values[-1]['not_plain']}"
        if len(values) != len(holes) or not all("value" in v for v in values):
            raise ProtocolError("values that do not match the test")
        try:
            decoded = [plain.decode(v["value"]) for v in values]
        except (ValueError, TypeError, RecursionError, MemoryError) as exc:
            raise ProtocolError(f"a value that is not plain data ({exc})") from None
        try:
            for k, value in enumerate(decoded):
                namespace[HOLE_NAME.format(k)] = value
            verdict = bool(eval(compile(test["check"], "<check>", "eval"), namespace))
        except BaseException as exc:
            reason = describe(exc)
            for failed, what in ((pre_error, "test's setup"), (self.setup_error, "setup")):
                if failed:
                    reason += f" (the judge could not run the {what}: {failed})"
            return False, reason
        finally:
            for k in range(len(decoded)):
                namespace.pop(HOLE_NAME.format(k), None)
        return (True, "") if verdict else (False, "AssertionError")
