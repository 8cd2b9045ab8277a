"""The messages between the server and its scoring workers (`server.workers`), each a named
type: the jobs a worker runs, and the `Reply` it gives.

They cross a pipe pickled (the worker pool is the server's own second mechanism, beside
`sandbox/process.py`'s JSON frames: docs/architecture.md says why); everything in them is
the server's own data (request bytes, samples and rewards in their JSON forms), never code
a completion wrote.

- `RequestJob`: a request body to validate, score and answer (`payloads.parse` / `render`);
  its reply is the response bytes and the reward tally, or the `RequestProblem` to refuse;
- `ScoreJob`: samples to score with a tool or task map (None: the server's choice), in
  `samples.sample_to_dict` form; its reply is their rewards in `Reward.to_dict` form;
- `RouteJob`: the router's decisions for samples; its reply is `Decision.to_dict` forms;
- `WarmJob`: build the default scorer and start its tools before the first request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from rewardsmith.samples import sample_to_dict
from rewardsmith.server.payloads import Kind
from rewardsmith.types import Sample

TaskMap = tuple[tuple[str, str], ...]
ReplyKind = Literal["ok", "config", "field", "error", "timeout", "died", "busy"]


class RequestJob(NamedTuple):
    """A request body of `body_kind` ("score", "openrlhf"), with the URL's task and tool."""

    body_kind: Kind
    body: bytes
    task: str | None
    url_tool: str | None


class ScoreJob(NamedTuple):
    """Samples (JSON form) for a tool or task map; both None: the server's defaults."""

    items: list[dict[str, Any]]
    tool: str | None
    task_map: TaskMap | None


class RouteJob(NamedTuple):
    """Samples for the router to decide on."""

    samples: list[Sample]


class WarmJob(NamedTuple):
    """Build the default scorer and start its tools."""


Job = RequestJob | ScoreJob | RouteJob | WarmJob


@dataclass(frozen=True)
class Reply:
    """A worker's answer, or why there is none: `timeout` (killed at the deadline), `died`
    (the process crashed), `busy` (no worker was free before the deadline)."""

    kind: ReplyKind
    value: Any = None


def score_job(samples: Sequence[Sample], tool: str | None, task_map: TaskMap | None) -> ScoreJob:
    """The job that scores `samples` (None tool and task map: the server's defaults; the
    fallback path's, one sample a job)."""
    return ScoreJob([sample_to_dict(s) for s in samples], tool, task_map)
