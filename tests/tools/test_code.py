"""Tool `code`: real HumanEval/MBPP records (bundled slices, and the full sets when
../shared/data is present), stdin/stdout cases, code extraction, bad references, the CLI."""

from __future__ import annotations

import gzip
import json
import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.library.store import Library
from rewardsmith.tools.code import CodeTool, extract_code, parse_reference
from rewardsmith.tools.code.dataset import read_dataset, to_samples
from rewardsmith.types import Sample, ToolSpec

# Computed here, not imported from tests/conftest.py: another conftest.py can shadow that name.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
HUMANEVAL_SLICE = FIXTURES / "code" / "humaneval_slice.jsonl"
MBPP_SLICE = FIXTURES / "code" / "mbpp_sanitized_slice.json"
HUMANEVAL_FULL = SHARED_DATA / "code" / "HumanEval.jsonl.gz"
MBPP_FULL = SHARED_DATA / "code" / "sanitized-mbpp.json"


# The tool's default limits: 10 s of CPU per run (MBPP task 123's canonical solution needs
# 4-5 s of CPU on a busy machine), and a wall-clock limit that waits for the CPU on a loaded
# machine, so grading does not depend on what else runs beside it.
@pytest.fixture(scope="module")
def tool() -> Iterator[CodeTool]:
    t = CodeTool(ToolSpec(name="code", kind="code"))
    yield t
    t.close()


@pytest.fixture(scope="module")
def strict_tool() -> Iterator[CodeTool]:
    t = CodeTool(ToolSpec(name="code_strict", kind="code"), strict=True)
    yield t
    t.close()


def score(tool: CodeTool, samples: list[dict]) -> list:
    return tool.score(
        [Sample(completion=s["completion"], reference=s["reference"]) for s in samples]
    )


# (completion, extracted code)
EXTRACT_CASES = [
    # raw code is taken whole
    ("def f():\n    return 1\n", "def f():\n    return 1\n"),
    # the last python block wins over earlier ones and over other languages
    (
        "First:\n```python\nx = 1\n```\nThen:\n```python\nx = 2\n```\n```text\nout\n```",
        "x = 2\n",
    ),
    # an unlabelled block when there is no python one
    ("Here:\n```\nprint(3)\n```\n", "print(3)\n"),
    # a block cut off by the length limit still counts
    ("```python\ndef g():\n    return 4\n", "def g():\n    return 4\n"),
]


@pytest.mark.parametrize(("completion", "code"), EXTRACT_CASES)
def test_extract_code(completion: str, code: str) -> None:
    assert extract_code(completion) == code


def test_humaneval_slice_canonical_and_negative_control(tool: CodeTool) -> None:
    records = read_dataset(HUMANEVAL_SLICE)
    good = score(tool, list(to_samples(records, "canonical")))
    bad = score(tool, list(to_samples(records, "return_none")))
    assert [r.score for r in good] == [1.0] * len(records), [r.reason for r in good]
    assert all(r.score is not None and r.score < 1.0 for r in bad)
    # HumanEval/0 has 7 asserts, each its own test; `return None` fails them all
    assert good[0].components == {"passed": 7.0, "total": 7.0, "in_process": 0.0}
    assert bad[0].components["passed"] == 0.0
    assert bad[0].reason.startswith("test 0 failed: AssertionError")


def test_humaneval_full_function_in_a_fence(tool: CodeTool) -> None:
    record = read_dataset(HUMANEVAL_SLICE)[0]
    [sample] = to_samples([record], "empty")
    solution = record["prompt"] + record["canonical_solution"]
    completion = f"Sure, here it is:\n```python\n{solution}```\nIt loops over pairs."
    [reward] = tool.score([Sample(completion=completion, reference=sample["reference"])])
    assert reward.score == 1.0, reward.reason


def test_mbpp_slice_canonical_and_stubs(tool: CodeTool) -> None:
    records = read_dataset(MBPP_SLICE)
    good = score(tool, list(to_samples(records, "canonical")))
    stub = score(tool, list(to_samples(records, "return_none")))
    assert [r.score for r in good] == [1.0] * len(records), [r.reason for r in good]
    assert [r.score for r in stub] == [0.0] * len(records)


