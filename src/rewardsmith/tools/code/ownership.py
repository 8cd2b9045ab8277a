"""Whose is each name in test code: the program's, or trusted (the test's own), statement by
statement; what each trusted name was bound by; and where a name the program owns came from.

A name belongs to the program unless trusted code binds it (the test's imports and setup,
statements of the test that do not touch the program) or it is a builtin; a statement that
uses a program name binds program names. A trusted name whose value is handed to the program
(an argument it receives: `candidate(lst)`) is the program's from then on: the program may
have changed it, so later code reads the program's copy (`Names.hand_over`).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterable, Iterator, Sequence

BUILTIN_NAMES = frozenset(dir(builtins))
# Statements that bind code (a module, a function, a class), not data: names they bind are
# never data the program could change.
_CODE_STATEMENTS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Names:
    """Which names belong to the program, statement by statement.

    Starts with `program` (the entry point, `check`'s parameter); every other name is the
    program's unless a trusted statement bound it or it is a builtin. `shadowed`: builtin
    names the program defines; they stay the builtins in an assertion that calls the program
    anyway (`set(f(x)) == set(y)`: the judge's `set`), and are the program's only in one that
    would otherwise not call it at all (MBPP's `sum(10, 15) == 6`, a task named `sum`).

    `defs`: the trusted statements that bound each trusted name (what a check reaches when it
    uses the name, `screen`); `code`: trusted names bound by imports, functions and
    classes; `origin`: for program names bound by a test's statements, that test's index;
    `whole_only`: program names only running a test whole binds (its loop's variable)."""

    def __init__(self, program: Iterable[str] = (), shadowed: Iterable[str] = ()) -> None:
        self.program = set(program)
        self.trusted: set[str] = set()
        self.shadowed = frozenset(shadowed)
        self.defs: dict[str, list[ast.stmt]] = {}
        self.code: set[str] = set()
        self.origin: dict[str, int] = {}
        self.whole_only: set[str] = set()
        self.test = -1  # the index of the test being split (-1: the setup)
        # Names trusted statements further down will bind: a function or class body may use
        # them (it runs later), as a test module's helpers use each other in any order.
        self.later: set[str] = set()

    def is_program(self, name: str) -> bool:
        return name in self.program or (name not in self.trusted and name not in BUILTIN_NAMES)

    def touches_program(self, node: ast.AST) -> bool:
        return any(self.is_program(n) for n in free_names(node))

    def trusted_in(self, node: ast.AST) -> set[str]:
        """Trusted names `node` reads (builtins it does not rebind are not among them)."""
        return free_names(node) & self.trusted

    def look_ahead(self, stmts: Sequence[ast.stmt]) -> None:
        """Before a module's statements run through `run`: the names they bind that will be
        trusted (a fixed point: a statement is trusted when every name it reads is trusted,
        a builtin, or bound by a trusted statement of the module), which function and class
        bodies among them may then use before they are bound."""
        binders = [(stmt, bound_names(stmt)) for stmt in stmts]
        later = set().union(*(bound for _, bound in binders))
        while True:
            clean = {
                name
                for stmt, bound in binders
                if not any(self.is_program(n) and n not in later for n in free_names(stmt))
                for name in bound
            }
            if clean >= later:
                break
            later &= clean
        self.later = later - self.program

    def is_clean(self, stmt: ast.stmt) -> bool:
        """Whether `stmt` touches no program name (a function or class body may also use
        names trusted statements bind further down: `look_ahead`)."""
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return not any(self.is_program(n) and n not in self.later for n in free_names(stmt))
        return not self.touches_program(stmt)

    def run(self, stmt: ast.stmt) -> bool:
        """Record what `stmt` binds; True when it is clean (`is_clean`)."""
        clean = self.is_clean(stmt)
        for name in bound_names(stmt):
            if clean:
                self.trusted.add(name)
                self.program.discard(name)
                self.defs.setdefault(name, []).append(stmt)
                if isinstance(stmt, _CODE_STATEMENTS):
                    self.code.add(name)
                else:
                    self.code.discard(name)
            else:
                self._own(name)
        return clean

    def taint(self, stmt: ast.stmt) -> None:
        """`stmt` runs in the program's process, whole, as part of a test: what it binds is
        the program's (a loop variable, a result it stored), and only there."""
        for name in bound_names(stmt):
            self._own(name)
            self.whole_only.add(name)

    def hand_over(self, names: Iterable[str]) -> None:
        """Trusted data names given to the program (bound in its namespace): the program's
        from now on, since it may change them. Modules, functions and classes stay trusted."""
        for name in names:
            if name not in self.code:
                self._own(name)

    def _own(self, name: str) -> None:
        self.program.add(name)
        self.trusted.discard(name)
        self.origin[name] = self.test
        self.whole_only.discard(name)


def free_names(node: ast.AST) -> set[str]:
    """Names `node` reads that it does not bind itself (a close, cheap approximation of
    Python's scoping: a name bound anywhere inside counts as bound)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for n in walk(node):
        if isinstance(n, ast.Name):
            (bound if isinstance(n.ctx, ast.Store | ast.Del) else loaded).add(n.id)
        else:
            note_binding(n, bound, deep=True)
    return loaded - bound


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk` without the leaves that name nothing (constants, load/store contexts):
    test code holds long literal lists, and this is walked for every assertion."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, _LEAVES):
            continue
        yield n
        stack.extend(ast.iter_child_nodes(n))


_LEAVES = (ast.Constant, ast.expr_context)


def bound_names(node: ast.AST, deep: bool = False) -> set[str]:
    """Names a statement binds at its level (`deep`: anywhere inside, arguments included)."""
    names: set[str] = set()
    for n in ast.walk(node) if deep else _same_scope(node):
        note_binding(n, names, deep)
    return names


def note_binding(n: ast.AST, names: set[str], deep: bool) -> None:
    """Add to `names` what the node `n` binds itself (`deep`: a function's arguments too)."""
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
