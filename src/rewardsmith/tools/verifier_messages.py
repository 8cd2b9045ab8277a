"""The messages between a `VerifierPool` and its workers, each named, with one writer and one
reader beside each other.

Frames are JSON lists (`rewardsmith.sandbox.process` frames them) whose first element names
the message:

- to a worker: `["job", reference, completions]`, a group (or chunk of one) to check;
- from a worker: `["ready", pid]` once its tool is built and warm; then per job the events
  of `AnswerVerifier.check_group` as they happen: `["reference", problem]` ("" when the
  reference is usable, else why not, and nothing follows), `["item", index, reward]` per
  completion (`reward` as `Reward.to_dict` writes it), or `["failed", reason]` when the tool
  itself fails (a setup error, not a bad completion).

A frame of another shape is a `MessageError`: the pool treats it as a broken worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rewardsmith.types import Reward


class MessageError(ValueError):
    """A frame that is not one of the messages below."""


@dataclass(frozen=True)
class Job:
    """A group, or a chunk of one, for a worker to check."""

    reference: str | None
    completions: Sequence[str]

    def frame(self) -> list[Any]:
        return ["job", self.reference, list(self.completions)]


@dataclass(frozen=True)
class Ready:
    """The worker's tool is built and warm."""

    pid: int

    def frame(self) -> list[Any]:
        return ["ready", self.pid]


@dataclass(frozen=True)
class ReferenceChecked:
    """The job's reference was parsed: `problem` is "" when usable, else why not."""

    problem: str

    def frame(self) -> list[Any]:
        return ["reference", self.problem]


@dataclass(frozen=True)
class ItemChecked:
    """The job's completion at `index` was decided."""

    index: int
    reward: Reward

    def frame(self) -> list[Any]:
        return ["item", self.index, self.reward.to_dict()]


@dataclass(frozen=True)
class ToolFailed:
    """The tool itself failed on the job (a setup error, not a bad completion)."""

    reason: str

    def frame(self) -> list[Any]:
        return ["failed", self.reason]


Event = Ready | ReferenceChecked | ItemChecked | ToolFailed


def read_job(frame: Any) -> Job:
    """The job a worker received; `MessageError` for anything else."""
    if (
        isinstance(frame, list)
        and len(frame) == 3
        and frame[0] == "job"
        and (frame[1] is None or isinstance(frame[1], str))
        and isinstance(frame[2], list)
        and all(isinstance(c, str) for c in frame[2])
    ):
        return Job(frame[1], frame[2])
    raise MessageError(f"not a job: {str(frame)[:80]}")


def event_from_check(event: tuple[Any, ...]) -> Event:
    """A `check_group` event (`("reference", problem)`, `("item", index, reward)`) as its
    message."""
    if event[0] == "reference":
        return ReferenceChecked(str(event[1]))
    if event[0] == "item":
        return ItemChecked(int(event[1]), event[2])
    raise MessageError(f"not a check_group event: {str(event)[:80]}")


def read_event(frame: Any, tool_ref: str) -> Event:
    """The event a worker sent, its reward stamped with `tool_ref` (the pool's own tool,
    whatever the worker wrote); `MessageError` for a frame of any other shape."""
    kind = frame[0] if isinstance(frame, list) and frame else None
    size = len(frame) if isinstance(frame, list) else 0
    if kind == "ready" and size == 2 and _is_int(frame[1]):
        return Ready(frame[1])
    if kind == "reference" and size == 2 and isinstance(frame[1], str):
        return ReferenceChecked(frame[1])
    if kind == "item" and size == 3 and _is_int(frame[1]) and isinstance(frame[2], dict):
        try:
            reward = Reward.from_dict({**frame[2], "tool": tool_ref})
        except (ValueError, TypeError) as exc:
            raise MessageError(f"bad reward: {exc}") from exc
        return ItemChecked(frame[1], reward)
    if kind == "failed" and size == 2:
        return ToolFailed(str(frame[1]))
    raise MessageError(f"unexpected message {str(frame)[:80]}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
