"""A judge run: a test's own trusted code, in a sandboxed run that never holds the program.

The caller decides most decomposed tests itself (`assert f(x) == [1, 2]`: a value compared
with a literal). The judge does what needs the test's own code, in a fresh child of a zygote:

- **prepare** (`"prepare": true`, once per reference): run the test's trusted statements
  and evaluate, at their place, the values the program's run needs and the expected sides
  the caller compares with (`odd_sum` in `assert candidate(lst) == odd_sum`), so that the
  program's process receives arguments as plain data and never the statements that make
  them (nor the expected values they make beside them);
- **verdicts**: evaluate the checks that need code (`abs(H - 0.33) < 1e-6`,
  `math.isclose(H, 4188.79, rel_tol=0.001)`, `set(H) == set((4, 5))`) on the values a
  program run reported (plain data, `plain.py`, decoded here: only builtin types are built).

The job (`mode: judge`) carries `setup`, then per test its `steps` in order: `["run", SRC]`
(a trusted statement), `["bind", KEY, NAME]` and `["value", KEY, SRC]` (values the program's
run needs: a name it gets whole, an expression it gets the value of), `["expect", KEY, SRC]`
(an expected side); for verdicts, the tests to decide also carry their `check`
(holes named `__rs_hole_K__`) and the `values` reported for them. Records: preparing, `value
KEY JSON` per bind, value or expect step (`{"value": plain}`, `{"import": [module, name]}` for a
module or a module's function or class, `{"not_plain": why}`, `{"raised": why}`), then
`done N` (how many values); deciding, `test I pass` or `test I fail REASON` per check, then
`done N` (how many checks).

What the program can still do to a verdicts run is choose its values: checks that would run
a value as code are not decomposed (`rewardsmith.tools.code.screen`), and a value crafted to
make a check slow ends the judge run at its limits, which fails the test.
"""

from __future__ import annotations

import builtins
import importlib
import json
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.harness import REASON_CHARS, describe

HOLE_NAME = "__rs_hole_{}__"
Report = Callable[[str, Any, str], None]


def run_judge(job: Mapping[str, Any], report: Report) -> int:
    """Prepare the values of `job`, or decide every test of it that has a check; report
    each. Returns 0."""
    namespace: dict[str, Any] = {"__name__": "judge", "__builtins__": builtins}
    prepare = bool(job.get("prepare"))
    values = report if prepare else None
    setup_error, count = _steps(job.get("setup") or [], namespace, values)
    for i, test in enumerate(job["tests"]):
        pre_error, reported = _steps(test.get("steps") or [], namespace, values)
        count += reported
        if prepare or "check" not in test:
            continue
        passed, reason = check(test["check"], test["values"], namespace)
        for failed, what in ((pre_error, "the test's setup"), (setup_error, "the setup")):
            if failed and not passed:
                reason += f" (the judge could not run {what}: {failed})"
        report("test", i, "pass" if passed else f"fail {reason}")
        count += 1
    report("done", count, "")
    return 0


def _steps(
    steps: Sequence[Any], namespace: dict[str, Any], report: Report | None
) -> tuple[str, int]:
    """Run a test's trusted steps in order; with `report` (preparing), evaluate and report
    its values too. Returns the first statement's error ("" if none) and how many values
    were reported."""
    error, reported = "", 0
    for step in steps:
        if step[0] == "run":
            failed = _run(step[1], "<test setup>", namespace)
            error = error or failed
        elif report is not None:
            kind, key, source = step
            report("value", key, json.dumps(_value(kind, source, namespace)))
            reported += 1
    return error, reported


def _value(kind: str, source: str, namespace: dict[str, Any]) -> dict[str, Any]:
    """A value the program's run needs (`bind`) or the caller compares with (`expect`), as
    it travels: plain data, or a module or a module's function or class by name."""
    try:
        value = eval(compile(source, "<test value>", "eval"), namespace)
    except BaseException as exc:
        return {"raised": describe(exc)}
    if kind != "expect":  # an input of the program's run may be a module, or from one
        name = importable(value)
        if name is not None:
            return {"import": name}
    try:
        return {"value": plain.encode(value)}
    except plain.NotPlain as exc:
        return {"not_plain": str(exc)[:REASON_CHARS]}


def importable(value: Any) -> list[str] | None:
    """[module, qualified name] by which a module, or a function or class a module defines,
    can be imported again as the same object; None for anything else (a function or class
    the test defines, a lambda)."""
    if isinstance(value, types.ModuleType):
        name = value.__name__
        return [name, ""] if sys.modules.get(name) is value else None
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or module == "judge":
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return [module, qualname] if found is value else None


def _run(source: str, name: str, namespace: dict[str, Any]) -> str:
    """Run trusted test code; the error, if any, for the reasons of what then fails."""
    if not source:
        return ""
    try:
        exec(compile(source, name, "exec"), namespace)
    except BaseException as exc:
        return describe(exc)
    return ""


def check(source: str, values: Any, namespace: dict[str, Any]) -> tuple[bool, str]:
    """Evaluate a test's check with the program's reported values bound to its holes.

    `values` is what the program run reported for the test: per hole `{"value": plain}`,
    or last `{"raised": reason}` / `{"not_plain": reason}` when the program's call did not
    give a plain value (then the test fails with that reason)."""
    failure = failed_call(values)
    if failure:
        return False, failure
    try:
        decoded = [plain.decode(v["value"]) for v in values]
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        return False, f"the program reported a value that is not plain data ({exc})"
    try:
        for k, value in enumerate(decoded):
            namespace[HOLE_NAME.format(k)] = value
        verdict = bool(eval(compile(source, "<check>", "eval"), namespace))
    except BaseException as exc:
        return False, describe(exc)
    finally:
        for k in range(len(decoded)):
            namespace.pop(HOLE_NAME.format(k), None)
    return (True, "") if verdict else (False, "AssertionError")


def failed_call(values: Any) -> str:
    """Why a decomposed test failed before any comparison (a call raised, or returned what
    is not plain data), or "" when every hole has a value; a malformed report says so."""
    if not isinstance(values, list) or not all(isinstance(v, dict) and len(v) == 1 for v in values):
        return "the program reported values in a shape the harness never writes"
    if values and "raised" in values[-1]:
        return str(values[-1]["raised"])
    if values and "not_plain" in values[-1]:
        return f"the program returned {values[-1]['not_plain']}"
    if not all("value" in v for v in values):
        return "the program reported values in a shape the harness never writes"
    return ""
