"""Where the `code` tool decides each test, and what the program's process receives: only the
calls into it and their arguments as plain data, never the test's own statements, tables or
expected values (`rewardsmith.tools.code.plan`, `split`, `screen`)."""

from __future__ import annotations

import gzip
import json
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.sandbox import Sandbox
from rewardsmith.tools.code import CodeTool
from rewardsmith.tools.code.dataset import read_dataset, to_samples
from rewardsmith.tools.code.plan import Plan, plan_from, prepare_job
from rewardsmith.tools.code.suite import parse_reference
from rewardsmith.types import Sample, ToolSpec

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "code"


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=1)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def tool() -> Iterator[CodeTool]:
    t = CodeTool(ToolSpec(name="code", kind="code"), workers=1)
    yield t
    t.close()


def planned(reference: str, box: Sandbox) -> Plan:
    suite = parse_reference(reference)
    if not suite.needs_preparing:
        return Plan(suite)
    nonce = secrets.token_hex(8)
    plan, final = plan_from(suite, box.run_job(prepare_job(suite, nonce)), nonce)
    assert final
    return plan


def humaneval(test: str, entry: str = "f") -> str:
    return json.dumps({"prompt": "", "test": test, "entry_point": entry})


# (reference, a text the test holds that the program's process must never receive)
HIDDEN = [
    # a value computed before the assertion (HumanEval/151's `odd_sum`)
    (
        humaneval(
            "def check(candidate):\n    lst = [5, 7]\n    hidden = sum(lst) * 1000003\n"
            "    assert candidate(lst) == hidden\n"
        ),
        "1000003",
    ),
    # a table at the top of the test module
    (
        humaneval(
            "TABLE = {'k': 'v-777'}\ndef check(candidate):\n    assert candidate(1) == TABLE['k']\n"
        ),
        "v-777",
    ),
    # a table of (input, expected) pairs: the call gets its input, not the table
    (
        humaneval(
            "CASES = [(1, 'out-555'), (2, 'out-666')]\ndef check(candidate):\n"
            "    assert candidate(CASES[0][0]) == CASES[0][1]\n"
            "    assert candidate(*[CASES[1][0]]) == CASES[1][1]\n"
        ),
        "out-",
    ),
    # MBPP's setup code
    (
        json.dumps({"test_setup_code": "want = 'w-888'", "test_list": ["assert f(1) == want"]}),
        "w-888",
    ),
    # a literal expected side is the caller's
    (json.dumps({"test_list": ["assert f(1) == 'lit-999'"]}), "lit-999"),
    # a check the judge evaluates
    (json.dumps({"test_list": ["assert abs(f(1) - 0.4242) < 1e-6"]}), "0.4242"),
]


@pytest.mark.parametrize(("reference", "hidden"), HIDDEN)
def test_the_programs_run_receives_nothing_of_the_expected_side(
    reference: str, hidden: str, box: Sandbox
) -> None:
    plan = planned(reference, box)
    job = plan.program_job("def f(x):\n    return x\n")
    assert job is not None and plan.in_process_job("def f(x): pass") is None
    assert hidden not in json.dumps(job[0])


# (a check body using the test's own values in the calls' arguments, a right solution)
ARGUMENT_CASES = [
    # parts of a table (the table itself stays with the judge)
    (
        "    for_one = CASES['one']\n    assert candidate(for_one[0]) == for_one[1]\n"
        "    assert candidate(CASES['two'][0] + [0]) == [0] + CASES['two'][1]\n",
        "def f(xs):\n    return sorted(xs)\n",
    ),
    # a module's value, a starred argument, a slice, an f-string
    ("    assert candidate([math.floor(math.pi)]) == [3]\n", "def f(xs):\n    return xs\n"),
    ("    assert candidate(*CASES['two']) == [2, 1, 1, 2]\n", "def f(a, b):\n    return a + b\n"),
    (
        "    assert candidate(CASES['one'][0][1:]) == [1, 2]\n",
        "def f(xs):\n    return sorted(xs)\n",
    ),
    ("    assert candidate(f\"{CASES['one'][0][0]}!\") == '3!'\n", "def f(s):\n    return s\n"),
]


@pytest.mark.parametrize(("body", "right"), ARGUMENT_CASES)
def test_the_tests_values_in_arguments_travel_as_plain_data(
    tool: CodeTool, body: str, right: str
) -> None:
    reference = humaneval(
        "import math\nCASES = {'one': ([3, 1, 2], [1, 2, 3]), 'two': ([2, 1], [1, 2])}\n"
        "def check(candidate):\n" + body
    )
    [reward] = tool.score([Sample(completion=right, reference=reference)])
    assert reward.score == 1.0 and reward.components["in_process"] == 0.0, reward


def test_an_argument_the_test_builds_travels_as_plain_data(tool: CodeTool) -> None:
    # `lst` is made by the test; the program's run gets its value, not the statement.
    reference = humaneval(
        "def check(candidate):\n    lst = list(range(-9, 10, 2))\n"
        "    total = sum(i * i for i in lst if i > 0)\n    assert candidate(lst) == total\n"
    )
    right = "def f(xs):\n    return sum(i * i for i in xs if i > 0)\n"
    [reward] = tool.score([Sample(completion=right, reference=reference)])
    assert reward.score == 1.0 and reward.components["in_process"] == 0.0, reward


