"""Which checks a judge run may evaluate: none that could run a value the program returned as
code.

A judge run evaluates a test's check on the values the program reported (`sandbox/judge.py`);
those values are the attacker's. A check that deserializes, evaluates, compiles or imports
one of them (`pickle.loads(H)`, `eval(H)`, `importlib.import_module(H)`, `getattr(m, H)`),
directly or through any function, class or table the test defines, would run the attacker's
data in the judge, which could then write a pass for every test it decides. Such a check is
not decomposed: the test runs whole in the program's process, where that code ran anyway,
and the reward counts it in `in_process` (`split`).

The screen is an allowlist, followed through the test's own code: a check may reach builtins
other than `RUNS_CODE`, the modules of `PURE_MODULES` and what they hold (but not
`DENIED_ATTRIBUTES`, nor a module outside the list through one inside it: `datetime.sys`,
`json.codecs`), no private or dunder name or attribute (`random._os`, `__builtins__`), no
frame or code object (`gi_frame`, `f_globals`), and trusted names whose defining statements
(a `def`, a `class`, an assignment, an import; `Names.defs`) pass the same screen,
transitively. Anything else (a module not listed, an import inside a helper,
`operator.methodcaller`) keeps the test in process.
"""

from __future__ import annotations

import ast
import importlib
import re
import types
from functools import lru_cache

from rewardsmith.tools.code.ownership import BUILTIN_NAMES, Names, note_binding, walk

# Builtins that run code, reach objects or modules by a name the data could choose, or read
# files and input: a check calling (or passing) one of them could run a value as code.
RUNS_CODE = frozenset(
    {"eval", "exec", "compile", "__import__", "__build_class__", "getattr", "setattr"}
    | {"delattr", "hasattr", "open", "input", "globals", "locals", "vars", "breakpoint"}
    | {"help", "memoryview", "__loader__", "__spec__"}
)
# Modules whose functions only compute on data (no deserializer, loader, code object or
# evaluation of strings: `typing` evaluates forward references, so it is not here).
PURE_MODULES = frozenset(
    {"math", "cmath", "decimal", "fractions", "statistics", "numbers", "random", "re"}
    | {"string", "collections", "itertools", "functools", "operator", "heapq", "bisect"}
    | {"copy", "datetime", "calendar", "unicodedata", "textwrap", "difflib", "array"}
    | {"hashlib", "json", "ast", "time"}
)
# ...except these, which reach attributes or methods by a name given at run time.
DENIED_ATTRIBUTES = frozenset({("operator", "attrgetter"), ("operator", "methodcaller")})
# Attributes that reach frames, code objects and the globals and builtins they hold.
INTROSPECTION = frozenset(
    {"gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "ag_code", "tb_frame"}
    | {"tb_next", "f_globals", "f_locals", "f_builtins", "f_back", "f_code", "co_consts"}
)
# The names a check gives the program's values (`split.HOLE_NAME`).
_HOLE = re.compile(r"__rs_hole_\d+__")


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
        reads = _reads_if_allowed(node, names)
        if reads is None:
            return True
        for name in reads:
            if name in names.trusted:
                stack.extend(names.defs.get(name, ()))
            elif name in BUILTIN_NAMES and name in RUNS_CODE:
                return True
    return False


def _reads_if_allowed(node: ast.AST, names: Names) -> set[str] | None:
    """The names `node` reads from outside itself (`free_names`), or None when it holds a
    construct refused wherever it appears: a private, dunder or introspection attribute or
    name, an import of a module not listed (or of a module through a listed one), a denied
    attribute of a listed module. One walk for both."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for n in walk(node):
        if isinstance(n, ast.Name):
            if n.id in RUNS_CODE and n.id not in names.trusted:
                return None
            if n.id.startswith("__") and not _HOLE.fullmatch(n.id):
                return None
            (bound if isinstance(n.ctx, ast.Store | ast.Del) else loaded).add(n.id)
            continue
        elif isinstance(n, ast.Attribute):
            if n.attr.startswith("_") or n.attr in INTROSPECTION:
                return None
            if _reaches_other_module(n, names):
                return None
        elif isinstance(n, ast.Import):
            if any(not _pure(alias.name) for alias in n.names):
                return None
        elif isinstance(n, ast.ImportFrom) and not _import_allowed(n):
            return None
        note_binding(n, bound, deep=True)
    return loaded - bound


def _import_allowed(node: ast.ImportFrom) -> bool:
    module = node.module or ""
    if node.level or not _pure(module):
        return False
    for alias in node.names:
        if alias.name == "*" or (module, alias.name) in DENIED_ATTRIBUTES:
            return False
        if _other_module(_resolve(module, (alias.name,))):
            return False
    return True


def _pure(module: str) -> bool:
    return module.split(".")[0] in PURE_MODULES


def _reaches_other_module(node: ast.Attribute, names: Names) -> bool:
    """Whether an attribute chain rooted at a listed module (`datetime.sys.modules`) passes
    through a module that is not listed, or is a denied attribute."""
    chain: list[str] = []
    root: ast.expr = node
    while isinstance(root, ast.Attribute):
        chain.insert(0, root.attr)
        root = root.value
    module = _module_of(root, names)
    if module is None:
        return False
    if (module, chain[0]) in DENIED_ATTRIBUTES:
        return True
    return any(_other_module(_resolve(module, tuple(chain[: k + 1]))) for k in range(len(chain)))


@lru_cache(maxsize=1024)
def _resolve(module: str, chain: tuple[str, ...]) -> object:
    """What `module.a.b...` is (None where it is not there); only listed modules, all from
    the standard library, are ever imported here."""
    if not _pure(module):
        return None
    try:
        value: object = importlib.import_module(module)
    except ImportError:
        return None
    for attr in chain:
        value = getattr(value, attr, None)
    return value


def _other_module(value: object) -> bool:
    return isinstance(value, types.ModuleType) and not _pure(value.__name__)


def _module_of(node: ast.expr, names: Names) -> str | None:
    """The module a name stands for, when a trusted import bound it (`import operator`,
    `import operator as op`, `from collections import abc`)."""
    if not isinstance(node, ast.Name) or node.id not in names.trusted:
        return None
    for stmt in names.defs.get(node.id, ()):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == node.id:
                    return alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for alias in stmt.names:
                value = _resolve(stmt.module, (alias.name,))
                if (alias.asname or alias.name) == node.id and isinstance(value, types.ModuleType):
                    return value.__name__
    return None
