"""A reward function from a Python file, found by reading the file and run only in the sandbox.

Three shapes are recognized, from the file's syntax tree (nothing of it runs in the caller):

- veRL: `compute_score(data_source, solution_str, ground_truth, extra_info=None)` returning a
  number or a dict with "score"; called once per sample with `data_source` (default
  "audit"), the completion, the reference;
- TRL: a function with a `completions` parameter, `f(completions, **kwargs) -> list[float |
  None]`, called on a batch with `prompts` and the references under the name its signature
  asks for (`solution`, `answer`, `reference`, `ground_truth`...; all of them when it takes
  `**kwargs`);
- plain: `f(completion, reference)` (two positional parameters) returning a number, called
  once per sample.

The preference, when a file has several, is that order (a function named `reward` first
among TRL-style ones); `function=NAME` picks one. The file runs in the process sandbox
(`rewardsmith.sandbox`: its own process group, limits, no network, the host read-only) as
an ordinary program, so it may import what its environment has installed (math-verify,
numpy); the scores come back on stdout after a per-run nonce. A function that raises, or
returns something that is not a number, scores that sample `error`; a run that fails scores
its chunk `error` or `timeout`. The file is the auditor's own: it could fake its own report
by reading the nonce, and that is all it could reach.
"""

from __future__ import annotations

import ast
import json
import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rewardsmith.errors import InputError
from rewardsmith.sandbox.pool import Sandbox, SandboxLimits
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

Shape = Literal["verl", "trl", "plain"]
# Names a TRL-style function may give its reference column.
REFERENCE_NAMES = (
    "solution",
    "solutions",
    "answer",
    "answers",
    "reference",
    "references",
    "ground_truth",
    "ground_truths",
    "target",
    "targets",
    "gold",
)
# Samples per sandbox run: one run costs a process; its stdout carries the scores.
CHUNK = 128
LIMITS = SandboxLimits(
    wall_seconds=120.0, cpu_seconds=120.0, memory_mb=2048, output_bytes=2_000_000, processes=64
)
SOURCE_CHARS = 1_000_000

WRAPPER = """
import json
import sys

SOURCE = {source!r}
NAME = {name!r}
SHAPE = {shape!r}
REFERENCE_ARGS = {reference_args!r}
DATA_SOURCE = {data_source!r}
NONCE = {nonce!r}


def number(value):
    if isinstance(value, dict):
        value = value.get("score")
    if value is None:
        return None
    if isinstance(value, (str, bytes, list, tuple)):
        raise TypeError("returned " + type(value).__name__ + ", not a number")
    return float(value)  # bool, int, float, numpy scalars, tensors of one value


def one(fn, completion, reference, prompt):
    try:
        if SHAPE == "verl":
            return number(fn(DATA_SOURCE, completion, reference, {{"prompt": prompt}}))
        return number(fn(completion, reference))
    except Exception as exc:
        return {{"error": type(exc).__name__ + ": " + str(exc)[:200]}}


def batch(fn, completions, references, prompts):
    kwargs = {{name: list(references) for name in REFERENCE_ARGS}}
    try:
        values = fn(completions=list(completions), prompts=list(prompts), **kwargs)
        values = [number(v) for v in values]
        if len(values) != len(completions):
            raise ValueError("returned %d scores for %d completions" % (len(values), len(completions)))
        return values
    except Exception as exc:
        return [{{"error": type(exc).__name__ + ": " + str(exc)[:200]}}] * len(completions)


def main():
    data = json.loads(sys.stdin.read())
    namespace = {{"__name__": "reward_module", "__file__": {filename!r}}}
    exec(compile(SOURCE, {filename!r}, "exec"), namespace)
    fn = namespace[NAME]
    c, r, p = data["completions"], data["references"], data["prompts"]
    if SHAPE == "trl":
        out = batch(fn, c, r, p)
    else:
        out = [one(fn, *row) for row in zip(c, r, p)]
    sys.stdout.flush()
    sys.stdout.write("\\n" + NONCE + " " + json.dumps(out) + "\\n")


main()
"""


@dataclass(frozen=True)
class FoundFunction:
    """The reward function a file holds: its name, its shape, and for TRL-style ones the
    keyword names the references are passed under."""

    name: str
    shape: Shape
    reference_args: tuple[str, ...] = ()


def _params(fn: ast.FunctionDef) -> tuple[list[str], int, bool]:
    """(positional parameter names, how many have no default, takes **kwargs)."""
    args = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    required = len(args) - len(fn.args.defaults)
    return args, required, fn.args.kwarg is not None