def test_partial_credit_and_strict(tool: CodeTool, strict_tool: CodeTool) -> None:
    reference = json.dumps(
        {"test_list": ["assert sq(2) == 4", "assert sq(3) == 9", "assert sq(0) == 0"]}
    )
    wrong_on_3 = Sample(
        completion="def sq(x):\n    return 4 if x == 2 else 0\n", reference=reference
    )
    [partial] = tool.score([wrong_on_3])
    [strict] = strict_tool.score([wrong_on_3])
    assert partial.score == pytest.approx(2 / 3)
    assert partial.components == {"passed": 2.0, "total": 3.0, "in_process": 0.0}
    assert partial.reason == "test 1 failed: AssertionError"
    assert strict.score == 0.0 and strict.components == partial.components


# (program, score) against the cases below: a sum of the numbers on each line
STDIO_REFERENCE = json.dumps(
    {"inputs": ["1 2\n", "10 20 30\n", "-5 5\n"], "outputs": ["3\n", "60", "0\n"]}
)
STDIO_CASES = [
    ("print(sum(map(int, input().split())))", 1.0),
    # trailing whitespace and blank lines are not held against a program
    ("print(str(sum(map(int, input().split()))) + '   \\n\\n')", 1.0),
    # wrong on negative numbers only
    ("print(sum(abs(int(x)) for x in input().split()))", 2 / 3),
    ("print('3')", 1 / 3),
    ("raise SystemExit(1)", 0.0),
]


@pytest.mark.parametrize(("program", "expected"), STDIO_CASES)
def test_stdin_stdout_cases(tool: CodeTool, program: str, expected: float) -> None:
    [reward] = tool.score([Sample(completion=program, reference=STDIO_REFERENCE)])
    assert reward.score == pytest.approx(expected), reward.reason
    assert reward.components["total"] == 3.0


@pytest.mark.parametrize(
    ("program", "score"),
    [
        ("def f(x):\n    return x * 2\n", 1.0),  # passes both tests
        ("def f(x):\n    return 4\n", 0.5),  # one of two
    ],
)
def test_a_json_list_of_assert_strings_is_a_test_list(
    tool: CodeTool, program: str, score: float
) -> None:
    # what MBPP's test_list holds, given without the object around it (math's reason for
    # this reference already sent users to `code`)
    reference = '["assert f(2) == 4", "assert f(3) == 6"]'
    [reward] = tool.score([Sample(completion=program, reference=reference)])
    assert reward.status == "ok" and reward.score == score, reward.reason


def test_plain_assert_reference(tool: CodeTool) -> None:
    reference = "from math import isclose\nassert isclose(area(1), 3.14159, rel_tol=1e-3)\nassert area(0) == 0\n"
    [reward] = tool.score(
        [Sample(completion="def area(r):\n    return 3.14159 * r * r\n", reference=reference)]
    )
    assert reward.score == 1.0 and reward.components["total"] == 2.0


# (reference, words in the reason)
BAD_REFERENCES = [
    (None, "missing reference"),
    ("", "empty reference"),
    ("{not json", "not valid JSON"),
    ('{"question": "?"}', "unknown test format"),
    ('{"test_list": []}', "non-empty list"),
    # a list reference must hold test strings
    ("[]", "non-empty list of test strings"),
    ("[1, 2]", "non-empty list of test strings"),
    ('{"test_list": ["assert f(1) =="]}', "does not compile"),
    ('{"test": "def check(candidate):\\n    pass", "entry_point": "1bad"}', "function name"),
    ('{"test": "x = 1", "entry_point": "f"}', "no check(candidate)"),
    ('{"inputs": ["1"], "outputs": []}', "differ in length"),
    ("just words, no tests", "neither JSON nor Python"),
]


@pytest.mark.parametrize(("reference", "words"), BAD_REFERENCES)
def test_bad_references_are_invalid_reference(
    tool: CodeTool, reference: str | None, words: str
) -> None:
    [reward] = tool.score([Sample(completion="def f(x):\n    return x\n", reference=reference)])
    assert reward.status == "invalid_reference" and reward.score is None
    assert words in reward.reason


def test_no_code_scores_zero(tool: CodeTool) -> None:
    [reward] = tool.score(
        [Sample(completion="   ", reference='{"test_list": ["assert f(1) == 1"]}')]
    )
    assert reward.score == 0.0 and reward.reason == "no code found"


def test_humaneval_checks_split_into_one_test_per_assert() -> None:
    record = read_dataset(HUMANEVAL_SLICE)[2]  # HumanEval/32: setup lines, then a loop
    suite = parse_reference(json.dumps({k: record[k] for k in ("prompt", "test", "entry_point")}))
    assert suite.total == 1 and suite.tests[0].source.startswith("import math")


