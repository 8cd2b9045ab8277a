"""Test code, split into tests, and each test into what the program's process runs and what
is decided where the program cannot reach it.

A test is one assertion and the statements before it (`pre`). Where the assertion allows it,
it is *decomposed*: every call into the program's code (`candidate(x)`, `similar_elements(a,
b)`, a helper the prompt defines) is a *hole* that the program's run evaluates and reports
as plain data (`rewardsmith.sandbox.plain`); the rest of the assertion, with the holes
replaced by those values, is the `check`. A check that compares one hole with a literal or
tests its truth (`op`, `expected`), or with a value the test computes without the program
(`expect_key`: `odd_sum` in `assert candidate(lst) == odd_sum`), is decided by the caller;
any other by a judge run (`rewardsmith.tools.code.verdict`, `rewardsmith.sandbox.judge`). So

    assert candidate([1, 2, 3]) == [3, 2, 1]
    # the program evaluates `candidate([1, 2, 3])`; the caller checks `__rs_hole_0__ == [3, 2, 1]`
    assert abs(candidate(1.33) - 0.33) < 1e-06
    # the program evaluates `candidate(1.33)`; a judge run checks `abs(__rs_hole_0__ - 0.33) < 1e-06`

**What the program's process gets** (`program_pre`, `holes`): the statements of the test that
call the program, and the holes, nothing else. The test's own statements (`lst = ...`,
`odd_sum = sum(...)`) are the judge's (`steps`); a trusted name the program's code reads is
*bound* from a value the judge computed at that point and sent as plain data (`lst =
__rs_in__['3']`; `steps` has `["bind", "3", "lst"]`), and is the program's from then on
(`Names.hand_over`: it may have changed it). A value that cannot travel as data (a function
or an instance of a class the test defines) makes the test run in process, decided once the
judge has prepared the values (`plan`).

An assertion that cannot be decomposed runs the old way, whole, inside the program's process
(`code`, with `==`/`!=` compared as plain data there): a loop around an assertion, a
comprehension or lambda over the program's names, `and`/`or`/`if` around a call into the
program (their short-circuit decides which calls happen), a program name used as a value
rather than called, a walrus, statements after the last assertion, a check that could run a
value as code (`screen`). Its verdict comes from the program's own process, so a
program that tampers with its interpreter can fake it; the reward counts such tests in its
`in_process` component.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

from rewardsmith.sandbox.harness import EQ_HELPER
from rewardsmith.tools.code.inputs import Keys, Part, Step
from rewardsmith.tools.code.ownership import BUILTIN_NAMES, Names, bound_names, free_names
from rewardsmith.tools.code.screen import runs_code

# The judge binds hole k to this name while it evaluates a test's check.
HOLE_NAME = "__rs_hole_{}__"
# Expressions whose parts are not all evaluated, or evaluated in a scope of their own: a call
# into the program inside one cannot be lifted out and evaluated up front.
_OPAQUE = (
    ast.BoolOp,
    ast.IfExp,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.NamedExpr,
    ast.Await,
    ast.Yield,
    ast.YieldFrom,
)


@dataclass(frozen=True)
class SplitTest:
    """One test. Always: `source` (as written), `whole` (the test whole, as it runs in
    process when it must: `code`, or for a decomposed test its source guarded on demand),
    `pre` (its statements before the assertion, as written: replayed in process),
    `program_pre` (what the program's run executes of them, trusted names bound from the
    inputs `inputs` names), `steps` (the judge's part, in order) and `needs` (earlier tests
    whose statements bound program names this one reads). Decomposed (`check` set): the
    program's run then evaluates `holes` and sends their values."""

    source: str
    code: str = ""
    pre: str = ""
    program_pre: str = ""
    inputs: tuple[str, ...] = ()
    steps: tuple[Step, ...] = ()
    needs: frozenset[int] = frozenset()
    holes: tuple[str, ...] = ()
    check: str = ""
    truth: bool = False  # the assertion tests the hole's truth: the program sends bool(value)
    op: str = ""  # a check the caller decides: "==", "!=", "is", "is not", "truth", "not"
    expected: str = ""  # ...against this literal (the source of a constant, list, dict...)
    expect_key: str = ""  # ...or against the value the judge prepares under this key
    # Builtins an assertion that calls nothing of the program's calls: if the program defines
    # one of them, it is the function under test (`Names.shadowed`).
    builtins: frozenset[str] = frozenset()

    @property
    def whole(self) -> str:
        """The test whole, as it runs in process (`==` on plain data)."""
        return self.code or guard_equality(self.source)

    @property
    def needs_judge(self) -> bool:
        """Decomposed, with a check only a judge run can evaluate (it runs code)."""
        return bool(self.check) and not self.op

    @property
    def in_process(self) -> bool:
        return not self.check


