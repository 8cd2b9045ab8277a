"""Tool `code`: run a completion's program against the tests in the reference, in the sandbox.

The reference is JSON in one of the formats code datasets use:

- HumanEval: `{"prompt", "test", "entry_point"}`; `test` defines `check(candidate)`. Each
  top-level assertion in `check`'s body is one test (statements between assertions run as
  setup of the next one; `assert True` placeholders are not counted). The program is the
  prompt followed by the completion when the completion continues the prompt's function
  body, or the prompt then the completion when the completion defines `entry_point` itself.
- MBPP: `{"test_list": [...], "test_imports": [...]}` (optionally `test_setup_code`); each
  string of `test_list` is one test, run after the program and the imports.
- stdin/stdout: `{"inputs": [...], "outputs": [...]}` (APPS, CodeContests) or
  `{"cases": [{"input", "output"}, ...]}`; the program runs once per case and its stdout is
  compared with the expected output (trailing whitespace of each line and trailing blank
  lines ignored). The comparison happens here, outside the sandbox, so it cannot be faked.

A plain-text reference of Python assertions also works: each top-level `assert` is a test.

The code is the last fenced ```python block of the completion (or the last fenced block, or
the whole completion). Score = fraction of tests passed, or 1.0/0.0 with `strict=True`;
components `passed`, `total`; the reason names the first failure. A run that times out or
crashes (memory, signal, early exit, a tampered result channel) scores 0.0 with status
`timeout` or `error` (DESIGN.md, failure policy). Test verdicts come from the harness's
signed records on a private pipe (`rewardsmith.sandbox.harness`), never from stdout.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rewardsmith.config import MAX_REFERENCE_CHARS
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.sandbox.harness import EQ_HELPER
from rewardsmith.sandbox.pool import ExecutionResult, Sandbox, SandboxLimits
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

Format = Literal["humaneval", "mbpp", "stdio", "asserts"]

# Programs longer than this are not run: no real solution is that long, and the source has
# to travel through a pipe and be compiled.
MAX_CODE_CHARS = 100_000
# stdin/stdout cases compare whole outputs, so a run keeps this much of its stdout.
STDOUT_LIMIT_BYTES = 1_000_000
# Reasons quote at most this much of a failure message.
REASON_CHARS = 160

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_PYTHON_TAGS = {"python", "py", "python3", "py3"}


@dataclass(frozen=True)
class TestSuite:
    """A parsed reference: what to run and how many tests the parent expects."""

    format: Format
    tests: tuple[str, ...] = ()
    setup: str = ""
    prompt: str = ""
    entry_point: str | None = None
    cases: tuple[tuple[str, str], ...] = ()

    @property
    def total(self) -> int:
        return len(self.cases) if self.format == "stdio" else len(self.tests)


@dataclass
class _Outcome:
    passed: int = 0
    total: int = 0
    status: Status = "ok"
    reason: str = ""
    failures: list[str] = field(default_factory=list)


def extract_code(completion: str) -> str:
    """The program in a completion: the last ```python block, else the last fenced block,
    else the completion itself."""
    blocks = _FENCE.findall(completion)
    if not blocks:
        return completion
    python = [body for tag, body in blocks if tag.lower() in _PYTHON_TAGS]
    return (python or [body for _, body in blocks])[-1]


def parse_reference(reference: str) -> TestSuite:
    """Turn a reference into a `TestSuite`; raise `InvalidReferenceError` when unusable."""
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
        if not isinstance(data, dict):
            raise InvalidReferenceError("reference JSON must be an object")
        return _suite_from_dict(data)
    return _assert_suite(text, "asserts")


def _suite_from_dict(data: Mapping[str, Any]) -> TestSuite:
    if "test" in data and "entry_point" in data:
        return _humaneval_suite(data)
    if "test_list" in data:
        tests = data["test_list"]
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests) or not tests:
            raise InvalidReferenceError("'test_list' must be a non-empty list of strings")
        imports = data.get("test_imports") or []
        setup = "\n".join([*imports, data.get("test_setup_code") or ""])
        for t in (*tests, setup):
            _must_compile(t)
        return TestSuite("mbpp", tests=tuple(tests), setup=setup)
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


def parse_quietly(source: str) -> ast.Module:
    """`ast.parse` without the warnings old dataset code raises (escapes like '\\d');
    raises SyntaxError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def _compile_quietly(source: str) -> None:
    """Compile test code to check it; dataset tests hold old escapes ('\\w') that warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, "<test>", "exec")


def _must_compile(source: str) -> None:
    try:
        _compile_quietly(source)
    except SyntaxError as exc:
        raise InvalidReferenceError(f"test code does not compile: {exc.msg}") from None


def _humaneval_suite(data: Mapping[str, Any]) -> TestSuite:
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
    tests = _split_statements(check.body, param)
    if not tests:
        tests = [f"check({param})"]
    prompt = data.get("prompt") or ""
    return TestSuite("humaneval", tests=tuple(tests), setup=test, prompt=prompt, entry_point=entry)


def _assert_suite(text: str, fmt: Format) -> TestSuite:
    try:
        module = ast.parse(text)
    except SyntaxError as exc:
        raise InvalidReferenceError(f"reference is neither JSON nor Python: {exc.msg}") from None
    tests = _split_statements(module.body, None)
    if not tests:
        raise InvalidReferenceError("reference has no assert statements")
    return TestSuite(fmt, tests=tuple(tests))


def _is_test(stmt: ast.stmt) -> bool:
    """An assertion, or a compound statement containing one; `assert True` is not a test."""
    if isinstance(stmt, ast.Assert):
        return not isinstance(stmt.test, ast.Constant)
    return any(isinstance(n, ast.Assert) for n in ast.walk(stmt))


class _GuardEquality(ast.NodeTransformer):
    """`assert a == b` -> `assert __rewardsmith_eq__(a, b)` (and `!=` likewise), so an
    object that claims to equal anything does not pass (harness `_strict_eq`)."""

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        node.test = self._rewrite(node.test)
        return node

    def _rewrite(self, expr: ast.expr) -> ast.expr:
        if isinstance(expr, ast.BoolOp):
            expr.values = [self._rewrite(v) for v in expr.values]
            return expr
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
            expr.operand = self._rewrite(expr.operand)
            return expr
        if (
            isinstance(expr, ast.Compare)
            and len(expr.ops) == 1
            and isinstance(expr.ops[0], ast.Eq | ast.NotEq)
        ):
            call = ast.Call(
                func=ast.Name(EQ_HELPER, ast.Load()),
                args=[expr.left, expr.comparators[0]],
                keywords=[],
            )
            if isinstance(expr.ops[0], ast.NotEq):
                return ast.UnaryOp(ast.Not(), call)
            return call
        return expr


def guard_equality(source: str) -> str:
    """Test code with `==`/`!=` in assertions routed through the harness's strict check."""
    try:
        tree = parse_quietly(source)
    except SyntaxError:
        return source
    return ast.unparse(ast.fix_missing_locations(_GuardEquality().visit(tree)))


def _split_statements(body: Sequence[ast.stmt], param: str | None) -> list[str]:
    """One test per assertion; other statements run as setup before the next test.

    Returns [] when the body cannot run statement by statement at module level (a `return`
    at its top level): the caller then runs the whole check as one test.
    """
    if any(isinstance(s, ast.Return) for s in body):
        return []
    tests: list[str] = []
    pending: list[str] = []
    for stmt in body:
        pending.append(ast.unparse(stmt))
        if _is_test(stmt):
            tests.append("\n".join(pending))
            pending = []
    if pending and tests:
        tests[-1] += "\n" + "\n".join(pending)
    for t in tests:
        try:
            _compile_quietly(t)
        except SyntaxError:
            return []
    return tests


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


def read_records(result: ExecutionResult, nonce: str, total: int) -> _Outcome:
    """Check the harness's records: exactly `load`, tests 0..total-1 in order, `done`.

    Anything else on the channel (a line without the nonce, a duplicate, a test out of
    order) means the program tampered with it, and the run scores 0.
    """
    out = _Outcome(total=total)
    verdicts: list[bool] = []
    loaded: bool | None = None
    done = False
    for line in result.channel.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] != nonce:
            return _Outcome(0, total, "error", "result channel tampered with (unsigned record)")
        kind, index, text = parts[1], parts[2], parts[3] if len(parts) > 3 else ""
        if kind in ("memory", "exit"):
            continue
        if kind == "error":
            return _Outcome(0, total, "error", f"harness error: {text}"[:REASON_CHARS])
        if (
            done
            or (kind != "load" and loaded is not True)
            or (kind == "load" and loaded is not None)
        ):
            return _Outcome(0, total, "error", "result channel tampered with (bad sequence)")
        if kind == "load":
            loaded = index == "ok"
            if not loaded:
                out.failures.append(f"program failed to load: {text}")
        elif kind == "test":
            if index != str(len(verdicts)) or len(verdicts) >= total:
                return _Outcome(0, total, "error", "result channel tampered with (bad test index)")
            verdicts.append(text == "pass")
            if text != "pass":
                out.failures.append(f"test {index} failed: {text.removeprefix('fail ')}")
        elif kind == "done":
            if index != str(total) or len(verdicts) != total:
                return _Outcome(0, total, "error", "result channel tampered with (bad count)")
            done = True
        else:
            return _Outcome(0, total, "error", "result channel tampered with (unknown record)")
    out.passed = sum(verdicts)
    if result.status != "ok":
        out.passed = 0
        out.status = "timeout" if result.status == "timeout" else "error"
        out.reason = f"{result.status}: {result.reason}"
    elif loaded is False:
        out.reason = out.failures[0]
    elif not done:
        out.passed = 0
        out.status = "error"
        reported = len(verdicts)
        out.reason = f"program ended before the tests finished ({reported} of {total} reported)"
    return out


class CodeTool(RewardTool):
    """Unit-test reward for code completions, run in a `rewardsmith.sandbox.Sandbox`.

    `strict`: 1.0 only when every test passes. `timeout`: wall-clock seconds per program run
    (CPU seconds likewise); `memory_mb`: address space per run; `workers`: warm zygotes;
    `preload`: extra modules the zygotes import. `strict_equality` (default on): `==` and
    `!=` in assertions refuse operands whose class has an `__eq__` the program defined (the
    AlwaysEqual hack); turn it off for tests that compare instances of the solution's classes.
    """

    def __init__(
        self,
        spec: ToolSpec,
        strict: bool = False,
        timeout: float = 10.0,
        memory_mb: int = 512,
        workers: int = 2,
        preload: Sequence[str] = (),
        strict_equality: bool = True,
    ) -> None:
        if timeout <= 0 or memory_mb < 16 or workers < 1:
            raise ConfigError(
                f"tool {spec.name!r}: timeout must be > 0, memory_mb >= 16 and workers >= 1"
            )
        self.spec = spec
        self.strict = strict
        self.strict_equality = strict_equality
        self.limits = SandboxLimits(
            wall_seconds=timeout,
            cpu_seconds=timeout,
            memory_mb=memory_mb,
            output_bytes=STDOUT_LIMIT_BYTES,
        )
        self.workers = workers
        self.preload = tuple(preload)
        self._sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = Sandbox(self.workers, self.limits, self.preload)
        return self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __getstate__(self) -> dict[str, Any]:
        # Picklable into worker processes (trainer adapters): the copy starts its own pool.
        return {**self.__dict__, "_sandbox": None}

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        suites: dict[str | None, TestSuite | InvalidReferenceError] = {}
        rewards: list[Reward | None] = [None] * len(samples)
        jobs: list[dict[str, Any]] = []
        owners: list[tuple[int, int]] = []  # (sample index, case index)
        for i, sample in enumerate(samples):
            suite = self._suite(sample.reference, suites)
            if isinstance(suite, InvalidReferenceError):
                rewards[i] = make_reward(self.spec, None, "invalid_reference", str(suite))
                continue
            code = extract_code(sample.completion or "")
            if not code.strip():
                rewards[i] = make_reward(self.spec, 0.0, reason="no code found")
                continue
            if len(code) > MAX_CODE_CHARS:
                rewards[i] = make_reward(
                    self.spec, 0.0, reason=f"code longer than {MAX_CODE_CHARS} characters"
                )
                continue
            for case, job in enumerate(self._jobs(code, suite)):
                jobs.append(job)
                owners.append((i, case))
        results = self.sandbox.map(jobs) if jobs else []
        grouped: dict[int, list[tuple[dict[str, Any], ExecutionResult]]] = {}
        for (i, _), job, result in zip(owners, jobs, results, strict=True):
            grouped.setdefault(i, []).append((job, result))
        for i, runs in grouped.items():
            suite = suites[samples[i].reference]
            assert isinstance(suite, TestSuite)
            rewards[i] = self._reward(suite, runs)
        return [r for r in rewards if r is not None]

    def _suite(
        self, reference: str | None, cache: dict[str | None, TestSuite | InvalidReferenceError]
    ) -> TestSuite | InvalidReferenceError:
        if reference not in cache:
            try:
                if reference is None:
                    raise InvalidReferenceError("missing reference (the tests)")
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # old escapes ('\\d') in dataset tests
                    cache[reference] = parse_reference(reference)
            except InvalidReferenceError as exc:
                cache[reference] = exc
        return cache[reference]

    def _jobs(self, code: str, suite: TestSuite) -> list[dict[str, Any]]:
        if suite.format == "stdio":
            return [
                {"mode": "exec", "source": code, "stdin": given, "expected": expected}
                for given, expected in suite.cases
            ]
        return [
            {
                "mode": "tests",
                "source": build_program(code, suite),
                "setup": suite.setup,
                "tests": [guard_equality(t) for t in suite.tests]
                if self.strict_equality
                else list(suite.tests),
                "entry_point": suite.entry_point,
                "nonce": _nonce(),
            }
        ]

    def _reward(
        self, suite: TestSuite, runs: list[tuple[dict[str, Any], ExecutionResult]]
    ) -> Reward:
        if suite.format == "stdio":
            outcome = self._stdio_outcome(runs)
        else:
            job, result = runs[0]
            outcome = read_records(result, job["nonce"], suite.total)
        components = {"passed": float(outcome.passed), "total": float(outcome.total)}
        if outcome.status != "ok":
            return make_reward(self.spec, 0.0, outcome.status, outcome.reason, components)
        fraction = outcome.passed / outcome.total if outcome.total else 0.0
        score = float(fraction == 1.0) if self.strict else fraction
        reason = outcome.reason or (
            outcome.failures[0] if outcome.failures else f"passed {outcome.passed}/{outcome.total}"
        )
        return make_reward(self.spec, score, "ok", reason[:REASON_CHARS], components)

    @staticmethod
    def _stdio_outcome(runs: list[tuple[dict[str, Any], ExecutionResult]]) -> _Outcome:
        out = _Outcome(total=len(runs))
        for case, (job, result) in enumerate(runs):
            if result.status == "timeout":
                return _Outcome(0, len(runs), "timeout", f"case {case}: {result.reason}")
            if result.status in ("memory", "killed", "error"):
                return _Outcome(
                    0, len(runs), "error", f"case {case}: {result.status}: {result.reason}"
                )
            if result.status != "ok":
                tail = result.stderr.strip().splitlines()[-1:] or [result.reason]
                out.failures.append(f"case {case} failed: {tail[0]}")
            elif normalize_output(result.stdout) != normalize_output(job["expected"]):
                out.failures.append(f"case {case}: wrong output")
            else:
                out.passed += 1
        return out


def _nonce() -> str:
    import secrets

    return secrets.token_hex(16)
