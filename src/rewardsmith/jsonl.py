"""Reading samples from JSONL and writing scored lines (DESIGN.md, "JSONL in/out").

Input lines: `{"id", "prompt", "completion", "reference", "task", "meta"}`; only
`completion` is required. A reference that is not a string (a number, a JSON object such as
a reasoning-gym entry) is kept as its JSON text. Errors name the line number.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from rewardsmith.errors import InputError
from rewardsmith.types import Reward, Sample

# How many bad lines one error message lists before it says "and N more".
MAX_REPORTED_ERRORS = 20


def sample_from_dict(data: Mapping[str, Any]) -> Sample:
    """Build a `Sample` from one input record; raise `InputError` saying what is wrong."""
    if not isinstance(data, Mapping):
        raise InputError(f"expected a JSON object, got {type(data).__name__}")
    if "completion" not in data:
        raise InputError("missing required field 'completion'")
    completion = data["completion"]
    if not isinstance(completion, str):
        raise InputError(f"'completion' must be a string, got {type(completion).__name__}")
    prompt = data.get("prompt")
    is_chat = isinstance(prompt, list) and all(isinstance(m, Mapping) for m in prompt)
    if prompt is not None and not isinstance(prompt, str) and not is_chat:
        raise InputError("'prompt' must be a string or a list of chat messages")
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        reference = json.dumps(reference, ensure_ascii=False)
    task = data.get("task")
    if task is not None and not isinstance(task, str):
        raise InputError(f"'task' must be a string, got {type(task).__name__}")
    meta = data.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise InputError(f"'meta' must be an object, got {type(meta).__name__}")
    raw_id = data.get("id")
    return Sample(
        completion=completion,
        prompt=prompt,
        reference=reference,
        task=task,
        meta=dict(meta),
        id=None if raw_id is None else str(raw_id),
    )


def as_samples(items: Iterable[Sample | Mapping[str, Any]]) -> list[Sample]:
    """Accept `Sample`s or dicts in the JSONL format."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Sample):
            out.append(item)
            continue
        try:
            out.append(sample_from_dict(item))
        except InputError as exc:
            raise InputError(f"sample {i}: {exc}") from None
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read and validate every line of a JSONL file before anything is scored.

    Blank lines are skipped. Any bad line raises `InputError` listing each bad line number,
    so nothing is scored (and no output written) from a file that would lose lines.
    """
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                sample_from_dict(data)
            except json.JSONDecodeError as exc:
                errors.append(f"line {line_no}: not valid JSON ({exc.msg} at column {exc.colno})")
                continue
            except InputError as exc:
                errors.append(f"line {line_no}: {exc}")
                continue
            records.append(data)
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        tail = f"\n  ... and {more} more" if more else ""
        raise InputError(
            f"{path}: {len(errors)} bad line(s), nothing was scored:\n  "
            + "\n  ".join(shown)
            + tail
        )
    return records


def scored_record(record: Mapping[str, Any], reward: Reward) -> dict[str, Any]:
    """The output line: the input record plus `reward, status, tool, components, reason`."""
    return {**record, **reward.to_dict()}


def write_line(handle: IO[str], record: Mapping[str, Any]) -> None:
    handle.write(json.dumps(record, ensure_ascii=False) + "\n")


@contextmanager
def atomic_output(path: Path) -> Iterator[IO[str]]:
    """Write to a temporary file beside `path` and rename it into place at the end, so an
    interrupted run never leaves a half-written output file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
