"""Stages 1 and 3 of the check for generated reward code: a static AST policy and the
restricted namespace the code runs in.

Stage 1 (`static_check`) rejects, before anything runs: imports outside `ALLOWED_IMPORTS`;
any dunder name or attribute (`__subclasses__`, `__globals__`, `__builtins__`, `__class__`...),
the classic escapes from a restricted namespace; private attributes, and the public ones that
lead to frames (`gi_frame`, `f_back`, `f_globals`, `tb_frame`...: `blocked_attribute`);
`.format`/`.format_map` on anything but a string literal (a format string built at run time
reads attributes by name: `"{0.__class__}"`); calls to `eval`, `exec`, `open`, `compile`,
`__import__`, `getattr`/`setattr` (which take attribute names as strings and so bypass the
dunder rule), `globals`, `vars`, `input`, `breakpoint`; `global`/`nonlocal`; and source
without a top-level `def reward(...)`. Stage 3 (`confine.restricted_globals`) gives the code
only `SAFE_BUILTINS` and an `__import__` that hands out read-only views of the same
allowlist (`rewardsmith.sandbox.confine`, which also holds the run-time audit hook). Both
follow the 4-stage admission check of search-driven reward design (static check, locked
execution, restricted namespace, probe calls); stages 2 and 4 live in
`rewardsmith.sandbox.probe`.

Neither stage is a security boundary on its own: Python cannot be sandboxed from inside.
They reject obviously dangerous code early with a clear reason; the process sandbox
(`rewardsmith.sandbox.pool`) is what contains code that gets past them.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Any

# Pure-computation standard-library modules a reward function may need.
ALLOWED_IMPORTS: frozenset[str] = frozenset(
    {
        "math",
        "re",
        "json",
        "string",
        "collections",
        "itertools",
        "functools",
        "statistics",
        "difflib",
        "unicodedata",
        "fractions",
        "decimal",
        "operator",
        "heapq",
        "bisect",
        "typing",
        "dataclasses",
        "numbers",
        "textwrap",
    }
)

FORBIDDEN_CALLS: frozenset[str] = frozenset(
    {
        "eval",
        "exec",
        "open",
        "compile",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "dir",
        "input",
        "breakpoint",
        "help",
        "memoryview",
        "type",
        "super",
        "object",
        "classmethod",
        "staticmethod",
        "property",
    }
)

_SAFE_BUILTIN_NAMES = [
    "abs",
    "all",
    "any",
    "ascii",
    "bin",
    "bool",
    "bytes",
    "chr",
    "complex",
    "dict",
    "divmod",
    "enumerate",
    "filter",
    "float",
    "format",
    "frozenset",
    "hash",
    "hex",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "map",
    "max",
    "min",
    "next",
    "oct",
    "ord",
    "pow",
    "print",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "slice",
    "sorted",
    "str",
    "sum",
    "tuple",
    "zip",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "Exception",
    "IndexError",
    "KeyError",
    "LookupError",
    "NameError",
    "NotImplementedError",
    "OverflowError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "TypeError",
    "UnicodeError",
    "ValueError",
    "ZeroDivisionError",
    "True",
    "False",
    "None",
    "NotImplemented",
]

SAFE_BUILTINS: dict[str, Any] = {name: getattr(builtins, name) for name in _SAFE_BUILTIN_NAMES}

# Public attribute names that lead from a generator, coroutine, traceback or frame to the
# frames of the code that called it, and from there to every global of the process.
FRAME_ATTRIBUTE_PREFIXES = ("gi_", "cr_", "ag_", "f_", "tb_", "co_")
# `str.format` and `format_map` read attributes and items named in the format string.
FORMAT_METHODS = frozenset({"format", "format_map"})


def blocked_attribute(name: str) -> bool:
    """Whether reward code may not read attribute `name`: private or dunder names, and the
    frame-reaching ones (`FRAME_ATTRIBUTE_PREFIXES`)."""
    return name.startswith("_") or name.startswith(FRAME_ATTRIBUTE_PREFIXES)


@dataclass(frozen=True)
class PolicyViolation:
    """One reason the static check refused the code, with its line."""

    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def static_check(source: str) -> list[PolicyViolation]:
    """Stage 1: every policy violation in `source` (empty list = passes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return [PolicyViolation(exc.lineno or 0, f"syntax error: {exc.msg}")]
    found: list[PolicyViolation] = []

    def bad(node: ast.AST, reason: str) -> None:
        found.append(PolicyViolation(getattr(node, "lineno", 0), reason))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] not in ALLOWED_IMPORTS:
                    bad(node, f"import of {alias.name!r} is not allowed")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or module.split(".")[0] not in ALLOWED_IMPORTS:
                bad(node, f"import from {module or '.'!r} is not allowed")
            for alias in node.names:
                if alias.name == "*" or _is_dunder(alias.name):
                    bad(node, f"importing {alias.name!r} is not allowed")
        elif isinstance(node, ast.Attribute) and blocked_attribute(node.attr):
            kind = "private" if node.attr.startswith("_") else "frame"
            bad(node, f"access to {kind} attribute {node.attr!r} is not allowed")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in FORMAT_METHODS
            and not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str))
        ):
            bad(node, f"`.{node.attr}` is only allowed on a string literal")
        elif isinstance(node, ast.Name):
            if _is_dunder(node.id) or node.id in FORBIDDEN_CALLS:
                bad(node, f"use of {node.id!r} is not allowed")
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bad(node, "global/nonlocal statements are not allowed")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # getattr is refused, but format strings and str.format can still name attributes
            if "__" in node.value and any(_is_dunder(w) for w in _words(node.value)):
                bad(node, "string naming a dunder attribute is not allowed")
        elif (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and _is_dunder(node.name)
            and node.name not in ("__init__", "__repr__")
        ):
            bad(node, f"defining {node.name!r} is not allowed")
    if not any(isinstance(n, ast.FunctionDef) and n.name == "reward" for n in tree.body):
        found.append(PolicyViolation(0, "no top-level `def reward(...)`"))
    return found


def _words(text: str) -> list[str]:
    out, word = [], []
    for ch in text:
        if ch.isalnum() or ch == "_":
            word.append(ch)
        else:
            out.append("".join(word))
            word = []
    out.append("".join(word))
    return out
