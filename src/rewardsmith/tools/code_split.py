"""Test code, split into tests, and each test into what the program computes and what is
checked where the program cannot reach it.

A test is one assertion and the statements before it (`pre`). Where the assertion allows it,
it is *decomposed*: every call into the program's code (`candidate(x)`, `similar_elements(a,
b)`, a helper the prompt defines) is a *hole* that the program's run evaluates and reports
as plain data (`rewardsmith.sandbox.plain`); the rest of the assertion, with the holes
replaced by those values, is the `check`. A check that compares one hole with a literal or
tests its truth (`op`, `expected`) is decided by the caller; any other by a judge run
(`rewardsmith.tools.code_verdict`, `rewardsmith.sandbox.judge`). So

    assert candidate([1, 2, 3]) == [3, 2, 1]
    # the program evaluates `candidate([1, 2, 3])`; the caller checks `__rs_hole_0__ == [3, 2, 1]`
    assert abs(candidate(1.33) - 0.33) < 1e-06
    # the program evaluates `candidate(1.33)`; a judge run checks `abs(__rs_hole_0__ - 0.33) < 1e-06`

and the expected side never reaches the program's process. A name belongs to the program
unless trusted code binds it (the test's imports and setup, statements of the test that do
not touch the program) or it is a builtin; a statement that uses a program name binds
program names.

An assertion that cannot be decomposed runs the old way, whole, inside the program's process
(`code`, with `==`/`!=` compared as plain data there): a loop around an assertion, a
comprehension or lambda over the program's names, `and`/`or`/`if` around a call into the
program (their short-circuit decides which calls happen), a program name used as a value
rather than called, a walrus, statements after the last assertion, a check that would run a
value as code. Its verdict comes from the program's own process, so a program that tampers
with its interpreter can fake it; the reward counts such tests in its `in_process` component.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from rewardsmith.sandbox.harness import EQ_HELPER

# The judge binds hole k to this name while it evaluates a test's check.
HOLE_NAME = "__rs_hole_{}__"

_BUILTINS = frozenset(dir(builtins))
# A check that calls one of these could run a value the program returned as code: such an
# assertion runs in the program's process instead (where that code ran anyway).
_RUNS_CODE = frozenset(
    {"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "open", "input"}
    | {"globals", "locals", "vars", "breakpoint", "memoryview"}
)
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
    """One test. Decomposed (`check` set): the program's process runs `pre`, evaluates
    `holes` in order and sends their values; the judge runs `judge_pre` (the statements of
    `pre` that do not touch the program) and evaluates `check` with the values bound to
    `HOLE_NAME`s. In process (`check` empty): the program's process runs `code` whole."""

    source: str
    pre: str = ""
    holes: tuple[str, ...] = ()
    check: str = ""
    judge_pre: str = ""
    code: str = ""
    truth: bool = False  # the assertion tests the hole's truth: the program sends bool(value)
    op: str = ""  # a check the caller decides: "==", "!=", "is", "is not", "truth", "not"
    expected: str = ""  # ...against this literal (the source of a constant, list, dict...)
    # Builtins an assertion that calls nothing of the program's calls: if the program defines
    # one of them, it is the function under test (`Names.shadowed`).
    builtins: frozenset[str] = frozenset()

    @property
    def needs_judge(self) -> bool:
        """Decomposed, with a check only a judge run can evaluate (it runs code)."""
        return bool(self.check) and not self.op

    @property
    def in_process(self) -> bool:
        return not self.check

    def job(self) -> dict[str, object]:
        """The test as a program run's `tests` job lists it (`rewardsmith.sandbox.harness`):
        never the check or the expected side."""
        if self.in_process:
            return {"code": self.code}
        return {
            "pre": self.pre,
            "holes": list(self.holes),
            "truth": self.truth,
        }


class Names:
    """Which names belong to the program, statement by statement.

    Starts with `program` (the entry point, `check`'s parameter); every other name is the
    program's unless a trusted statement bound it or it is a builtin. `shadowed`: builtin
    names the program defines; they stay the builtins in an assertion that calls the program
    anyway (`set(f(x)) == set(y)`: the judge's `set`), and are the program's only in one that
    would otherwise not call it at all (MBPP's `sum(10, 15) == 6`, a task named `sum`)."""

    def __init__(self, program: Iterable[str] = (), shadowed: Iterable[str] = ()) -> None:
        self.program = set(program)
        self.trusted: set[str] = set()
        self.shadowed = frozenset(shadowed)

    def is_program(self, name: str) -> bool:
        return name in self.program or (name not in self.trusted and name not in _BUILTINS)

    def touches_program(self, node: ast.AST) -> bool:
        return any(self.is_program(n) for n in free_names(node))

    def run(self, stmt: ast.stmt) -> bool:
        """Record what `stmt` binds; True when it is clean (touches no program name)."""
        clean = not self.touches_program(stmt)
        for name in bound_names(stmt):
            if clean:
                self.trusted.add(name)
                self.program.discard(name)
            else:
                self.program.add(name)
                self.trusted.discard(name)
        return clean

    def taint(self, stmt: ast.stmt) -> None:
        """`stmt` runs in the program's process as part of a test: what it binds is the
        program's (a loop variable, a result it stored)."""
        for name in bound_names(stmt):
            self.program.add(name)
            self.trusted.discard(name)