def is_placeholder(stmt: ast.stmt) -> bool:
    """`assert True` (and any truthy constant): it can never fail, so it is not a test."""
    return (
        isinstance(stmt, ast.Assert)
        and isinstance(stmt.test, ast.Constant)
        and bool(stmt.test.value)
    )


def _is_test(stmt: ast.stmt) -> bool:
    """An assertion, or a compound statement containing one."""
    return any(isinstance(n, ast.Assert) for n in ast.walk(stmt))


def split_body(
    body: Sequence[ast.stmt], names: Names, decompose: bool, guard: bool, keys: Keys
) -> list[SplitTest]:
    """One test per assertion of `body`; other statements run before the next one.

    `names` is updated statement by statement. Returns [] when the body cannot run statement
    by statement at module level (a `return` at its top level), or does not compile."""
    if any(isinstance(s, ast.Return) for s in body):
        return []
    chunks: list[tuple[list[ast.stmt], ast.stmt]] = []
    pending: list[ast.stmt] = []
    for stmt in body:
        if is_placeholder(stmt):
            continue
        if _is_test(stmt):
            chunks.append((pending, stmt))
            pending = []
        else:
            pending.append(stmt)
    tests = []
    for index, (pre, stmt) in enumerate(chunks):
        names.test = index
        tests.append(split_one(pre, stmt, names, decompose, guard, keys))
    if pending and tests:
        # Statements after the last assertion: the last test runs whole, with them.
        last_pre, last_stmt = chunks[-1]
        code = "\n".join(ast.unparse(s) for s in (*last_pre, last_stmt, *pending))
        tests[-1] = dataclasses.replace(
            tests[-1],
            source=code,
            code=guard_equality(code) if guard else code,
            holes=(),
            check="",
            op="",
            expected="",
            expect_key="",
        )
        for stmt in pending:
            names.taint(stmt)
    for test in tests:
        try:
            compile_quietly(test.code or "\n".join((test.program_pre, *test.holes, test.check)))
        except SyntaxError:
            return []
    return tests


def split_one(
    pre: Sequence[ast.stmt],
    stmt: ast.stmt,
    names: Names,
    decompose: bool,
    guard: bool,
    keys: Keys,
) -> SplitTest:
    """One test: `pre` statements, then `stmt` (an assertion, or a statement holding one)."""
    written = "\n".join(ast.unparse(s) for s in pre)
    source = "\n".join((written, ast.unparse(stmt))) if pre else ast.unparse(stmt)
    part = Part()
    part.statements(pre, names, keys)
    split = _decomposed(stmt, names) if decompose and not part.whole_only else None
    called = free_names(stmt) & names.shadowed if names.shadowed else set()
    if split is not None and not split[0] and called:
        # It calls nothing of the program's but a builtin name the program defines: that
        # is the function under test.
        names.program |= called
        split = _decomposed(stmt, names)
        names.program -= called
    if split is not None:
        hole_nodes, check, truth, (op, expected, other) = split
        handed: set[str] = set()
        holes: list[str] = []
        for hole in hole_nodes:
            hole_source, bound = part.program_side(hole, names, keys)
            holes.append(hole_source)
            handed |= bound
        if part.whole_only:
            split = None
    if split is None:
        names.taint(stmt)
        return _test(part, source, guard_equality(source) if guard else source, written)
    expect_key = ""
    if other:
        expect_key = keys()
        part.steps.append(("expect", expect_key, other))
    names.hand_over(handed)
    callable_builtins = free_names(stmt) & BUILTIN_NAMES if not hole_nodes else set()
    return dataclasses.replace(
        _test(part, source, "", written),  # decomposed: `whole` guards it if ever needed
        holes=tuple(holes),
        check=check,
        truth=truth,
        op=op,
        expected=expected,
        expect_key=expect_key,
        builtins=frozenset(n for n in callable_builtins if n not in names.trusted),
    )


def _test(part: Part, source: str, code: str, pre: str) -> SplitTest:
    """The test, as far as `part` goes (run in process until holes are added)."""
    return SplitTest(
        source,
        code=code,
        pre=pre,
        program_pre="\n".join(part.program),
        inputs=tuple(part.inputs),
        steps=tuple(part.steps),
        needs=frozenset(part.needs),
    )


_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}


