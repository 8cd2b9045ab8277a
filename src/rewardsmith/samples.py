"""The one sample reader and writer: a JSON object <-> a `Sample`, the same for every
reader (`rewardsmith score`'s files, the server's request bodies, the client, rollout files,
the Python API), so an object is accepted or refused, with the same message, everywhere.

The rules are `sample_from_dict`'s docstring and docs/architecture.md, Design, "JSONL in/out".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rewardsmith.errors import SampleError
from rewardsmith.types import Sample


def json_type(value: Any) -> str:
    """What a JSON value is, in words ("an object", "an array", ...)."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return "a string" if isinstance(value, str) else "null"


def sample_from_dict(data: Any) -> Sample:
    """The one sample reader: a `Sample` from one JSON object, for the CLI's files, the
    server's request bodies, the client, rollout files and the Python API alike.

    The rules (docs/architecture.md, Design, "JSONL in/out"): `completion` is required and a
    string; `prompt` is absent/null, a string, or a list of chat-message objects (a message's
    `role`, when given, a string; messages are kept as given); `reference` is any JSON (not a
    string: kept as its JSON text); `task` is absent/null or a string; `meta` is absent/null
    or an object; `id` is absent/null, a string or an integer (kept as its text; a float,
    boolean, array or object is refused); `group` is any JSON, kept in `meta` as text. Other
    fields are ignored (the CLI keeps them in its output line as read). A value that breaks a
    rule raises `SampleError` naming the field.
    """
    if not isinstance(data, Mapping):
        raise SampleError(None, f"expected a JSON object, got {json_type(data)}")
    if "completion" not in data:
        raise SampleError("completion", "missing required field 'completion'")
    completion = data["completion"]
    if not isinstance(completion, str):
        raise SampleError("completion", f"'completion' must be a string, {_got(completion)}")
    prompt = data.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        _check_messages(prompt)
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        reference = json.dumps(reference, ensure_ascii=False)
    task = data.get("task")
    if task is not None and not isinstance(task, str):
        raise SampleError("task", f"'task' must be a string, {_got(task)}")
    meta = data.get("meta")
    if meta is None:
        meta = {}
    elif not isinstance(meta, Mapping):
        raise SampleError("meta", f"'meta' must be an object, {_got(meta)}")
    group = data.get("group")
    if group is not None:  # who votes together (`majority_vote`): kept with the sample
        text = group if isinstance(group, str) else json.dumps(group, sort_keys=True)
        meta = {**meta, "group": text}
    raw_id = data.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int)):
        raise SampleError("id", f"'id' must be a string or an integer, {_got(raw_id)}")
    return Sample(
        completion=completion,
        prompt=prompt,
        reference=reference,
        task=task,
        meta=dict(meta),
        id=None if raw_id is None else str(raw_id),
    )


def _check_messages(prompt: Any) -> None:
    """A prompt that is not a string must be a list of chat-message objects."""
    why = '\'prompt\' must be a string or a list of chat messages ({"role", "content"} objects)'
    if not isinstance(prompt, list):
        raise SampleError("prompt", f"{why}, {_got(prompt)}")
    for i, message in enumerate(prompt):
        if not isinstance(message, Mapping):
            raise SampleError("prompt", f"{why}; message {i} is {json_type(message)}")
        role = message.get("role")
        if role is not None and not isinstance(role, str):
            raise SampleError("prompt", f"message {i} of 'prompt': 'role' must be a string")


def _got(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"got the number {value!r}"
    return f"got {json_type(value)}"


def sample_to_dict(sample: Sample) -> dict[str, Any]:
    """A `Sample` as the JSON object `sample_from_dict` reads back to an equal sample (what
    the client sends and the server's workers pass on); empty fields are left out."""
    data: dict[str, Any] = {"completion": sample.completion}
    if sample.prompt is not None:
        prompt = sample.prompt
        data["prompt"] = prompt if isinstance(prompt, str) else [dict(m) for m in prompt]
    for key in ("reference", "task", "id"):
        value = getattr(sample, key)
        if value is not None:
            data[key] = value
    if sample.meta:
        data["meta"] = dict(sample.meta)
    return data


def as_samples(items: Iterable[Sample | Mapping[str, Any]]) -> list[Sample]:
    """`Sample`s as they are, dicts read by `sample_from_dict`; a bad one raises
    `SampleError` saying which (`sample N: ...`, N from 0) and naming the field."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Sample):
            out.append(item)
            continue
        try:
            out.append(sample_from_dict(item))
        except SampleError as exc:
            raise SampleError(exc.field, f"sample {i}: {exc}") from None
    return out
