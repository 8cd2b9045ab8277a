"""What generated reward code can reach at run time, and what its process refuses.

Stage 1 of the check (`policy.static_check`) reads the source; this module holds the run-time
half, used in the sandboxed child that runs the code (`reward_run.py`) and for the trusted
primitive programs synthesis compiles in-process (`synth.primitives`):

- **module views.** `import re` gives the code a read-only `ModuleView` of `re`, never the
  module itself: only its public names, and no module objects among them (the real `typing`
  holds `typing.sys`, the real `dataclasses` holds `dataclasses.inspect.os`: one attribute
  access from `os` without a dunder in sight). Submodules of the same package are views
  too. Names that turn a run-time string into an attribute read are replaced or removed:
  `operator.attrgetter` / `methodcaller` refuse private and frame-reaching names,
  `functools.update_wrapper` / `wraps` copy only their fixed attribute lists,
  `string.Formatter` (its `get_field` is `getattr`), `typing.get_type_hints` and
  `typing.ForwardRef` (both `eval` a string) are gone.
- **an audit hook** (`arm`), installed after the allowlisted modules are loaded, refuses what
  Python's own audit events can see, whatever route reached it: importing any module (only
  codecs load lazily), opening files, `exec`/`compile`/`sys._getframe` outside the few
  standard-library callers that need them (`collections.namedtuple`, `dataclasses`, `typing`;
  the runner's own program), frames through `gi_frame`/`cr_frame`/`ag_frame`/`tb_frame`,
  rewriting `__code__`/`__class__`/`__bases__`, and every other event (`os.*`,
  `subprocess.*`, `socket.*`, `ctypes.*`, ...), since nothing a reward needs raises one.
- **addresses that say nothing** (`scatter_heap`): a run allocates a random amount of memory
  before the code loads, so `hash(f)` or `repr(f)` of a fresh object (its address) is not a
  counter of the runs a zygote served.

None of this is a boundary on its own (Python cannot be sandboxed from inside); the process
sandbox contains what gets past it. It closes the routes by which reward code could learn
that it is being checked (the run's pid, the clock, files left by earlier runs) or reach the
interpreter's internals.
"""

from __future__ import annotations

import builtins
import decimal
import functools
import importlib
import operator
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from rewardsmith.sandbox.policy import (
    ALLOWED_IMPORTS,
    FRAME_ATTRIBUTE_PREFIXES,
    SAFE_BUILTINS,
    blocked_attribute,
)

# Names each view leaves out: each hands code a way to evaluate a string or read any
# attribute by a name built at run time.
REMOVED: dict[str, frozenset[str]] = {
    "string": frozenset({"Formatter"}),
    "typing": frozenset({"get_type_hints", "ForwardRef"}),
}
# Audit events the code's own calls raise in normal use, always allowed.
HARMLESS_EVENTS = frozenset({"builtins.id"})
# Attribute writes the hook refuses: they swap a function's code or an object's class.
GUARDED_SETATTR = frozenset({"__code__", "__class__"})
# A run allocates up to this many small blocks before the code loads (`scatter_heap`).
SCATTER_BLOCKS = 4096


def _checked(name: str) -> str:
    for part in name.split("."):
        if blocked_attribute(part) or part in ("format", "format_map"):
            raise AttributeError(f"attribute {name!r} is not available in a reward function")
    return name


def attrgetter(attr: str, /, *attrs: str) -> Callable[[Any], Any]:
    """`operator.attrgetter` for public attribute names only."""
    names = [_checked(a) if isinstance(a, str) else a for a in (attr, *attrs)]
    return operator.attrgetter(*names)