# (test body, entry point, right solution, how many tests run in process)
IN_PROCESS_CASES = [
    # a function the test defines cannot travel as data: that test runs in process
    (
        "def check(candidate):\n    inc = lambda x: x + 1\n    assert candidate(inc, 2) == 3\n"
        "    assert candidate(abs, -2) == 2\n",
        "def f(g, x):\n    return g(x)\n",
        1,
    ),
    # ...and so does a later test that reads what the program did with it
    (
        "def check(candidate):\n    box = [object()]\n    out = candidate(box)\n"
        "    assert out == 1\n    assert candidate([1, 2]) == 2\n",
        "def f(xs):\n    return len(xs)\n",
        1,
    ),
    # a list changed in place: the test reads the program's copy, in process
    (
        "def check(candidate):\n    xs = [3, 1, 2]\n    candidate(xs)\n    assert xs == [1, 2, 3]\n",
        "def f(xs):\n    xs.sort()\n",
        1,
    ),
]


@pytest.mark.parametrize(("test", "right", "inside"), IN_PROCESS_CASES)
def test_what_cannot_travel_as_data_runs_in_process_and_says_so(
    tool: CodeTool, test: str, right: str, inside: int
) -> None:
    reference = humaneval(test)
    [good] = tool.score([Sample(completion=right, reference=reference)])
    assert good.score == 1.0 and good.components["in_process"] == inside, good
    [bad] = tool.score([Sample(completion="def f(*a):\n    return None\n", reference=reference)])
    assert bad.score is not None and bad.score < 1.0, bad


# (MBPP test string with `import X` available, whether the judge may evaluate the check)
SCREEN_CASES = [
    # pure checks: the judge evaluates them
    ("assert math.isclose(f(1), 2.0, rel_tol=1e-3)", True),
    ("assert set(f(1)) == set([1, 2])", True),
    ("assert json.loads(f(1)) == [1]", True),
    ("assert sorted(f(1), key=lambda v: -v) == [2, 1]", True),
    # checks that could run the returned value as code: in process
    ("assert eval(f(1)) == 2", False),
    ("assert pickle.loads(f(1)) == 2", False),
    ("assert marshal.loads(f(1)) == 2", False),
    ("assert importlib.import_module(f(1)) is not None", False),
    ("assert getattr(math, f(1)) is not None", False),
    ("assert list(map(operator.methodcaller(f(1)), [4])) == [2]", False),
    ("assert f(1).__class__ is int", False),
    ("assert codecs.decode(f(1), 'rot13') == 'x'", False),
    ("assert list(map(eval, f(1))) == [2]", False),
    # ...through private attributes, frames, or a module a listed one imported
    ("assert random._os.system(f(1)) == 0", False),
    ("assert json.codecs.decode(f(1), 'rot13') == 'x'", False),
    ("assert next((x for x in [0])).gi_frame.f_globals['eval'](f(1)) == 2", False),
]
SCREEN_IMPORTS = ["import math", "import json", "import pickle", "import marshal"]
SCREEN_IMPORTS += ["import importlib", "import operator", "import codecs", "import random"]


@pytest.mark.parametrize(("assertion", "judged"), SCREEN_CASES)
def test_checks_that_could_run_the_value_as_code_stay_out_of_the_judge(
    assertion: str, judged: bool
) -> None:
    reference = json.dumps({"test_imports": SCREEN_IMPORTS, "test_list": [assertion]})
    [test] = parse_reference(reference).tests
    assert (not test.in_process) is judged


# (a HumanEval test module whose helper the check calls, whether the judge may evaluate it)
HELPER_CASES = [
    ("def _near(a, b):\n    return abs(a - b) < 1e-6\n", True),
    ("def _near(a, b):\n    return _parse(a) == b\ndef _parse(t):\n    return eval(t)\n", False),
    ("import pickle\ndef _near(a, b):\n    return pickle.loads(a) == b\n", False),
    ("def _near(a, b):\n    import marshal\n    return marshal.loads(a) == b\n", False),
    ("LOAD = {'x': exec}\ndef _near(a, b):\n    return LOAD['x'](a) == b\n", False),
    ("from typing import ForwardRef\ndef _near(a, b):\n    return ForwardRef(a) == b\n", False),
    ("from datetime import sys\ndef _near(a, b):\n    return sys.modules == b\n", False),
    # helpers defined after the helper that calls them are followed too
    ("def _near(a, b):\n    return _loads(a) == b\nimport pickle\n_loads = pickle.loads\n", False),
]


@pytest.mark.parametrize(("helpers", "judged"), HELPER_CASES)
def test_the_screen_follows_the_tests_own_helpers(helpers: str, judged: bool) -> None:
    reference = humaneval(helpers + "def check(candidate):\n    assert _near(candidate(1), 2)\n")
    [test] = parse_reference(reference).tests
    assert (not test.in_process) is judged


def _decided(records: list[dict], key: str) -> dict[str, int]:
    counts = {"caller": 0, "caller, prepared": 0, "judge": 0, "in_process": 0}
    for sample in to_samples(records, "canonical"):
        for test in parse_reference(sample["reference"]).tests:
            if test.in_process:
                counts["in_process"] += 1
            elif test.needs_judge:
                counts["judge"] += 1
            else:
                counts["caller, prepared" if test.expect_key else "caller"] += 1
    return counts


@pytest.mark.skipif(not SHARED_DATA.exists(), reason="../shared/data/code not present")
def test_where_the_full_sets_are_decided() -> None:
    # docs/sandbox.md quotes these counts.
    with gzip.open(SHARED_DATA / "HumanEval.jsonl.gz", "rt") as f:
        humaneval_records = [json.loads(line) for line in f]
    mbpp_records = read_dataset(SHARED_DATA / "sanitized-mbpp.json")
    assert _decided(humaneval_records, "task_id") == {
        "caller": 1111,
        "caller, prepared": 2,
        "judge": 15,
        "in_process": 5,
    }
    assert _decided(mbpp_records, "task_id") == {
        "caller": 1264,
        "caller, prepared": 0,
        "judge": 60,
        "in_process": 0,
    }
