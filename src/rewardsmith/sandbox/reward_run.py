"""A `reward` run: generated reward code, loaded and called inside a sandboxed child.

The job (`probe.reward_job`) carries the source and batches of `completions`, `references`
and `prompts`. The child:

1. imports every allowlisted module and builds its read-only view (`confine.preload`; the
   zygote has most of them loaded already), scatters its heap (`confine.scatter_heap`), and
   arms the audit hook (`confine.arm`): from here on the process refuses imports, files,
   `exec`, frames and every other audited action;
2. loads the code once in the restricted namespace (`load ok`, or `load fail REASON`: stage 3
   of the check);
3. scores each sample **on its own**: the code runs again in a fresh namespace (module
   globals start over), `decimal`'s contexts are reset, and `reward` is called with lists of
   one completion, one reference, one prompt. So a sample's reward cannot depend on the
   other samples of its batch, their number or order, or on how many samples came before
   it in this run;
4. reports one record per batch: the scores as JSON floats (a non-finite one as its
   `repr`), or `{"error": REASON}` for the first sample whose call failed or whose return
   value is not one exact `float`/`int`/`bool` in a list.

For the check (`strings: true` in the job), it also reports the strings the loaded module
holds (`module_strings`: globals, containers, defaults and closures of its functions, class
attributes), so a trigger the code builds at load time from pieces the source does not spell
out is tried like a literal.

Records travel as the harness writes them (`harness.Records`): `load`, `strings 0 JSON`
(check only), `result I JSON` per batch, `done N`.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rewardsmith.sandbox import confine
from rewardsmith.sandbox.harness import Records, describe

confine.preload()  # the zygote preloads this module: every run starts with the views built

_exec = exec
_compile = compile
_dumps = json.dumps
_isfinite = math.isfinite
_MemoryError = MemoryError
_BaseException = BaseException
_type = type
_float = float
_int = int
_bool = bool
_list = list
_tuple = tuple
_len = len
_callable = callable
_FunctionType = types.FunctionType
# `module_strings` bounds: a module holding a million strings must not slow the check down.
MAX_STRINGS = 500
MAX_STRING_CHARS = 200
MAX_VISITS = 20_000


def run_reward(job: Mapping[str, Any], report: Records) -> int:
    """Load the job's code, score every sample of every batch (module docstring). 0."""
    try:
        # dont_inherit: not this module's `from __future__ import annotations`
        program = _compile(job["source"], "<reward>", "exec", dont_inherit=True)
    except _BaseException as exc:
        report("load", "fail", describe(exc))
        return 0
    batches: Sequence[Mapping[str, Any]] = job["batches"]
    padding = confine.scatter_heap()
    guard = confine.arm([program])
    try:
        try:
            fn = _load(program)
            accepted = _accepted_arguments(fn)
        except _MemoryError:
            raise  # `run` reports it: a memory limit is the sandbox's verdict
        except _BaseException as exc:
            report("load", "fail", describe(exc))
            return 0
        report("load", "ok", "")
        if job.get("strings"):
            try:
                strings = module_strings(fn)
            except _BaseException:  # the module's objects misbehaved: what it holds is moot
                strings = []
            report("strings", 0, _dumps(strings))
        for i, batch in enumerate(batches):
            report("result", i, _dumps(_score_batch(program, batch, accepted)))
    finally:
        guard.armed = False
        del padding
    report("done", _len(batches), "")
    return 0


def _load(program: Any) -> Callable[..., Any]:
    namespace = confine.restricted_globals()
    _exec(program, namespace)
    fn = namespace.get("reward")
    if not _callable(fn):
        raise NameError("the code defines no function `reward`")
    return fn


def _score_batch(program: Any, batch: Mapping[str, Any], accepted: set[str] | None) -> Any:
    """One score per sample, each from a fresh load of the code; or the first error."""
    columns = {k: _list(v) for k, v in batch.items() if accepted is None or k in accepted}
    size = _len(batch.get("completions") or ())
    scores: list[Any] = []
    for j in range(size):
        confine.reset_decimal()
        try:
            fn = _load(program)
            value = _as_floats(fn(**{k: [v[j]] for k, v in columns.items()}))
        except _MemoryError:
            raise
        except _BaseException as exc:
            return {"error": describe(exc)}
        if _type(value) is dict:
            return value
        if _len(value) != 1:
            return {"error": f"reward returned {_len(value)} scores for 1 completion"}
        scores.append(value[0])
    return scores


def module_strings(fn: Callable[..., Any]) -> list[str]:
    """Strings (up to `MAX_STRING_CHARS` each) reachable from the module's globals through
    exact builtin containers, functions' defaults and closures and class attributes; at most
    `MAX_STRINGS`, visiting at most `MAX_VISITS` objects. Only exact types are read (no code
    of the module runs here)."""
    found: dict[str, None] = {}
    stack: list[Any] = [fn.__globals__]
    seen: set[int] = set()
    visits = 0
    while stack and visits < MAX_VISITS and _len(found) < MAX_STRINGS:
        obj = stack.pop()
        visits += 1
        kind = _type(obj)
        if issubclass(kind, str):
            text = "".join((obj,))  # a str subclass's own __str__ never runs
            if text.strip() and _len(text) <= MAX_STRING_CHARS:
                found[text] = None
            continue
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if kind is dict:
            stack.extend(v for k, v in obj.items() if k != "__builtins__")
            stack.extend(k for k in obj if _type(k) is str and not k.startswith("__"))
        elif kind in (_list, _tuple, set, frozenset):
            stack.extend(obj)
        elif kind is _FunctionType and obj.__module__ == "reward_fn":
            stack.extend(obj.__defaults__ or ())
            stack.extend((obj.__kwdefaults__ or {}).values())
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
        elif issubclass(kind, _type) and obj.__module__ == "reward_fn":
            stack.extend(v for k, v in vars(obj).items() if not k.startswith("__"))
    return list(found)


def _filled(cell: Any) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _accepted_arguments(fn: Callable[..., Any]) -> set[str] | None:
    """Parameter names `fn` takes, or None when it takes **kwargs (then it gets all)."""
    code = fn.__code__
    if code.co_flags & 0x08:  # CO_VARKEYWORDS
        return None
    count = code.co_argcount + code.co_kwonlyargcount
    return set(code.co_varnames[:count])


def _as_floats(value: Any) -> Any:
    """The reward list as plain floats, or an error object naming what was wrong."""
    if _type(value) not in (_list, _tuple):
        return {"error": f"reward returned {_type(value).__name__}, expected a list of floats"}
    result = []
    for x in value:
        # Exact types only: a user class with a lying __float__ must not pass as a number.
        if _type(x) not in (_float, _int, _bool):
            return {"error": f"reward returned an element of type {_type(x).__name__}"}
        f = _float(x)
        result.append(f if _isfinite(f) else repr(f))
    return result
