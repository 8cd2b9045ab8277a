"""Which checks a judge run may evaluate: none that could run a value the program returned as
code.

A judge run evaluates a test's check on the values the program reported (`sandbox/judge.py`);
those values are the attacker's. A check that deserializes, evaluates, compiles or imports
one of them (`pickle.loads(H)`, `eval(H)`, `importlib.import_module(H)`, `getattr(m, H)`),
directly or through any function, class or table the test defines, would run the attacker's
data in the judge, which could then write a pass for every test it decides. Such a check is
not decomposed: the test runs whole in the program's process, where that code ran anyway,
and the reward counts it in `in_process` (`code_split`).

The screen is an allowlist, followed through the test's own code: a check may reach builtins
other than `RUNS_CODE`, the modules of `PURE_MODULES` (but not `DENIED_ATTRIBUTES`), no
dunder attribute, and trusted names whose defining statements (a `def`, a `class`, an
assignment, an import; `Names.defs`) pass the same screen, transitively. Anything else (a
module not listed, an import inside a helper, `operator.methodcaller`) keeps the test in
process.
"""

from __future__ import annotations

import ast

from rewardsmith.tools.code_names import BUILTIN_NAMES, Names, free_names

# Builtins that run code, reach objects or modules by a name the data could choose, or read
# files and input: a check calling (or passing) one of them could run a value as code.
RUNS_CODE = frozenset(
    {"eval", "exec", "compile", "__import__", "__build_class__", "getattr", "setattr"}
    | {"delattr", "hasattr", "open", "input", "globals", "locals", "vars", "breakpoint"}
    | {"help", "memoryview", "__loader__", "__spec__"}
)
# Modules whose functions only compute on data (no deserializer, loader or code object).
PURE_MODULES = frozenset(
    {"math", "cmath", "decimal", "fractions", "statistics", "numbers", "random", "re"}
    | {"string", "collections", "itertools", "functools", "operator", "heapq", "bisect"}
    | {"copy", "datetime", "calendar", "typing", "unicodedata", "textwrap", "difflib"}
    | {"array", "hashlib", "json", "ast", "enum", "time"}
)
# ...except these, which reach attributes or methods by a name given at run time.
DENIED_ATTRIBUTES = frozenset(
    {("operator", "attrgetter"), ("operator", "methodcaller"), ("functools", "singledispatch")}
)


def runs_code(expr: ast.AST, names: Names) -> bool:
    """Whether evaluating `expr` (a check, holes named) in the judge could run program data
    as code: it reaches, directly or through the test's own definitions, anything outside
    the allowlist of the module docstring."""
    seen: set[int] = set()
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if _denied_here(node, names):
            return True
        for name in free_names(node):
            if name in names.trusted:
                stack.extend(names.defs.get(name, ()))
            elif name in BUILTIN_NAMES and name in RUNS_CODE:
                return True
    return False


def _denied_here(node: ast.AST, names: Names) -> bool:
    """A construct under `node` that is refused wherever it appears: a dunder attribute, an
    import of a module not listed, a denied attribute of a listed module."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            if n.attr.startswith("__"):
                return True
            module = _module_of(n.value, names)
            if module is not None and (module, n.attr) in DENIED_ATTRIBUTES:
                return True
        elif isinstance(n, ast.Import):
            if any(not _pure(alias.name) for alias in n.names):
                return True
        elif isinstance(n, ast.ImportFrom):
            module = n.module or ""
            if n.level or not _pure(module):
                return True
            if any((module, alias.name) in DENIED_ATTRIBUTES for alias in n.names):
                return True
            if any(alias.name == "*" for alias in n.names):
                return True
        elif isinstance(n, ast.Name) and n.id in RUNS_CODE and n.id not in names.trusted:
            return True
    return False


def _pure(module: str) -> bool:
    return module.split(".")[0] in PURE_MODULES


def _module_of(node: ast.expr, names: Names) -> str | None:
    """The module a name stands for, when a trusted `import` bound it (`import operator`,
    `import operator as op`)."""
    if not isinstance(node, ast.Name) or node.id not in names.trusted:
        return None
    for stmt in names.defs.get(node.id, ()):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == node.id:
                    return alias.name if alias.asname else alias.name.split(".")[0]
    return None