def test_code_is_a_builtin_tool(library: Library) -> None:
    records = read_dataset(MBPP_SLICE)[:2]
    rewards = [
        library.get("code").score([Sample(completion=s["completion"], reference=s["reference"])])[0]
        for s in to_samples(records)
    ]
    assert [r.score for r in rewards] == [1.0, 1.0]
    assert rewards[0].tool == "code@1"
    assert library.record("code_strict").spec.kind == "code"


def test_cli_convert_then_score(tmp_path: Path) -> None:
    runner = CliRunner()
    samples, scored = tmp_path / "he.jsonl", tmp_path / "scored.jsonl"
    result = runner.invoke(app, ["convert", str(HUMANEVAL_SLICE), "-o", str(samples)])
    assert result.exit_code == 0, result.output
    lib = str(tmp_path / "lib.db")
    result = runner.invoke(
        app, ["score", str(samples), "--tool", "code", "-o", str(scored), "--library", lib, "-q"]
    )
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in scored.read_text().splitlines()]
    assert [line["reward"] for line in lines] == [1.0] * 6
    assert lines[0]["id"] == "HumanEval/0" and lines[0]["components"]["total"] == 7.0


@pytest.mark.skipif(not HUMANEVAL_FULL.exists(), reason="../shared/data/code not present")
def test_full_humaneval(tool: CodeTool, strict_tool: CodeTool) -> None:
    with gzip.open(HUMANEVAL_FULL, "rt") as f:
        records = [json.loads(line) for line in f]
    assert len(records) == 164
    good = score(tool, list(to_samples(records, "canonical")))
    stubs = list(to_samples(records, "return_none"))
    bad = score(tool, stubs)
    assert [r.reason for r in good if r.score != 1.0] == []
    # `return None` passes the odd `assert not candidate(...)`, never a whole task
    assert [r.reason for r in bad if r.score is None or r.score >= 1.0] == []
    assert [r.score for r in score(strict_tool, stubs)] == [0.0] * 164


@pytest.mark.skipif(not MBPP_FULL.exists(), reason="../shared/data/code not present")
def test_full_mbpp_sanitized(tool: CodeTool) -> None:
    records = read_dataset(MBPP_FULL)
    assert len(records) == 427
    good = score(tool, list(to_samples(records, "canonical")))
    failures = {
        r["task_id"]: g.reason for r, g in zip(records, good, strict=True) if g.score != 1.0
    }
    assert failures == {}


def test_tool_pickles_without_its_worker_pool(tool: CodeTool) -> None:
    # Trainer adapters ship tools to worker processes; the copy starts its own pool.
    copy = pickle.loads(pickle.dumps(tool))
    try:
        [reward] = copy.score(
            [
                Sample(
                    completion="def f(x):\n    return x\n",
                    reference='{"test_list": ["assert f(2) == 2"]}',
                )
            ]
        )
    finally:
        copy.close()
    assert reward.score == 1.0


# (reference, holes the program evaluates, the judge's check; "" = the test runs in process)
SPLIT_CASES = [
    # the expected side stays with the judge
    ('{"test_list": ["assert add(1, 2) == 3"]}', ("add(1, 2)",), "__rs_hole_0__ == 3"),
    # trusted calls around a call into the program are the judge's
    (
        '{"test_list": ["assert math.isclose(area(2), 12.56, rel_tol=0.01)"], '
        '"test_imports": ["import math"]}',
        ("area(2)",),
        "math.isclose(__rs_hole_0__, 12.56, rel_tol=0.01)",
    ),
    (
        '{"test_list": ["assert set(f(3)) == set((1, 2))"]}',
        ("f(3)",),
        "set(__rs_hole_0__) == set((1, 2))",
    ),
    # two calls into the program, in evaluation order
    ('{"test_list": ["assert f(1) < f(2)"]}', ("f(1)", "f(2)"), "__rs_hole_0__ < __rs_hole_1__"),
    # a helper the program defines is the program's, whole
    (
        '{"test_list": ["assert poly([1, 2], f([1, 2])) == 0"]}',
        ("poly([1, 2], f([1, 2]))",),
        "__rs_hole_0__ == 0",
    ),
    # statements before the assertion that do not touch the program are the judge's too
    ("xs = [3, 1, 2]\nassert srt(xs) == sorted(xs)\n", ("srt(xs)",), "__rs_hole_0__ == sorted(xs)"),
    # a loop, a comprehension over the program, `and`, a program name used as a value
    ("for x in (1, 2):\n    assert f(x) == x\n", (), ""),
    ('{"test_list": ["assert all(f(x) for x in (1, 2))"]}', (), ""),
    ('{"test_list": ["assert f(1) == 1 and f(2) == 2"]}', (), ""),
    ('{"test_list": ["assert callable(f)"]}', (), ""),
    # a statement before the assertion that uses the program binds a program name
    ("y = f(1)\nassert y == 2\n", (), ""),
]