def _shape(fn: ast.FunctionDef) -> FoundFunction | None:
    args, required, kwargs = _params(fn)
    keyword = [a.arg for a in fn.args.kwonlyargs]
    if fn.name == "compute_score" and len(args) >= 3:
        return FoundFunction(fn.name, "verl")
    if "completions" in args + keyword:
        named = tuple(n for n in REFERENCE_NAMES if n in args + keyword)
        return FoundFunction(fn.name, "trl", named or (REFERENCE_NAMES if kwargs else ()))
    if len(args) >= 2 and required <= 2:
        return FoundFunction(fn.name, "plain")
    return None


def find_function(source: str, path: str, wanted: str | None = None) -> FoundFunction:
    """The reward function in `source` (see the module docstring); `InputError` when there
    is none, or `wanted` is not one."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        raise InputError(f"{path}:{exc.lineno}: not Python: {exc.msg}") from None
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    shapes = [s for s in map(_shape, defs) if s is not None]
    if wanted is not None:
        found = next((s for s in shapes if s.name == wanted), None)
        if found is None:
            names = ", ".join(s.name for s in shapes) or "none"
            raise InputError(
                f"{path}: no reward function named {wanted!r} (reward functions found: {names})"
            )
        return found
    for shape in ("verl", "trl", "plain"):
        of_shape = [s for s in shapes if s.shape == shape]
        if of_shape:
            return next((s for s in of_shape if s.name == "reward"), of_shape[0])
    raise InputError(
        f"{path}: no reward function found; expected a TRL-style `reward(completions, "
        "**kwargs)`, a veRL `compute_score(data_source, solution_str, ground_truth, "
        "extra_info=None)` or a plain `f(completion, reference)` at the top level"
    )


def read_source(path: Path) -> str:
    """The file's text; `InputError` when it cannot be read or is too large."""
    try:
        if path.stat().st_size > SOURCE_CHARS:
            raise InputError(f"{path}: larger than {SOURCE_CHARS} bytes; not a reward function")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None


class FileRewardTool(RewardTool):
    """A reward function from a file, scored in the sandbox (see the module docstring)."""

    def __init__(self, path: Path, function: str | None = None, data_source: str = "audit") -> None:
        self.path = path
        self.source = read_source(path)
        self.found = find_function(self.source, str(path), function)
        self.data_source = data_source
        self.spec = ToolSpec(
            name=f"{path.name}:{self.found.name}",
            kind="code",
            description=f"{self.found.shape} reward function {self.found.name} in {path}",
            provenance="user",
        )
        self._sandbox: Sandbox | None = None

    def _program(self, nonce: str) -> str:
        return WRAPPER.format(
            source=self.source,
            name=self.found.name,
            shape=self.found.shape,
            reference_args=self.found.reference_args,
            data_source=self.data_source,
            nonce=nonce,
            filename=str(self.path),
        )

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        if self._sandbox is None:
            self._sandbox = Sandbox(1, LIMITS)
        out: list[Reward] = []
        for start in range(0, len(samples), CHUNK):
            out += self._chunk(samples[start : start + CHUNK])
        return out

    def _chunk(self, chunk: Sequence[Sample]) -> list[Reward]:
        nonce = secrets.token_hex(16)
        batch = {
            "completions": [s.completion if isinstance(s.completion, str) else "" for s in chunk],
            "references": [s.reference for s in chunk],
            "prompts": [s.prompt_text() for s in chunk],
        }
        assert self._sandbox is not None
        result = self._sandbox.run(self._program(nonce), stdin=json.dumps(batch), limits=LIMITS)
        values = _values(result.stdout, nonce, len(chunk))
        if values is None:
            status: Any = "timeout" if result.status == "timeout" else "error"
            why = (result.stderr.strip().splitlines() or [result.reason or result.status])[-1]
            reason = f"the reward function's run ended with {result.status}: {why[:200]}"
            return [make_reward(self.spec, 0.0, status, reason) for _ in chunk]
        return [_reward(self.spec, v) for v in values]

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


def _values(stdout: str, nonce: str, size: int) -> list[Any] | None:
    """The scores the run printed after its nonce, or None when there are none."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(nonce + " "):
            try:
                values = json.loads(line[len(nonce) + 1 :])
            except ValueError:
                return None
            return values if isinstance(values, list) and len(values) == size else None
    return None


def _reward(spec: ToolSpec, value: Any) -> Reward:
    if isinstance(value, dict):
        return make_reward(spec, 0.0, "error", str(value.get("error", "bad value"))[:200])
    if value is None:
        return make_reward(spec, None, "not_applicable", "the function returned None")
    if not isinstance(value, int | float) or not math.isfinite(value):
        return make_reward(spec, 0.0, "error", f"the function returned {value!r}")
    return make_reward(spec, float(value))
