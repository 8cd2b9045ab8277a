# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""Attacks that look for the expected side of a test in the program's own process: values
the test computes before its assertion, tables at the top of a test module, MBPP's
`test_setup_code`. A program that finds them returns them and passes without solving
anything. The program's process gets the calls into it and their arguments, as plain data
computed by a judge run (`rewardsmith.tools.code.plan`), and nothing else of the test; a test
that must run in process gets a run of its own, which reports nothing else, and the reward
counts it (`in_process`)."""

from __future__ import annotations

import json
import time

from sandbox_helpers import GRACE, LIMITS, code_tool, leftover_processes  # noqa: F401

from rewardsmith.tools.code import CodeTool
from rewardsmith.types import Reward, Sample

# A function that returns whatever the test left in the program's globals (HumanEval's
# `check` pre-statements, a test module's tables, MBPP's setup code all ran there).
RETURN_THE_GLOBAL = """
def {name}(*args):
    for key in {keys}:
        table = globals().get(key)
        if table is None:
            continue
        if isinstance(table, dict):
            return table.get(args[0] if len(args) == 1 else args, table)
        return table[args[0]] if isinstance(table, list) and args and isinstance(args[0], int) else table
    return None
"""


def grade(tool: CodeTool, code: str, reference: str) -> tuple[Reward, float]:
    start = time.monotonic()
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    return reward, time.monotonic() - start


def assert_not_passed(tool: CodeTool, reward: Reward, elapsed: float) -> None:
    assert reward.score == 0.0, reward
    assert reward.status == "ok" and reward.components["in_process"] == 0.0, reward
    assert elapsed < 2 * (LIMITS.wall_seconds + GRACE)  # a prepare run, then the program's
    assert leftover_processes(tool.sandbox.worker_pids()) == []


def test_a_value_the_test_computes_before_its_assertion(code_tool: CodeTool) -> None:
    # HumanEval/151's shape: `odd_sum = sum(...)` runs before `assert candidate(lst) == odd_sum`.
    test = (
        "def check(candidate):\n"
        "    assert candidate([1, 2]) == 1\n"
        "    lst = list(range(-99, 100, 2))\n"
        "    odd_sum = sum([i ** 2 for i in lst if i % 2 != 0 and i > 0])\n"
        "    assert candidate(lst) == odd_sum\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "double_the_difference"})
    code = RETURN_THE_GLOBAL.format(name="double_the_difference", keys="['odd_sum']")
    reward, elapsed = grade(code_tool, code, reference)
    assert_not_passed(code_tool, reward, elapsed)


def test_a_table_at_the_top_of_a_test_module(code_tool: CodeTool) -> None:
    test = (
        "ANSWERS = {3: 'fizz', 5: 'buzz', 15: 'fizzbuzz'}\n"
        "def check(candidate):\n"
        "    for_three = ANSWERS[3]\n"
        "    assert candidate(3) == for_three\n"
        "    assert candidate(5) == ANSWERS[5]\n"
        "    assert candidate(15) == ANSWERS[15]\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "fizz"})
    reward, elapsed = grade(
        code_tool, RETURN_THE_GLOBAL.format(name="fizz", keys="['ANSWERS']"), reference
    )
    assert_not_passed(code_tool, reward, elapsed)


def test_a_table_of_inputs_and_expected_outputs(code_tool: CodeTool) -> None:
    # Each assertion takes its input from a table that also holds the expected output: the
    # call must get the input alone, not the table.
    test = (
        "CASES = [(3, 'fizz'), (5, 'buzz'), (15, 'fizzbuzz')]\n"
        "def check(candidate):\n"
        "    assert candidate(CASES[0][0]) == CASES[0][1]\n"
        "    assert candidate(CASES[1][0]) == CASES[1][1]\n"
        "    assert candidate(CASES[2][0]) == CASES[2][1]\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "fizz"})
    code = """
def fizz(n):
    for value in list(globals().values()):
        if isinstance(value, list):
            for pair in value:
                if isinstance(pair, tuple) and len(pair) == 2 and pair[0] == n:
                    return pair[1]
    return None
"""
    reward, elapsed = grade(code_tool, code, reference)
    assert_not_passed(code_tool, reward, elapsed)


def test_mbpp_setup_code(code_tool: CodeTool) -> None:
    reference = json.dumps(
        {
            "test_setup_code": "expected = [30, 110, 42]",
            "test_list": [
                "assert secret_sum(1) == expected[0]",
                "assert secret_sum(2) == expected[1]",
                "assert secret_sum(3) == expected[2]",
            ],
        }
    )
    code = "def secret_sum(n):\n    return globals().get('expected', [0, 0, 0])[n - 1]\n"
    reward, elapsed = grade(code_tool, code, reference)
    assert_not_passed(code_tool, reward, elapsed)


# Scans its own memory for the marker the test's statements build (never in an assertion).
SCAN_MEMORY = """
import re
def scan():
    needle = re.compile(rb"pre-statement-[0-9a-f]{12}")
    found = set()
    with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb') as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith('r'):
                continue
            lo, hi = (int(x, 16) for x in span.split('-'))
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            found.update(m.group(0).decode() for m in needle.finditer(data))
    return sorted(found)
def echo(x):
    found = scan()
    return found[-1] if found else x
"""


def test_the_tests_own_statements_are_not_in_the_programs_memory(code_tool: CodeTool) -> None:
    # The expected value is made by statements before the assertion (and by a setup table):
    # none of their text, nor their value, is anywhere in the program's process.
    parts = ("pre-statement-", "7d2c", "9e1f", "0a5b")
    reference = json.dumps(
        {
            "test_setup_code": f"HALF = {parts[0]!r} + {parts[1]!r}",
            "test_list": [
                f"wanted = HALF + {parts[2]!r} + {parts[3]!r}\nassert echo('a') == wanted"
            ],
        }
    )
    reward, elapsed = grade(code_tool, SCAN_MEMORY, reference)
    assert_not_passed(code_tool, reward, elapsed)


def test_a_test_run_in_process_does_not_open_the_others(code_tool: CodeTool) -> None:
    # One test is a loop (it must run in the program's process, with the module's table);
    # the others are decomposed: the run that evaluates them never holds the table.
    test = (
        "ANSWERS = {3: 'fizz', 5: 'buzz', 15: 'fizzbuzz', 1: '1'}\n"
        "def check(candidate):\n"
        "    assert candidate(3) == ANSWERS[3]\n"
        "    assert candidate(5) == ANSWERS[5]\n"
        "    assert candidate(15) == ANSWERS[15]\n"
        "    for n in (1,):\n"
        "        assert candidate(n) == ANSWERS[n]\n"
    )
    reference = json.dumps({"prompt": "", "test": test, "entry_point": "fizz"})
    code = RETURN_THE_GLOBAL.format(name="fizz", keys="['ANSWERS']")
    reward, elapsed = grade(code_tool, code, reference)
    # It fakes the one in-process test (which the reward says), and nothing else.
    assert reward.components == {"passed": 1.0, "total": 4.0, "in_process": 1.0}, reward
    assert reward.reason == "test 0 failed: AssertionError"
    assert leftover_processes(code_tool.sandbox.worker_pids()) == []
