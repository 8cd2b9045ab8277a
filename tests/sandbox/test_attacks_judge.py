# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""Attacks through the values a program reports: on the judge run that evaluates a check on
them, and on the caller that reads them.

- A check that unpickles, evaluates or imports a returned value, directly or through helper
  functions the test defines, would run the program's data in the judge, which could then
  write a pass for every test it decides. Such checks are screened out
  (`rewardsmith.tools.code.screen`): the test runs in the program's process, where that code
  ran anyway, and the reward counts it in `in_process`; the other tests stay honest.
- A returned set whose elements share one hash value costs whoever builds it quadratic time
  (ints hash alike in every process). The caller reads values with bounds
  (`rewardsmith.sandbox.plain.decode`) and refuses such a set at once.
"""

from __future__ import annotations

import json
import time

from sandbox_helpers import GRACE, LIMITS, code_tool, leftover_processes  # noqa: F401

from rewardsmith.tools.code import CodeTool
from rewardsmith.types import Reward, Sample

# Evaluated in whoever decodes it: it makes every later verdict of a judge run a pass, and
# returns what the test expects of it.
TAKE_OVER = (
    "__import__('rewardsmith.sandbox.judge', fromlist=['x']).__dict__"
    ".update(check=lambda *args: (True, '')) or 2"
)


def grade(tool: CodeTool, code: str, reference: str) -> tuple[Reward, float]:
    start = time.monotonic()
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    return reward, time.monotonic() - start


def assert_only_the_in_process_test_passed(tool: CodeTool, reward: Reward, elapsed: float) -> None:
    # The test that runs the value as code was decided in the program's own process (and
    # may be faked there, which the reward says); the honest judge fails the other.
    assert reward.components == {"passed": 1.0, "total": 2.0, "in_process": 1.0}, reward
    assert reward.reason == "test 1 failed: AssertionError", reward
    assert elapsed < 3 * (LIMITS.wall_seconds + GRACE)  # in process, decomposed, the judge
    assert leftover_processes(tool.sandbox.worker_pids()) == []


def test_a_check_that_unpickles_the_returned_value(code_tool: CodeTool) -> None:
    reference = json.dumps(
        {
            "test_imports": ["import pickle", "import math"],
            "test_list": [
                "assert pickle.loads(load(2)) == 2",
                "assert math.isclose(area(2), 12.566, rel_tol=1e-3)",
            ],
        }
    )
    code = f"""
import pickle
class Payload:
    def __reduce__(self):
        return (eval, ({TAKE_OVER!r},))
def load(x):
    return pickle.dumps(Payload())
def area(r):
    return 0.0
"""
    reward, elapsed = grade(code_tool, code, reference)
    assert_only_the_in_process_test_passed(code_tool, reward, elapsed)


def test_a_check_that_evaluates_the_value_through_the_tests_own_helpers(
    code_tool: CodeTool,
) -> None:
    # `_judge` calls `_parse`, which calls `eval`: the screen follows the test's own code.
    test = (
        "def _parse(text):\n"
        "    return eval(text)\n"
        "def _judge(text):\n"
        "    return _parse(text) == 2\n"
        "def check(candidate):\n"
        "    assert _judge(candidate(1))\n"
        "    assert abs(candidate(2) - 12.566) < 1e-3\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "area"})
    code = f"def area(r):\n    return {TAKE_OVER!r} if r == 1 else 0.0\n"
    reward, elapsed = grade(code_tool, code, reference)
    assert_only_the_in_process_test_passed(code_tool, reward, elapsed)


def test_a_check_that_reaches_a_loader_through_a_table_of_the_test(code_tool: CodeTool) -> None:
    test = (
        "import math\n"
        "READERS = {'python': eval, 'number': float}\n"
        "def check(candidate):\n"
        "    assert READERS['python'](candidate(1)) == 2\n"
        "    assert math.isclose(candidate(2), 12.566, rel_tol=1e-3)\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "area"})
    code = f"def area(r):\n    return {TAKE_OVER!r} if r == 1 else 0.0\n"
    reward, elapsed = grade(code_tool, code, reference)
    assert_only_the_in_process_test_passed(code_tool, reward, elapsed)


def test_a_set_of_colliding_ints_does_not_cost_the_caller(code_tool: CodeTool) -> None:
    # The program rewrites how its values are encoded (the records are its to write) and
    # reports 100,000 distinct ints with one hash value as a set: building that set takes
    # the reader minutes of CPU. The caller refuses it after counting hashes (linear).
    reference = json.dumps({"test_list": ["assert dedupe([1, 2, 2]) == {1, 2}"]})
    code = """
import sys
plain = sys.modules["rewardsmith.sandbox.plain"]
plain.encode = lambda value: {"set": [i * (2**61 - 1) for i in range(1, 100_001)]}
def dedupe(xs):
    return set(xs)
"""
    reward, elapsed = grade(code_tool, code, reference)
    assert reward.score == 0.0 and reward.status == "ok", reward
    assert "one hash value" in reward.reason, reward
    assert elapsed < 2 * (LIMITS.wall_seconds + GRACE)
    assert leftover_processes(code_tool.sandbox.worker_pids()) == []