def methodcaller(name: str, /, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """`operator.methodcaller` for public method names only (and not `format`)."""
    return operator.methodcaller(_checked(name) if isinstance(name, str) else name, *args, **kwargs)


def update_wrapper(wrapper: Any, wrapped: Any) -> Any:
    """`functools.update_wrapper` with its fixed attribute lists only."""
    return functools.update_wrapper(wrapper, wrapped)


def wraps(wrapped: Any) -> Callable[[Any], Any]:
    """`functools.wraps` with its fixed attribute lists only."""
    return functools.wraps(wrapped)


REPLACED: dict[str, dict[str, Any]] = {
    "operator": {"attrgetter": attrgetter, "methodcaller": methodcaller},
    "functools": {"update_wrapper": update_wrapper, "wraps": wraps},
}


class ModuleView(types.ModuleType):
    """A read-only stand-in for an allowlisted module (see the module docstring)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"module {self.__name__!r} is read-only in a reward function")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"module {self.__name__!r} is read-only in a reward function")


_VIEWS: dict[str, ModuleView] = {}


def module_view(name: str) -> ModuleView:
    """The view of allowlisted module `name` (built once per process, then shared: it
    cannot be written to, so one call cannot leave state in it for the next)."""
    view = _VIEWS.get(name)
    if view is not None:
        return view
    module = importlib.import_module(name)
    top = name.split(".")[0]
    attrs: dict[str, Any] = {}
    for key, value in vars(module).items():
        if key.startswith("_") or key in REMOVED.get(name, ()):
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__.startswith(top + ".") and value.__name__ != name:
                attrs[key] = module_view(value.__name__)
            continue
        attrs[key] = value
    attrs.update(REPLACED.get(name, {}))
    view = ModuleView(name)
    vars(view).update(attrs)
    _VIEWS[name] = view
    return view


def restricted_import(
    name: str,
    globals: Any = None,
    locals: Any = None,
    fromlist: Any = (),
    level: int = 0,
) -> Any:
    """`__import__` for reward code: views of allowlisted modules only (stage 3)."""
    if level or name.split(".")[0] not in ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed in a reward function")
    try:
        view = module_view(name)
    except ImportError as exc:
        raise ImportError(f"import of {name!r} failed: {exc}") from None
    if fromlist:
        return view
    return module_view(name.split(".")[0])


def restricted_globals() -> dict[str, Any]:
    """Stage 3: the namespace generated reward code is executed in."""
    safe = dict(SAFE_BUILTINS)
    safe["__import__"] = restricted_import
    safe["__build_class__"] = builtins.__build_class__
    return {"__builtins__": safe, "__name__": "reward_fn"}


def preload() -> None:
    """Import every allowlisted module and build its view (before `arm`, which refuses
    imports)."""
    for name in sorted(ALLOWED_IMPORTS):
        module_view(name)
    import collections.abc  # noqa: F401 - `import collections.abc` is common in reward code

    module_view("collections.abc")


_DECIMAL_FIELDS = ("prec", "rounding", "Emin", "Emax", "capitals", "clamp")
_PRISTINE_DECIMAL = {
    name: getattr(decimal, name).copy()
    for name in ("DefaultContext", "BasicContext", "ExtendedContext")
}


def reset_decimal() -> None:
    """Put `decimal`'s shared contexts back as they were and give this thread a fresh one:
    they outlive a namespace, so one call could leave state in them for the next."""
    for name, pristine in _PRISTINE_DECIMAL.items():
        context = getattr(decimal, name)
        for field in _DECIMAL_FIELDS:
            setattr(context, field, getattr(pristine, field))
        context.traps = dict(pristine.traps)
        context.clear_flags()
    decimal.setcontext(decimal.Context())


def scatter_heap() -> list[bytearray]:
    """Allocate a random number of blocks of random sizes (keep the list alive): addresses
    of objects made after it differ from run to run."""
    sizes = os.urandom(2 + SCATTER_BLOCKS)
    count = int.from_bytes(sizes[:2], "big") % SCATTER_BLOCKS
    return [bytearray(size) for size in sizes[2 : 2 + count]]


class Guard:
    """The audit hook (see the module docstring). `programs` are code objects the runner
    itself executes; `armed` False lets the runner report after the code is done."""

    def __init__(self) -> None:
        import collections
        import dataclasses
        import typing

        self.programs: list[Any] = []
        self.armed = True
        self._inside = False
        # Standard-library functions that evaluate fixed templates of validated identifiers
        # (namedtuple, dataclass methods) or read only their caller's module name.
        self._trusted = {
            collections.namedtuple.__code__,
            dataclasses._create_fn.__code__,  # type: ignore[attr-defined]
            typing._caller.__code__,  # type: ignore[attr-defined]
        }
        self.refused: list[str] = []

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if self._inside or not self.armed or event in HARMLESS_EVENTS:
            return
        self._inside = True
        try:
            reason = self._refusal(event, args, sys._getframe(1))
        finally:
            self._inside = False
        if reason:
            self.refused.append(reason)
            if event == "sys.addaudithook":  # a RuntimeError: the new hook is not added
                raise RuntimeError(f"{reason}: not allowed in a reward function")
            raise PermissionError(f"{reason}: not allowed in a reward function")

    def _refusal(self, event: str, args: tuple[Any, ...], caller: Any) -> str:
        if event == "object.__getattr__":
            name = args[1] if len(args) > 1 else ""
            # `__code__`, `__defaults__` are read by `inspect` (dataclasses); frames never
            frame = str(name).startswith(FRAME_ATTRIBUTE_PREFIXES)
            return f"reading {name!r}" if frame else ""
        if event == "object.__setattr__":
            name = args[1] if len(args) > 1 else ""
            return f"setting {name!r}" if name in GUARDED_SETATTR else ""
        if event == "import":
            name = str(args[0])
            return "" if name == "encodings" or name.startswith("encodings.") else f"import {name}"
        if event == "exec" and any(args and args[0] is p for p in self.programs):
            return ""
        code = caller.f_code if caller is not None else None
        if code is not None and (
            code in self._trusted or code.co_filename.startswith("<frozen importlib")
        ):
            return ""  # a codec's import (the `import` event above allowed only those)
        return f"{event} (in {code.co_name})" if code is not None else event


_GUARD: Guard | None = None


def arm(programs: list[Any]) -> Guard:
    """Install the audit hook in this process (once; it cannot be removed) and return it,
    armed, allowing `exec` of `programs` (the runner's compiled reward code)."""
    global _GUARD
    if _GUARD is None:
        _GUARD = Guard()
        sys.addaudithook(_GUARD)
    _GUARD.programs = list(programs)
    _GUARD.armed = True
    return _GUARD
