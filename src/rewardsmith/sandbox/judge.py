"""A judge run: a test's own checks, evaluated on the values a program run reported.

Most decomposed tests are decided by the caller, which compares a value with a literal
(`assert f(x) == [1, 2]`). A test whose check needs code of its own (`abs(H - 0.33) < 1e-6`,
`math.isclose(H, 4188.79, rel_tol=0.001)`, `set(H) == set((4, 5))`) is decided here, in a
sandboxed run of its own: a fresh child of the zygote that never held the program. The job
(`mode: judge`) carries the test's trusted setup (`setup`: its imports), then per test the
statements before it that do not touch the program (`judge_pre`, run in order) and, for the
tests to decide, the `check` (holes named `__rs_hole_K__`) and the `values` the program run
reported (plain data, `plain.py`, decoded here: only builtin types are ever built).

Records: `test I pass` or `test I fail REASON` for each test with a check (I is its index in
the job), then `done N` (the number of checks).

What the program can still do to a judge run is choose its values: a check that evaluates a
value as code (`eval(H)`) would run it here, so such assertions are not decomposed
(`rewardsmith.tools.code_split`), and a value crafted to make a check slow ends the judge
run at its limits, which fails the test.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping
from typing import Any

from rewardsmith.sandbox import plain
from rewardsmith.sandbox.harness import describe

HOLE_NAME = "__rs_hole_{}__"


def run_judge(job: Mapping[str, Any], report: Callable[[str, Any, str], None]) -> int:
    """Decide every test of `job` that has a check; report each verdict. Returns 0."""
    namespace: dict[str, Any] = {"__name__": "judge", "__builtins__": builtins}
    setup_error = _run(job.get("setup") or "", "<test setup>", namespace)
    decided = 0
    for i, test in enumerate(job["tests"]):
        pre_error = _run(test.get("judge_pre") or "", f"<test {i} setup>", namespace)
        if "check" not in test:
            continue
        passed, reason = check(test["check"], test["values"], namespace)
        for failed, what in ((pre_error, "the test's setup"), (setup_error, "the setup")):
            if failed and not passed:
                reason += f" (the judge could not run {what}: {failed})"
        report("test", i, "pass" if passed else f"fail {reason}")
        decided += 1
    report("done", decided, "")
    return 0


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