def free_names(node: ast.AST) -> set[str]:
    """Names `node` reads that it does not bind itself (a close, cheap approximation of
    Python's scoping: a name bound anywhere inside counts as bound)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            loaded.add(n.id)
        _bind(n, bound, deep=True)
    return loaded - bound


def bound_names(node: ast.AST, deep: bool = False) -> set[str]:
    """Names a statement binds at its level (`deep`: anywhere inside, arguments included)."""
    names: set[str] = set()
    for n in ast.walk(node) if deep else _same_scope(node):
        _bind(n, names, deep)
    return names


def _bind(n: ast.AST, names: set[str], deep: bool) -> None:
    if isinstance(n, ast.Name):
        if isinstance(n.ctx, ast.Store | ast.Del):
            names.add(n.id)
    elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        names.add(n.name)
    elif isinstance(n, ast.alias):
        names.add((n.asname or n.name).split(".")[0])
    elif isinstance(n, ast.arg):
        if deep:
            names.add(n.arg)
    elif isinstance(n, ast.ExceptHandler):
        if n.name:
            names.add(n.name)
    elif isinstance(n, ast.Global | ast.Nonlocal):
        names.update(n.names)


def _same_scope(node: ast.AST) -> Iterable[ast.AST]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if n is not node and isinstance(
            n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
        ):
            continue
        stack.extend(ast.iter_child_nodes(n))


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
    body: Sequence[ast.stmt], names: Names, decompose: bool, guard: bool
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
    tests = [split_one(pre, stmt, names, decompose, guard) for pre, stmt in chunks]
    if pending and tests:
        # Statements after the last assertion: the last test runs whole, with them.
        last_pre, last_stmt = chunks[-1]
        code = "\n".join(ast.unparse(s) for s in (*last_pre, last_stmt, *pending))
        tests[-1] = SplitTest(code, code=guard_equality(code) if guard else code)
        for stmt in pending:
            names.taint(stmt)
    for test in tests:
        try:
            compile_quietly(test.code or "\n".join((test.pre, *test.holes, test.check)), "exec")
        except SyntaxError:
            return []
    return tests


def split_one(
    pre: Sequence[ast.stmt], stmt: ast.stmt, names: Names, decompose: bool, guard: bool
) -> SplitTest:
    """One test: `pre` statements, then `stmt` (an assertion, or a statement holding one)."""
    clean_pre = [s for s in pre if names.run(s)]
    source = "\n".join(ast.unparse(s) for s in (*pre, stmt))
    split = _decomposed(stmt, names) if decompose else None
    called = free_names(stmt) & names.shadowed if names.shadowed else set()
    if split is not None and not split[0] and called:
        # It calls nothing of the program's but a builtin name the program defines: that
        # is the function under test.
        names.program |= called
        split = _decomposed(stmt, names)
        names.program -= called
    if split is None:
        names.taint(stmt)
        return SplitTest(source, code=guard_equality(source) if guard else source)
    holes, check, truth, (op, expected) = split
    judge_pre = "\n".join(ast.unparse(s) for s in clean_pre)
    callable_builtins = free_names(stmt) & _BUILTINS if not holes else set()
    return SplitTest(
        source,
        pre="\n".join(ast.unparse(s) for s in pre),
        holes=holes,
        check=check,
        judge_pre=judge_pre,
        truth=truth,
        op=op,
        expected=expected,
        builtins=frozenset(n for n in callable_builtins if n not in names.trusted),
    )


_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not"}


def _simple(node: ast.expr) -> tuple[str, str]:
    """(op, literal) when a check with one hole is a comparison with a literal or a truth
    test, which the caller decides on plain data without running any code; else ("", "")."""
    hole = HOLE_NAME.format(0)
    if isinstance(node, ast.Name) and node.id == hole:
        return "truth", ""
    operand = (
        node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else None
    )
    if isinstance(operand, ast.Name) and operand.id == hole:
        return "not", ""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _OPS:
        sides = (node.left, node.comparators[0])
        for this, other in (sides, sides[::-1]):
            if isinstance(this, ast.Name) and this.id == hole and _is_literal(other):
                return _OPS[type(node.ops[0])], ast.unparse(other)
    return "", ""


def _is_literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _decomposed(
    stmt: ast.stmt, names: Names
) -> tuple[tuple[str, ...], str, bool, tuple[str, str]] | None:
    """(holes, check, truth, (op, literal)) for a plain `assert EXPR[, msg]`, or None when
    it cannot be split. `truth`: the assertion is `assert CALL` or `assert not CALL`, so only
    the truth of the one hole matters (a `re.Match`, say, is not plain data but is true).
    The statement's tree is left as it was."""
    if not isinstance(stmt, ast.Assert):
        return None
    expr = stmt.test
    holes: list[ast.expr] = []
    if not _find_holes(expr, names, holes):
        return None
    bare = expr.operand if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not) else expr
    truth = len(holes) == 1 and bare is holes[0]
    with _holes_named(stmt, holes) as filled:
        if free_names(filled) & _RUNS_CODE:
            return None  # it would run what the program returned as code, in the judge
        check = ast.unparse(filled)
        simple = _simple(filled) if len(holes) == 1 else ("", "")
    return tuple(ast.unparse(h) for h in holes), check, truth, simple


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