def _simple(node: ast.expr, names: Names) -> tuple[str, str, str]:
    """(op, literal, None) when a check with one hole is a comparison with a literal or a
    truth test, which the caller decides on plain data without running any code; (op, "",
    OTHER) when it compares the hole for equality with an expression OTHER (its source) of
    the test's own (no hole, nothing of the program), whose value the judge prepares once
    for the caller to compare with; else ("", "", "")."""
    hole = HOLE_NAME.format(0)
    if isinstance(node, ast.Name) and node.id == hole:
        return "truth", "", ""
    operand = (
        node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else None
    )
    if isinstance(operand, ast.Name) and operand.id == hole:
        return "not", "", ""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
        op = _OPS[type(node.ops[0])]
        sides = (node.left, node.comparators[0])
        for this, other in (sides, sides[::-1]):
            if not (isinstance(this, ast.Name) and this.id == hole):
                continue
            if _is_literal(other):
                return op, ast.unparse(other), ""
            if op in ("==", "!=") and not names.touches_program(other):
                return op, "", ast.unparse(other)
    return "", "", ""


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _decomposed(
    stmt: ast.stmt, names: Names
) -> tuple[list[ast.expr], str, bool, tuple[str, str, str]] | None:
    """(hole nodes, check, truth, (op, literal, other)) for a plain `assert EXPR[, msg]`, or
    None when it cannot be split. `truth`: the assertion is `assert CALL` or `assert not
    CALL`, so only the truth of the one hole matters (a `re.Match`, say, is not plain data
    but is true). The statement's tree is left as it was."""
    if not isinstance(stmt, ast.Assert):
        return None
    expr = stmt.test
    holes: list[ast.expr] = []
    if not _find_holes(expr, names, holes):
        return None
    bare = expr.operand if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not) else expr
    truth = len(holes) == 1 and bare is holes[0]
    with _holes_named(stmt, holes) as filled:
        if runs_code(filled, names):
            return None  # it could run what the program returned as code, in the judge
        check = ast.unparse(filled)
        simple = _simple(filled, names) if len(holes) == 1 else ("", "", "")
    return holes, check, truth, simple


@contextmanager
def _holes_named(stmt: ast.Assert, holes: list[ast.expr]) -> Iterator[ast.expr]:
    """The assertion's expression with each hole replaced by its `HOLE_NAME`, for as long as
    the block runs; then the tree is put back as it was."""
    index = {id(h): k for k, h in enumerate(holes)}
    swaps: list[tuple[ast.AST, str, int | None, ast.AST]] = []

    def name(node: ast.AST) -> ast.Name:
        return ast.Name(HOLE_NAME.format(index[id(node)]), ast.Load())

    stack: list[ast.AST] = [stmt]
    while stack:  # every node but the holes' insides (a call's arguments can be long lists)
        parent = stack.pop()
        for field, value in ast.iter_fields(parent):
            if parent is stmt and field != "test":
                continue
            if isinstance(value, ast.AST) and id(value) in index:
                swaps.append((parent, field, None, value))
                setattr(parent, field, name(value))
            elif isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                for position, item in enumerate(value):
                    if id(item) in index:
                        swaps.append((parent, field, position, item))
                        value[position] = name(item)
                    elif isinstance(item, ast.AST):
                        stack.append(item)
    try:
        yield stmt.test
    finally:
        for parent, field, at, original in reversed(swaps):
            if at is None:
                setattr(parent, field, original)
            else:
                getattr(parent, field)[at] = original


def program_names(program: str) -> frozenset[str]:
    """Names a program binds at its top level (functions, classes, assignments, imports);
    empty when it does not parse (it will not load either)."""
    try:
        module = parse_quietly(program)
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(n for stmt in module.body for n in bound_names(stmt))


def _find_holes(node: ast.AST, names: Names, holes: list[ast.expr]) -> bool:
    """Collect, in evaluation order, the calls into the program under `node`. False when a
    program name appears where it cannot be lifted out (see the module docstring)."""
    if isinstance(node, ast.Call) and names.touches_program(node.func):
        holes.append(node)
        return True
    if isinstance(node, ast.Name):
        return not names.is_program(node.id)
    if isinstance(node, _OPAQUE):
        return not names.touches_program(node)
    return all(_find_holes(child, names, holes) for child in ast.iter_child_nodes(node))


class _GuardEquality(ast.NodeTransformer):
    """`assert a == b` -> `assert __rewardsmith_eq__(a, b)` (and `!=` likewise): in the
    program's process, assertions run the old way compare plain data (harness)."""

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


@lru_cache(maxsize=4096)
def guard_equality(source: str) -> str:
    """Test code with `==`/`!=` in assertions routed through the harness's plain-data check."""
    try:
        tree = parse_quietly(source)
    except SyntaxError:
        return source
    return ast.unparse(ast.fix_missing_locations(_GuardEquality().visit(tree)))


def parse_quietly(source: str) -> ast.Module:
    """`ast.parse` without the warnings old dataset code raises (escapes like '\\d');
    raises SyntaxError."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


def compile_quietly(source: str, mode: str = "exec") -> None:
    """Compile test code to check it; dataset tests hold old escapes ('\\w') that warn."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compile(source, "<test>", mode)
