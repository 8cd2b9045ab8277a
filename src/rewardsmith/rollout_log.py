"""The rollout file: one JSON line per scored completion, the same wherever it is written.

Writers: `rewardsmith score -o` (every input line plus its reward), `grpo train
--log-completions-every N` (`OUT/completions.jsonl`), the TRL adapter's
`reward_funcs(..., rollout_log=PATH)`, the server's `serve --request-log PATH`, and the veRL
and OpenRLHF adapters when `$REWARDSMITH_ROLLOUT_LOG` names a file. Readers:
`rewardsmith rescore`, `compare` and `profile` (docs/rollouts.md has the format with examples).

A line is a sample (the input fields of docs/architecture.md's JSONL format) and its reward:

    {"id", "prompt", "completion", "reference", "task", "meta",     <- the sample
     "reward", "status", "tool", "components", "reason",            <- the reward it got
     "group", "step", "source"}                                     <- where it came from

Only `completion` is required. `group` names the completions sampled for one prompt (GRPO's
group: `grpo` writes `step-S/prompt-P`); without it, lines are grouped by `step` (when
present) and prompt. `source` says which writer wrote the line. A GRPO line also keeps
`rewards` (each reward tool's part of the weighted total), `correct` and `parseable`.

`read_rollouts` also reads what older rewardsmith versions wrote (GRPO lines without
`status`/`tool`: the reward is `ok` when it is a number, the tool is the `rewards` keys
joined by `+`) and veRL's `trainer.rollout_data_dir` dumps (`input`, `output`, `gts`,
`score`, `step`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError
from rewardsmith.files import open_append
from rewardsmith.jsonl import iter_jsonl
from rewardsmith.samples import sample_from_dict
from rewardsmith.types import Reward, Sample

#: How many bad lines one error message lists.
MAX_REPORTED_ERRORS = 20
#: The reward fields of a line (`Reward.to_dict`).
REWARD_FIELDS = ("reward", "status", "tool", "components", "reason")
#: A rollout file the veRL and OpenRLHF adapters append to (they have no other hook).
ENV = "REWARDSMITH_ROLLOUT_LOG"
#: veRL's rollout dump fields, read as the sample fields they hold.
_VERL_DUMP = {"output": "completion", "input": "prompt", "gts": "reference"}


@dataclass(frozen=True)
class Rollout:
    """One line of a rollout file: its number, the line as read, the sample, the reward it
    was stored with (None: the line has none) and the group it belongs to."""

    line: int
    record: Mapping[str, Any]
    sample: Sample
    stored: Reward | None
    group: str


def rollout_record(sample: Sample, reward: Reward, **extra: Any) -> dict[str, Any]:
    """The line for one scored sample: its fields, the reward's, then `extra` (`group`,
    `step`, `source`...). Empty `id`/`meta` are left out."""
    record: dict[str, Any] = {}
    if sample.id is not None:
        record["id"] = sample.id
    record.update(
        prompt=sample.prompt if isinstance(sample.prompt, str | None) else list(sample.prompt),
        completion=sample.completion,
        reference=sample.reference,
        task=sample.task,
    )
    if sample.meta:
        record["meta"] = dict(sample.meta)
    record.update(reward.to_dict())
    record.update(extra)
    return record


class RolloutLog:
    """Appends rollout lines to a file; each `write` is one `os.write` on an `O_APPEND`
    descriptor, so the lines of concurrent writers (server workers, trainer processes) never
    interleave. The file's folder is created; a path that cannot be opened raises
    `InputError` at construction, before any scoring."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd = -1
        try:  # never through a planted symlink, never into a FIFO or device
            self._fd = open_append(self.path)
        except InputError as exc:
            raise InputError(f"cannot write the rollout log: {exc}") from None

    def write(self, records: Iterable[Mapping[str, Any]]) -> None:
        data = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        view = memoryview(data.encode("utf-8"))
        while view:  # a regular file takes it in one call; the loop covers a short write
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RolloutLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # a descriptor does not cross processes; the receiver opens the file again
        return {"path": str(self.path)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"])  # type: ignore[misc]


_ENV_LOGS: dict[tuple[int, str], RolloutLog] = {}


def env_log() -> RolloutLog | None:
    """The rollout log named by `$REWARDSMITH_ROLLOUT_LOG` (None when unset), one per
    process and path: trainer workers are forked, and a descriptor is not shared across."""
    path = os.environ.get(ENV, "").strip()
    if not path:
        return None
    key = (os.getpid(), path)
    log = _ENV_LOGS.get(key)
    if log is None:
        log = _ENV_LOGS[key] = RolloutLog(path)
    return log


def read_rollouts(path: str | Path) -> list[Rollout]:
    """Every line of a rollout file, validated before anything uses it: a line that is not
    a sample (no `completion`, a bad field) raises `InputError` listing each bad line."""
    path = Path(path)
    out: list[Rollout] = []
    errors: list[str] = []
    for line_no, value in iter_jsonl(path):
        try:
            record = _normalized(value)
            sample = sample_from_dict(record)
            stored = stored_reward(record)
        except InputError as exc:
            errors.append(f"line {line_no}: {exc}")
            continue
        out.append(Rollout(line_no, record, sample, stored, group_key(record, line_no)))
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = f"\n  ... and {len(errors) - len(shown)} more" if len(errors) > len(shown) else ""
        raise InputError(
            f"{path}: {len(errors)} line(s) are not rollouts (one JSON object with at least "
            "`completion` per line, see docs/rollouts.md):\n  " + "\n  ".join(shown) + more
        )
    return out


def _normalized(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected a JSON object, got {type(value).__name__}")
    if "completion" in value or "output" not in value:
        return value
    record: dict[str, Any] = {
        _VERL_DUMP.get(str(k), str(k)): v for k, v in value.items() if k != "score"
    }
    if isinstance(value.get("score"), int | float):
        record["reward"] = float(value["score"])
    record.setdefault("source", "verl")
    return record


def stored_reward(record: Mapping[str, Any]) -> Reward | None:
    """The reward a line was stored with (`Reward.from_dict`), None when it has none. Lines
    of older writers are read too: no `status` (`ok` for a number, else `not_applicable`),
    GRPO's per-tool `rewards` for `components` and (joined by `+`) for `tool`; components
    and a `reason` that are not numbers / text are left out."""
    if "reward" not in record:
        return None
    score = record["reward"]
    rewards = record.get("rewards")
    parts = record.get("components")
    if not isinstance(parts, Mapping):
        parts = rewards if isinstance(rewards, Mapping) else {}
    tool = record.get("tool")
    if not isinstance(tool, str) or not tool:
        tool = "+".join(rewards) if isinstance(rewards, Mapping) else ""
    reason = record.get("reason")
    line = {
        "reward": score,
        "status": record.get("status") or ("ok" if score is not None else "not_applicable"),
        "tool": tool,
        "components": {
            str(k): v
            for k, v in parts.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
        },
        "reason": reason if isinstance(reason, str) else "",
    }
    try:
        return Reward.from_dict(line)
    except ValueError as exc:  # a score that is not a finite number, an unknown status
        raise InputError(str(exc)) from None


def group_key(record: Mapping[str, Any], line: int) -> str:
    """The group a line belongs to: its `group`; else its `step` and prompt; else its
    prompt; a line without a prompt is a group of its own."""
    if record.get("group") is not None:
        return str(record["group"])
    prompt = record.get("prompt")
    if prompt is None or prompt == "":
        return f"line {line}"
    text = prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True)
    step = record.get("step")
    return text if step is None else f"step {step}: {text}"


__all__ = [
    "ENV",
    "REWARD_FIELDS",
    "env_log",
    "Rollout",
    "RolloutLog",
    "group_key",
    "read_rollouts",
    "rollout_record",
    "stored_reward",
]