@pytest.mark.parametrize(("reference", "holes", "check"), SPLIT_CASES)
def test_assertions_split_into_the_programs_calls_and_the_judges_check(
    reference: str, holes: tuple[str, ...], check: str
) -> None:
    [test] = parse_reference(reference).tests
    assert (test.holes, test.check) == (holes, check)
    assert test.in_process is (check == "")


def test_a_program_that_defines_a_builtin_name_gets_its_calls_back(tool: CodeTool) -> None:
    # MBPP 126 defines `sum(a, b)`: the tests' `sum` is the program's, not the builtin.
    reference = '{"test_list": ["assert sum(10, 15) == 6", "assert sum(4, 6) == 3"]}'
    code = "import math\ndef sum(a, b):\n    return math.gcd(a, b) + 1\n"
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    assert reward.score == 1.0, reward.reason


def test_truth_assertions_take_the_truth_of_any_value(tool: CodeTool) -> None:
    # `assert check_str("annie")` with a function returning a re.Match (not plain data).
    reference = '{"test_list": ["assert starts_vowel(\\"annie\\")", "assert not starts_vowel(\\"dawood\\")"]}'
    code = "import re\ndef starts_vowel(s):\n    return re.match('[aeiou]', s)\n"
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    assert reward.score == 1.0, reward.reason


# Tasks whose tests take every path of the split: tolerances, truth tests, set comparisons,
# loops run in process, helpers from the prompt, a builtin name the solution defines.
HUMANEVAL_KINDS = ("HumanEval/2", "HumanEval/32", "HumanEval/33", "HumanEval/38", "HumanEval/53")
MBPP_KINDS = (2, 7, 82, 126, 737, 787)


@pytest.mark.skipif(not HUMANEVAL_FULL.exists(), reason="../shared/data/code not present")
def test_every_kind_of_split_on_real_tasks(tool: CodeTool) -> None:
    with gzip.open(HUMANEVAL_FULL, "rt") as f:
        humaneval = [r for r in map(json.loads, f) if r["task_id"] in HUMANEVAL_KINDS]
    mbpp = [r for r in read_dataset(MBPP_FULL) if r["task_id"] in MBPP_KINDS]
    records = humaneval + mbpp
    assert len(records) == len(HUMANEVAL_KINDS) + len(MBPP_KINDS)
    good = score(tool, list(to_samples(records, "canonical")))
    bad = score(tool, list(to_samples(records, "return_none")))
    assert [r.reason for r in good if r.score != 1.0] == []
    assert [r.score for r in bad if r.score is None or r.score >= 1.0] == []
    # HumanEval/32 and /53 loop over random inputs: those tests run in process, and say so
    assert [r.components["in_process"] for r in good[:5]] == [0.0, 1.0, 0.0, 1.0, 1.0]


def test_a_program_that_shadows_a_builtin_the_check_uses_gains_nothing(tool: CodeTool) -> None:
    # `set` redefined to return a constant would make `set(f(x)) == set((4, 5))` pass if the
    # check used the program's `set`: the judge uses the builtin.
    reference = '{"test_list": ["assert set(common((3, 4, 5), (5, 4))) == set((4, 5))"]}'
    code = "def set(x):\n    return 1\ndef common(a, b):\n    return ()\n"
    [reward] = tool.score([Sample(completion=code, reference=reference)])
    assert reward.score == 0.0, reward


# A right program whose reported values mention memory (or exit, or done) is not a run that
# ran out of memory: only the harness's own signed record says so.
@pytest.mark.parametrize("value", ["low memory mode", " memory ", "exit 0 memory 1"])
def test_a_right_answer_that_mentions_memory_passes(tool: CodeTool, value: str) -> None:
    program = f"```python\ndef f():\n    return {value!r}\n```"
    [reward] = score(tool, [{"completion": program, "reference": f"assert f() == {value!r}"}])
    assert (reward.score, reward.status, reward.reason) == (1.0, "ok", "passed 1/1")
