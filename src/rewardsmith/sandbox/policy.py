"""Stages 1 and 3 of the check for generated reward code: a static AST policy and the
restricted namespace the code runs in.

Stage 1 (`static_check`) rejects, before anything runs: imports outside `ALLOWED_IMPORTS`;
any dunder name or attribute (`__subclasses__`, `__globals__`, `__builtins__`, `__class__`...),
the classic escapes from a restricted namespace; calls to `eval`, `exec`, `open`, `compile`,
`__import__`, `getattr`/`setattr` (which take attribute names as strings and so bypass the
dunder rule), `globals`, `vars`, `input`, `breakpoint`; `global`/`nonlocal`; and source
without a top-level `def reward(...)`. Stage 3 (`restricted_globals`) gives the code only
`SAFE_BUILTINS` and an `__import__` that admits the same allowlist. Both follow the 4-stage
admission check of search-driven reward design (static check, locked execution, restricted
namespace, probe calls); stages 2 and 4 live in `rewardsmith.sandbox.probe`.

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
        elif isinstance(node, ast.Attribute) and (
            _is_dunder(node.attr) or node.attr.startswith("_")
        ):
            bad(node, f"access to private attribute {node.attr!r} is not allowed")
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


def restricted_import(
    name: str,
    globals: Any = None,
    locals: Any = None,
    fromlist: Any = (),
    level: int = 0,
) -> Any:
    """`__import__` for stage 3: only top-level modules on the allowlist."""
    if level or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed in a reward function")
    return builtins.__import__(name, globals, locals, fromlist, level)


def restricted_globals() -> dict[str, Any]:
    """Stage 3: the namespace generated reward code is executed in."""
    safe = dict(SAFE_BUILTINS)
    safe["__import__"] = restricted_import
    safe["__build_class__"] = builtins.__build_class__
    return {"__builtins__": safe, "__name__": "reward_fn"}
