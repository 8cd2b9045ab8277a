"""What the program's process receives of a test: its statements that call the program, its
holes, and, as inputs a judge run prepares, exactly the values of the test's own that they
read (`split` calls this for each test).

A statement or hole that runs in the program's process may read values the test made
(`candidate(lst)`, `candidate(CASES[0][0])`, `candidate(helper(3))`). Those values are
computed by the judge, where the test's statements run, and sent as plain data; the program
gets what its call needs and nothing around it:

- a trusted name read whole (`lst`) is *bound* in the program's namespace (`lst =
  __rs_in__['3']`), and is the program's from then on (`Names.hand_over`): it may change it,
  and later code reads its copy;
- any larger expression of the test's own (`CASES[0][0]`, `helper(3)`, `math.pi * 2`) is
  evaluated by the judge and replaced by its value (`candidate(__rs_in__['4'])`): the table
  it comes from, with the expected outputs beside the inputs, stays with the judge. (So the
  program changing such a value in place is not seen by the test's later statements, which
  read the judge's.)

Expressions with no name of the test's (literals) stay in the code as they are.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from rewardsmith.sandbox.harness import INPUTS_NAME
from rewardsmith.tools.code.ownership import Names, free_names

# A step of the judge's part of a test: ("run", SOURCE), ("bind", KEY, NAME), ("value",
# KEY, SOURCE) (both: inputs of the program's run), ("expect", KEY, SOURCE) (for the caller).
Step = tuple[str, ...]


class Keys:
    """Names for the values a suite's judge prepares ("0", "1", ...)."""

    def __init__(self) -> None:
        self.next = 0

    def __call__(self) -> str:
        self.next += 1
        return str(self.next - 1)


@dataclass
class Part:
    """What splitting one statement sequence gives, as it grows: the judge's `steps`, the
    program's lines, the input keys those read, the earlier tests whose statements bound
    program names they read (`needs`), and whether they read a name only running a test
    whole binds (`whole_only`)."""

    steps: list[Step] = dataclasses.field(default_factory=list)
    program: list[str] = dataclasses.field(default_factory=list)
    inputs: list[str] = dataclasses.field(default_factory=list)
    needs: set[int] = dataclasses.field(default_factory=set)
    whole_only: bool = False

    def judge(self, stmt: ast.stmt) -> None:
        source = ast.unparse(stmt)
        if self.steps and self.steps[-1][0] == "run":
            self.steps[-1] = ("run", self.steps[-1][1] + "\n" + source)
        else:
            self.steps.append(("run", source))

    def program_side(self, node: ast.AST, names: Names, keys: Keys) -> tuple[str, set[str]]:
        """`node` (a statement or a hole) runs in the program's process: its source with the
        test's values it reads made inputs, and the trusted names bound whole for it (the
        caller hands them over to the program once `node` has run). The binding lines go
        to the program's lines first."""
        read = free_names(node)
        owned = read & names.program
        self.needs |= {names.origin[n] for n in owned if 0 <= names.origin.get(n, -1) < names.test}
        self.whole_only = self.whole_only or bool(read & names.whole_only)
        if not read & names.trusted:
            return ast.unparse(node), set()
        swap = _Inputs(names, keys, self)
        source = ast.unparse(swap.visit(copy.deepcopy(node)))
        for name in sorted(swap.bound):
            key = keys()
            self.steps.append(("bind", key, name))
            self.program.append(f"{name} = {INPUTS_NAME}[{key!r}]")
            self.inputs.append(key)
        return source, swap.bound

    def statements(self, stmts: Sequence[ast.stmt], names: Names, keys: Keys) -> None:
        """Statements in order: the clean ones are the judge's; the others run in the
        program's process, with the test's values they read as inputs."""
        for stmt in stmts:
            if names.is_clean(stmt):
                names.run(stmt)
                self.judge(stmt)
                continue
            source, handed = self.program_side(stmt, names, keys)
            self.program.append(source)
            names.run(stmt)
            names.hand_over(handed)


class _Inputs(ast.NodeTransformer):
    """Replaces each largest expression of the test's own (no program name in it, some
    trusted name) by an input; a bare trusted name stays, to be bound whole (`bound`)."""

    def __init__(self, names: Names, keys: Keys, part: Part) -> None:
        self.names, self.keys, self.part = names, keys, part
        self.bound: set[str] = set()

    def visit(self, node: ast.AST) -> ast.AST:
        loads = isinstance(getattr(node, "ctx", ast.Load()), ast.Load)
        value = isinstance(node, ast.expr) and loads and not isinstance(node, _NOT_VALUES)
        if not value or self.names.touches_program(node):
            return self.generic_visit(node)
        if not self.names.trusted_in(node):
            return node  # a literal, or builtins only
        if isinstance(node, ast.Name):
            self.bound.add(node.id)
            return node
        key = self.keys()
        self.part.steps.append(("value", key, ast.unparse(node)))
        self.part.inputs.append(key)
        return ast.Subscript(ast.Name(INPUTS_NAME, ast.Load()), ast.Constant(key), ast.Load())


# Expressions that are not values on their own (looked into instead): a lambda is code,
# `*args`, `a:b` and an f-string's `{x}` only mean something where they stand.
_NOT_VALUES = (ast.Lambda, ast.Starred, ast.Slice, ast.FormattedValue)


def split_setup(
    stmts: Sequence[ast.stmt], names: Names, keys: Keys
) -> tuple[str, tuple[Step, ...]]:
    """The program's part of a setup (its imports, which solutions may rely on, and the
    statements that use the program, their inputs bound) and the judge's part."""
    part = Part()
    names.look_ahead(stmts)
    for stmt in stmts:
        program_side = len(part.program)
        part.statements([stmt], names, keys)
        if len(part.program) == program_side and isinstance(stmt, ast.Import | ast.ImportFrom):
            part.program.append(ast.unparse(stmt))
    names.later = set()
    return "\n".join(part.program), tuple(part.steps)
