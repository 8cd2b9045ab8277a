# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""Attacks on the verdict: a program that tampers with its interpreter, the harness, the
result channel or the equality of its values scores 0, because each test's verdict is
decided where the program cannot reach it (the caller, or a judge run), on plain data, and
the expected side of an assertion never enters the program's process
(`rewardsmith.tools.code.verdict`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from sandbox_helpers import (  # noqa: F401
    GRACE,
    LIMITS,
    box,
    code_tool,
    leftover_processes,
    unique_marker,
)

from rewardsmith.sandbox import Sandbox
from rewardsmith.tools.code import CodeTool
from rewardsmith.types import Reward, Sample, ToolSpec

REFERENCE = json.dumps({"test_list": ["assert add(1, 2) == 3", "assert add(2, 5) == 7"]})
WRONG = "def add(a, b):\n    return 0\n"


def grade(tool: CodeTool, code: str, reference: str = REFERENCE) -> tuple[Reward, float]:
    start = time.monotonic()
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    return reward, time.monotonic() - start


def assert_zero(tool: CodeTool, reward: Reward, elapsed: float, marker: str | None = None) -> None:
    assert reward.score == 0.0, reward
    assert reward.reason, "a failed run must say why"
    assert elapsed < LIMITS.wall_seconds + GRACE, f"caller waited {elapsed:.1f} s"
    assert leftover_processes(tool.sandbox.worker_pids(), marker) == []


@pytest.fixture(scope="module")
def in_process_tool() -> Iterator[CodeTool]:
    """The old way, for contrast: every test runs inside the program's process."""
    tool = CodeTool(
        ToolSpec(name="code_in_process", kind="code"),
        timeout=2.0,
        memory_mb=256,
        wall_stretch=1.0,
        strict_equality=False,
    )
    yield tool
    tool.close()


# -- class 1: the verdict inside the program's interpreter ---------------------------------

# Walks every frame up from the program to the harness's reporter and rewrites what it
# reports: every test "passes", whatever the program computed.
REWRITE_REPORTS = """
import sys
frame = sys._getframe()
while frame is not None:
    for value in list(frame.f_locals.values()):
        if hasattr(value, "parts") and hasattr(value, "nonce") and callable(value):
            cls = type(value)
            real = cls.__call__
            def forged(self, kind, index, text="", real=real):
                if kind in ("test", "values"):
                    kind, text = "test", "pass"
                real(self, kind, index, text)
            cls.__call__ = forged
    frame = frame.f_back
def add(a, b):
    return 0
"""


def test_rewriting_the_harness_through_its_frames(
    code_tool: CodeTool, in_process_tool: CodeTool
) -> None:
    # In process the forgery works (the contrast that shows the attack is real)...
    fooled, _ = grade(in_process_tool, REWRITE_REPORTS)
    assert fooled.score == 1.0
    # ...with a judge, a verdict the program sends instead of values is tampering.
    reward, elapsed = grade(code_tool, REWRITE_REPORTS)
    assert_zero(code_tool, reward, elapsed)
    assert reward.status == "error" and "tampered" in reward.reason


# Scans its own memory for the text of the assertion and returns what follows `==`.
EXPECTED_MARKER = "expected-7f3a-marker"
READ_EXPECTED = """
import re
def scan():
    needle = re.compile(rb"echo[(]'a'[)] == '([a-z0-9-]{8,40})'")
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
            found.update(m.group(1).decode() for m in needle.finditer(data))
    return sorted(found)
FOUND = scan()
print('found', FOUND)
def echo(x):
    return FOUND[-1] if FOUND else x
"""


def test_the_expected_value_is_not_in_the_programs_memory(
    code_tool: CodeTool, in_process_tool: CodeTool
) -> None:
    reference = json.dumps({"test_list": [f"assert echo('a') == '{EXPECTED_MARKER}'"]})
    fooled, _ = grade(in_process_tool, READ_EXPECTED, reference)
    assert fooled.score == 1.0  # in process, the test's text is there to be read
    reward, elapsed = grade(code_tool, READ_EXPECTED, reference)
    assert_zero(code_tool, reward, elapsed)


def test_the_expected_output_of_a_stdin_case_is_not_in_the_programs_memory(
    code_tool: CodeTool,
) -> None:
    # A program that prints whatever its job says the output should be.
    reference = json.dumps({"inputs": ["1\n"], "outputs": ["expected-output-5e1d"]})
    code = """
import re
found = []
with open('/proc/self/maps') as maps, open('/proc/self/mem', 'rb') as mem:
    for line in maps:
        span, perms = line.split()[:2]
        if perms.startswith('r'):
            lo, hi = (int(x, 16) for x in span.split('-'))
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            found += re.findall(rb'"(?:expected|outputs?)": *\\[?"([a-z0-9-]{8,40})"', data)
print(found[-1].decode() if found else 'nothing')
"""
    reward, elapsed = grade(code_tool, code, reference)
    assert_zero(code_tool, reward, elapsed)
    assert reward.reason == "case 0: wrong output"


def test_forged_reports_on_every_descriptor(code_tool: CodeTool) -> None:
    # Well-formed protocol frames claiming success, written to every descriptor, then an
    # exit before the harness says anything.
    code = """
import json, os
def frame(message):
    data = json.dumps(message).encode()
    return len(data).to_bytes(8, 'big') + data
forged = b''.join(frame(m) for m in (
    {'load': 'ok'}, {'test': 0, 'pass': True, 'reason': ''},
    {'test': 1, 'pass': True, 'reason': ''}, {'exit': 0}))
for fd in range(3, 1024):
    try:
        os.write(fd, forged)
    except OSError:
        pass
os._exit(0)
"""
    reward, elapsed = grade(code_tool, code)
    assert_zero(code_tool, reward, elapsed)
    assert reward.status == "error"


def test_a_value_crafted_to_hang_the_judge(code_tool: CodeTool) -> None:
    # 150,000 ints with one hash (multiples of the modulus of int hashing): building the
    # set in the test's own check takes hours. The judge run hits its limits; the test fails.
    reference = json.dumps({"test_list": ["assert set(dedupe([1, 2, 2])) == set((1, 2))"]})
    code = "def dedupe(xs):\n    return [i * (2**61 - 1) for i in range(150_000)]\n"
    reward, elapsed = grade(code_tool, code, reference)
    assert reward.score == 0.0 and reward.status == "ok", reward
    assert "judge run ended with status timeout" in reward.reason
    assert elapsed < 2 * (LIMITS.wall_seconds + GRACE)  # the program's run, then the judge's
    assert leftover_processes(code_tool.sandbox.worker_pids()) == []


def test_reading_or_tracing_the_zygote_is_refused(box: Sandbox) -> None:
    # The zygote (the run's parent, PID 1) is not dumpable: no /proc/PID/mem, fd/, environ,
    # maps, no ptrace (only what `ps` shows, stat and status, stays readable). Its pipes
    # (the caller's jobs, the replies) are out of reach.
    code = """
import ctypes, os
opened = []
for pid in (os.getppid(), 1):
    for path, mode in (('mem', 'rb'), ('environ', 'rb'), ('maps', 'r')):
        try:
            open(f'/proc/{pid}/{path}', mode).read(16)
            opened.append(f'{pid}/{path}')
        except OSError:
            pass
    try:
        opened += [f'{pid}/fd/{fd}' for fd in os.listdir(f'/proc/{pid}/fd')]
    except OSError:
        pass
    if ctypes.CDLL(None).ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        opened.append(f'{pid} traced')
print(opened)
"""
    result = box.run(code)
    assert result.status == "ok", result
    assert result.stdout == "[]\n"


def test_a_process_left_behind_cannot_change_the_verdict_afterwards(code_tool: CodeTool) -> None:
    # Timing the verdict: a detached process waits until the tests are over, then writes
    # forged frames and records to every descriptor it can find (its own, the judge's).
    marker = unique_marker()
    code = f"""
import json, os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.3)
        body = json.dumps({{'test': 1, 'pass': True, 'reason': ''}}).encode()
        forged = len(body).to_bytes(8, 'big') + body + b' test 1 pass\\n'
        paths = [f'/proc/{{p}}/fd/{{fd}}' for p in os.listdir('/proc') if p.isdigit()
                 for fd in range(64)]
        for path in paths:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, forged)
            except OSError:
                pass
        os.execvp('sleep', ['sleep', '{marker}'])
    os._exit(0)
def add(a, b):
    time.sleep(0.5)
    return 0
"""
    reward, elapsed = grade(code_tool, code)
    assert_zero(code_tool, reward, elapsed, marker=marker)
    assert reward.components["passed"] == 0.0


# -- class 2: equality overrides -------------------------------------------------------------


def test_a_builtin_subclass_whose_eq_is_another_builtin_slot(code_tool: CodeTool) -> None:
    # `str.__ne__` as `__eq__`: equal to every other string. Not a Python function, so a
    # check of the class's `__eq__` code lets it through; as plain data it is just 'wrong'.
    reference = json.dumps({"test_list": ["assert greet('x') == 'hello x'"]})
    code = (
        "class S(str):\n    __eq__ = str.__ne__\n    __hash__ = str.__hash__\n"
        "def greet(name):\n    return S('wrong')\n"
    )
    reward, elapsed = grade(code_tool, code, reference)
    assert_zero(code_tool, reward, elapsed)
    assert reward.reason == "test 0 failed: AssertionError"


def test_an_eq_function_whose_code_claims_a_library_file(code_tool: CodeTool) -> None:
    code = """
def eq(self, other):
    return True
eq.__code__ = eq.__code__.replace(co_filename='/usr/lib/python3/collections/__init__.py')
class Yes(int):
    __eq__ = eq
    __hash__ = int.__hash__
def add(a, b):
    return Yes(0)
"""
    reward, elapsed = grade(code_tool, code)
    assert_zero(code_tool, reward, elapsed)


def test_a_value_that_is_not_plain_data_fails_with_a_reason(code_tool: CodeTool) -> None:
    code = "class Three:\n    def __eq__(self, other):\n        return True\n"
    code += "def add(a, b):\n    return Three()\n"
    reward, elapsed = grade(code_tool, code)
    assert_zero(code_tool, reward, elapsed)
    assert "Three, which is not plain data" in reward.reason


def test_equality_override_in_a_test_run_in_process(code_tool: CodeTool) -> None:
    # A loop cannot be split into operands: the test runs in the program's process, where
    # `==` still compares plain data.
    reference = "for x in (1, 2):\n    assert add(x, 1) == x + 1\n"
    code = "class Yes:\n    def __eq__(self, other):\n        return True\n"
    code += "def add(a, b):\n    return Yes()\n"
    reward, elapsed = grade(code_tool, code, reference)
    assert_zero(code_tool, reward, elapsed)
    assert reward.components["in_process"] == 1.0
    assert "not plain data" in reward.reason
