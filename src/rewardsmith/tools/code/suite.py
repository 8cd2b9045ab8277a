"""The `code` tool's inputs: the program in a completion, and the tests in a reference.

The reference is JSON in one of the formats code datasets use:

- HumanEval: `{"prompt", "test", "entry_point"}`; `test` defines `check(candidate)`. Each
  top-level assertion in `check`'s body is one test (statements between assertions run as
  setup of the next one; `assert True` placeholders are not counted). The program is the
  prompt followed by the completion when the completion continues the prompt's function
  body, or the prompt then the completion when the completion defines `entry_point` itself.
- MBPP: `{"test_list": [...], "test_imports": [...]}` (optionally `test_setup_code`); each
  string of `test_list` is one test, run after the program and the imports. A bare JSON list
  of test strings (`["assert f(2) == 4", ...]`) is read as a `test_list`.
- stdin/stdout: `{"inputs": [...], "outputs": [...]}` (APPS, CodeContests) or
  `{"cases": [{"input", "output"}, ...]}`; the program runs once per case and its stdout is
  compared with the expected output (trailing whitespace of each line and trailing blank
  lines ignored), outside the sandbox.

A plain-text reference of Python assertions also works: each top-level `assert` is a test.
Each test is split into the program's operands and the judge's check where it can be
(`rewardsmith.tools.code.split`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from rewardsmith.config import MAX_REFERENCE_CHARS
from rewardsmith.errors import InvalidReferenceError
from rewardsmith.tools.code.inputs import Keys, Step, split_setup
from rewardsmith.tools.code.ownership import Names
from rewardsmith.tools.code.split import (
    SplitTest,
    compile_quietly,
    guard_equality,
    parse_quietly,
    split_body,
    split_one,
)

Format = Literal["humaneval", "mbpp", "stdio", "asserts"]

# Parsed references kept across calls (an unusable one raises each time).
SUITE_CACHE = 4096

_FENCE_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+.-]*)")
_PYTHON_TAGS = {"python", "py", "python3", "py3"}


@dataclass(frozen=True)
class TestSuite:
    """A parsed reference: what to run, and how many tests the parent expects.

    `setup` (the test module's code besides `check`, MBPP's imports and `test_setup_code`),
    as written, runs after the program where tests run in process; `program_setup` (its
    imports and its statements that use the program) where they are decomposed, and
    `setup_steps` (the rest) in the judge. `candidate` is the name the tests call the entry
    point by (HumanEval's `check` parameter)."""

    format: Format
    tests: tuple[SplitTest, ...] = ()
    setup: str = ""
    program_setup: str = ""
    setup_steps: tuple[Step, ...] = ()
    prompt: str = ""
    entry_point: str | None = None
    candidate: str = "candidate"
    cases: tuple[tuple[str, str], ...] = ()

    @property
    def total(self) -> int:
        return len(self.cases) if self.format == "stdio" else len(self.tests)

    @property
    def in_process(self) -> int:
        """How many tests run whole inside the program's process by their form (not
        decomposed); `plan.Plan` adds those whose arguments cannot travel as data."""
        return sum(t.in_process for t in self.tests)

    @property
    def needs_preparing(self) -> bool:
        """Whether a judge run must first compute values of the test's own (arguments the
        program's code reads, expected sides the caller compares with)."""
        steps = [*self.setup_steps, *(s for t in self.tests for s in t.steps)]
        return any(step[0] != "run" for step in steps)

    @property
    def judge_builtins(self) -> frozenset[str]:
        """Builtins called by assertions that call nothing of the program's: a program that
        defines a function of one of these names (MBPP's `sum`) needs the suite split again
        (`parse_reference(..., shadowed=...)`, `split.Names`)."""
        return frozenset().union(*(t.builtins for t in self.tests))


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(tag, body) of every fenced block, in order: a ``` line opens one (its tag is the
    first word after the fence), the next ``` or the end of the text closes it. One pass of
    `str.find`: linear, however many fences the text holds."""
    blocks = []
    pos = text.find("```")
    while pos >= 0:
        newline = text.find("\n", pos + 3)
        if newline < 0:
            break  # a fence without a line after it opens nothing, nor does any later one
        tag = _FENCE_TAG.match(text, pos + 3, newline)
        close = text.find("```", newline + 1)
        body_end = len(text) if close < 0 else close
        blocks.append((tag.group(1) if tag is not None else "", text[newline + 1 : body_end]))
        if close < 0:
            break
        pos = text.find("```", close + 3)
    return blocks


def extract_code(completion: str) -> str:
    """The program in a completion: the last ```python block, else the last fenced block,
    else the completion itself."""
    blocks = fenced_blocks(completion)
    if not blocks:
        return completion
    python = [body for tag, body in blocks if tag.lower() in _PYTHON_TAGS]
    return (python or [body for _, body in blocks])[-1]


@lru_cache(maxsize=SUITE_CACHE)
def parse_reference(
    reference: str, decompose: bool = True, shadowed: frozenset[str] = frozenset()
) -> TestSuite:
    """Turn a reference into a `TestSuite`; raise `InvalidReferenceError` when unusable.

    `decompose` False runs every test whole in the program's process with Python's own `==`
    (the `code` tool's `strict_equality=False`). `shadowed`: builtin names the program
    defines itself, so the tests' calls to them are the program's. Suites are immutable and
    kept for the next call (a training run sees its prompts again and again)."""
    text = reference.strip()
    if not text:
        raise InvalidReferenceError("empty reference")
    if len(text) > MAX_REFERENCE_CHARS:
        raise InvalidReferenceError(f"reference longer than {MAX_REFERENCE_CHARS} characters")
    if text[0] in "{[":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidReferenceError(f"reference is not valid JSON: {exc.msg}") from None
        if isinstance(data, list):  # a bare list of assert strings: MBPP's `test_list`
            if not data or not all(isinstance(t, str) for t in data):
                raise InvalidReferenceError(
                    "a JSON list reference must be a non-empty list of test strings, e.g. "
                    '["assert f(2) == 4"]'
                )
            return _mbpp_suite({"test_list": data}, decompose, shadowed)
        if not isinstance(data, dict):
            raise InvalidReferenceError(
                "reference JSON must be an object (HumanEval, MBPP, stdin/stdout) or a list of "
                "test strings"
            )
        return _suite_from_dict(data, decompose, shadowed)
    return _assert_suite(text, decompose, shadowed)


def _suite_from_dict(
    data: Mapping[str, Any], decompose: bool, shadowed: frozenset[str]
) -> TestSuite:
    if "test" in data and "entry_point" in data:
        return _humaneval_suite(data, decompose, shadowed)
    if "test_list" in data:
        return _mbpp_suite(data, decompose, shadowed)
    if "cases" in data or ("inputs" in data and "outputs" in data):
        if "cases" in data:
            raw = [(c.get("input", ""), c.get("output", "")) for c in data["cases"]]
        else:
            raw = list(zip(data["inputs"], data["outputs"], strict=False))
            if len(data["inputs"]) != len(data["outputs"]):
                raise InvalidReferenceError("'inputs' and 'outputs' differ in length")
        cases = tuple((_as_text(i), _as_text(o)) for i, o in raw)
        if not cases:
            raise InvalidReferenceError("no stdin/stdout cases")
        return TestSuite("stdio", cases=cases)
    raise InvalidReferenceError(
        "unknown test format: expected HumanEval {test, entry_point}, MBPP {test_list} or "
        "stdin/stdout {inputs, outputs} / {cases}"
    )


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return str(value)


def _must_parse(source: str) -> ast.Module:
    try:
        compile_quietly(source)
        return parse_quietly(source)
    except SyntaxError as exc:
        raise InvalidReferenceError(f"test code does not compile: {exc.msg}") from None


def _mbpp_suite(data: Mapping[str, Any], decompose: bool, shadowed: frozenset[str]) -> TestSuite:
    tests = data["test_list"]
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests) or not tests:
        raise InvalidReferenceError("'test_list' must be a non-empty list of strings")
    imports = data.get("test_imports") or []
    if not isinstance(imports, list) or not all(isinstance(i, str) for i in imports):
        raise InvalidReferenceError("'test_imports' must be a list of strings")
    setup = "\n".join([*imports, data.get("test_setup_code") or ""])
    names, keys = Names(shadowed=shadowed), Keys()
    program_setup, setup_steps = split_setup(_must_parse(setup).body, names, keys)
    split = []
    for index, source in enumerate(tests):
        names.test = index
        body = _must_parse(source).body
        asserts = [s for s in body if any(isinstance(n, ast.Assert) for n in ast.walk(s))]
        if body and asserts == [body[-1]]:
            split.append(split_one(body[:-1], body[-1], names, decompose, decompose, keys))
        else:  # not "statements, then one assertion": the string runs whole, as it is
            for stmt in body:
                names.taint(stmt)
            code = guard_equality(source) if decompose else source
            split.append(SplitTest(source, code=code))
    return TestSuite(
        "mbpp",
        tests=tuple(split),
        setup=setup,
        program_setup=program_setup,
        setup_steps=setup_steps,
    )


def _humaneval_suite(
    data: Mapping[str, Any], decompose: bool, shadowed: frozenset[str]
) -> TestSuite:
    test, entry = data["test"], data["entry_point"]
    if not isinstance(test, str) or not isinstance(entry, str) or not entry.isidentifier():
        raise InvalidReferenceError("'test' must be code and 'entry_point' a function name")
    try:
        module = ast.parse(test)
    except SyntaxError as exc:
        raise InvalidReferenceError(f"test code does not compile: {exc.msg}") from None
    check = next(
        (n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"), None
    )
    if check is None:
        raise InvalidReferenceError("HumanEval test defines no check(candidate)")
    param = check.args.args[0].arg if check.args.args else "candidate"
    prompt = data.get("prompt") or ""
    # The program's process never gets `check` itself: its body holds the expected values.
    rest = ast.Module([n for n in module.body if n is not check], type_ignores=[])
    names, keys = Names({entry, param}, shadowed), Keys()
    program_setup, setup_steps = split_setup(rest.body, names, keys)
    tests = split_body(check.body, names, decompose, decompose, keys)
    setup = ast.unparse(rest)
    if not tests:  # `check` cannot run statement by statement: one test, run whole
        tests = [SplitTest(f"check({param})", code=f"check({param})")]
        setup = test
    return TestSuite(
        "humaneval",
        tests=tuple(tests),
        setup=setup,
        program_setup=program_setup,
        setup_steps=setup_steps,
        prompt=prompt,
        entry_point=entry,
        candidate=param,
    )


def _assert_suite(text: str, decompose: bool, shadowed: frozenset[str]) -> TestSuite:
    try:
        module = parse_quietly(text)
    except SyntaxError as exc:
        raise InvalidReferenceError(f"reference is neither JSON nor Python: {exc.msg}") from None
    tests = split_body(module.body, Names(shadowed=shadowed), decompose, decompose, Keys())
    if not tests:
        raise InvalidReferenceError("reference has no assert statements")
    return TestSuite("asserts", tests=tuple(tests))


def build_program(code: str, suite: TestSuite) -> str:
    """The program to run: HumanEval completions are joined with the prompt."""
    if suite.format != "humaneval" or not suite.prompt:
        return code
    if _defines(code, suite.entry_point):
        return suite.prompt + "\n\n" + code
    return suite.prompt + code


def _defines(code: str, name: str | None) -> bool:
    try:
        module = ast.parse(code)
    except SyntaxError:
        return False
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name
        for n in module.body
    )


def normalize_output(text: str) -> str:
    """Output as judges compare it: trailing spaces per line and trailing blank lines dropped."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).rstrip()
