"""The examples a synthesized tool is built and judged on, and how they are split.

An examples file is JSONL, one example per line: `{"prompt": str, "reference": str}` plus
optionally `"completion": str` and `"label": 0 or 1` (is that completion right). Lines with a
labeled completion show the answer style and what the task accepts; lines without show more
references. A completion without a label only shows a style.

`split_examples` holds out a third of the lines, stratified by what each line teaches (a
plain reference; a right or wrong completion whose answer equals the reference, differs only
in form, or differs in content), so the gate judges a tool on lines it was never fit on while
every kind of evidence reaches the fit first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.config import MAX_REFERENCE_CHARS
from rewardsmith.errors import InputError
from rewardsmith.jsonl import read_jsonl
from rewardsmith.synth.primitives import REFERENCE_EXTRACTORS, shared_evaluator

# Fewer lines than this cannot be split into a fit part and a held-out part.
MIN_EXAMPLES = 4
# Every HOLD_OUT_EVERY-th line of each kind (the 2nd, 5th, 8th...) is held out: a third.
HOLD_OUT_EVERY = 3


@dataclass(frozen=True)
class Example:
    """One line of an examples file (`line` is its 1-based line number, 0 when built in code)."""

    prompt: str
    reference: str
    completion: str | None = None
    label: int | None = None
    line: int = 0

    @property
    def labeled(self) -> bool:
        return self.completion is not None and self.label is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"prompt": self.prompt, "reference": self.reference}
        if self.completion is not None:
            out["completion"] = self.completion
        if self.label is not None:
            out["label"] = self.label
        return out


def answer_of(reference: str) -> str:
    """The bare answer a reference holds: the text after its last `####` (GSM8K's worked
    solutions), else the content of its last `\\boxed{}`, else the reference stripped."""
    text = reference.strip()
    for name in REFERENCE_EXTRACTORS:
        found = shared_evaluator().apply(name, text)
        if isinstance(found, str) and found:
            return found
    return text


def parse_example(data: Any, where: str) -> Example:
    """One example from a JSON value; `InputError` naming `where` and the field otherwise."""
    if not isinstance(data, Mapping):
        raise InputError(f"{where}: expected a JSON object with prompt and reference")
    prompt, reference = data.get("prompt"), data.get("reference")
    if not isinstance(prompt, str):
        raise InputError(f"{where}: 'prompt' must be a string, got {_kind(prompt)}")
    if not isinstance(reference, str) or not reference.strip():
        raise InputError(f"{where}: 'reference' must be a non-empty string, got {_kind(reference)}")
    if len(reference) > MAX_REFERENCE_CHARS:
        raise InputError(f"{where}: 'reference' is longer than {MAX_REFERENCE_CHARS} characters")
    completion = data.get("completion")
    if completion is not None and not isinstance(completion, str):
        raise InputError(f"{where}: 'completion' must be a string, got {_kind(completion)}")
    label = data.get("label")
    if label is not None:
        if isinstance(label, bool) or label not in (0, 1):
            raise InputError(f"{where}: 'label' must be 0 or 1, got {label!r}")
        if completion is None:
            raise InputError(f"{where}: 'label' without a 'completion' to label")
        label = int(label)
    line = int(where.rpartition(":")[2]) if where.rpartition(":")[2].isdigit() else 0
    return Example(prompt, reference, completion, label, line)


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def load_examples(path: str | Path) -> list[Example]:
    """Read and check an examples file; `InputError` names the first bad line."""
    path = Path(path)
    try:
        rows = read_jsonl(path)
    except OSError as exc:
        raise InputError(f"cannot read examples file {path}: {exc}") from None
    examples = [parse_example(row, f"{path}:{i}") for i, row in enumerate(rows, start=1)]
    check_examples(examples, str(path))
    return examples


def check_examples(examples: Sequence[Example], source: str = "examples") -> None:
    """Enough lines, and at least two different answers (else nothing tells a wrong one)."""
    if len(examples) < MIN_EXAMPLES:
        raise InputError(
            f"{source}: {len(examples)} example(s); synthesis needs at least {MIN_EXAMPLES} "
            "(some are held out to judge the tool)"
        )
    if len({answer_of(e.reference) for e in examples}) < 2:
        raise InputError(f"{source}: every example has the same answer; give varied examples")


def _stable_key(example: Example) -> str:
    text = f"{example.prompt}\x00{example.reference}\x00{example.completion}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


def split_examples(
    examples: Sequence[Example], kind_of: Any = None
) -> tuple[list[Example], list[Example]]:
    """(fit, held_out): within each kind of line (`kind_of(example)`, default: labeled or
    not, and the label), lines in a stable pseudo-random order, every `HOLD_OUT_EVERY`-th
    from the second held out. A kind with one line keeps it in the fit."""
    kind_of = kind_of or (lambda e: (e.labeled, e.label))
    groups: dict[Any, list[Example]] = {}
    for e in examples:
        groups.setdefault(kind_of(e), []).append(e)
    fit: list[Example] = []
    held: list[Example] = []
    for _, group in sorted(groups.items(), key=lambda kv: repr(kv[0])):
        for i, e in enumerate(sorted(group, key=_stable_key)):
            (held if i % HOLD_OUT_EVERY == 1 else fit).append(e)
    return fit, held


def prompts_of(examples: Iterable[Example], limit: int) -> tuple[str, ...]:
    """Up to `limit` distinct, non-empty prompts, in order (a new tool's router exemplars)."""
    out: list[str] = []
    for e in examples:
        p = e.prompt.strip()
        if p and p not in out:
            out.append(p)
        if len(out) >= limit:
            break
    return tuple(out)
