"""What a scoring worker does with a request body: validate it, read its samples, score
them, write the response JSON.

The event loop hands a worker the body's bytes as they came; everything per sample (pydantic
validation, building `Sample`s, encoding rewards) runs in the workers, in parallel, and the
event loop only moves bytes. A body that does not validate comes back as a `RequestProblem`
that the server turns into its 4xx (422 naming the field, 413 for too many samples). The same
functions read a body in the server itself when a request falls back to per-sample scoring.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from rewardsmith.errors import RewardsmithError
from rewardsmith.integrations.openrlhf import label_reference, response_text
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.rollout_log import rollout_record
from rewardsmith.server.schemas import (
    BatchTooLarge,
    OpenRLHFRequest,
    ScoreRequest,
    openrlhf_json,
    request_errors,
)
from rewardsmith.types import Reward, Sample

Kind = Literal["score", "openrlhf"]
#: (tool, status) -> count, for the metrics.
Counts = dict[tuple[str, str], int]
Location = tuple[str | int, ...]
TaskMap = tuple[tuple[str, str], ...]


class FieldError(RewardsmithError, ValueError):
    """A request field names something the server cannot use (an unknown tool): a 422."""

    def __init__(self, location: Location, message: str) -> None:
        self.location = location
        super().__init__(message)


@dataclass(frozen=True)
class RequestProblem:
    """Why a body was refused: `invalid` (422; `errors` as pydantic lists them, under
    `body`) or `too_large` (413)."""

    kind: Literal["invalid", "too_large"]
    errors: list[dict[str, Any]]
    message: str = ""


@dataclass(frozen=True)
class Parsed:
    """A valid body: its samples and the tool choice it makes (None, None: the server's)."""

    samples: list[Sample]
    tool: str | None
    task_map: TaskMap | None


def check_tools(
    library: Library,
    tool: str | None,
    task_map: Mapping[str, str] | None,
    tool_loc: Location = ("body", "tool"),
    map_loc: Location = ("body", "task_map"),
) -> None:
    """Raise `FieldError` naming the field when a tool is unknown or retired (any version
    of it: a retired tool is never served; a superseded version may be pinned)."""
    named: list[tuple[Location, str]] = [(tool_loc, tool)] if tool else []
    named += [((*map_loc, task), ref) for task, ref in (task_map or {}).items()]
    for loc, ref in named:
        try:
            name, version = parse_tool_ref(ref)
            record = library.record(name, version)
        except RewardsmithError as exc:
            raise FieldError(loc, str(exc)) from None
        if record.retired:
            which = ref if version is not None else name
            raise FieldError(loc, f"tool {which!r} is retired and is not served")


def parse(
    kind: Kind,
    body: bytes,
    library: Library,
    max_batch: int,
    task: str | None = None,
    url_tool: str | None = None,
) -> Parsed | RequestProblem:
    """Validate a body (its pydantic model, the batch limit, the tools it names) and read
    its samples; raises `FieldError` for a field the model accepts but the server cannot use."""
    model: type[BaseModel] = ScoreRequest if kind == "score" else OpenRLHFRequest
    try:
        parsed = model.model_validate_json(body, context={"max_batch": max_batch})
    except BatchTooLarge as exc:
        return RequestProblem("too_large", [], str(exc))
    except ValidationError as exc:
        return RequestProblem("invalid", request_errors(exc))
    if isinstance(parsed, ScoreRequest):
        check_tools(library, parsed.tool, parsed.task_map)
        samples = list(parsed.samples)
        if parsed.tool is None and parsed.task_map is None:
            return Parsed(samples, None, None)
        return Parsed(samples, parsed.tool, tuple(sorted((parsed.task_map or {}).items())))
    assert isinstance(parsed, OpenRLHFRequest)
    n = len(parsed.query)
    for name, values in (("prompts", parsed.prompts), ("labels", parsed.labels)):
        if values is not None and len(values) != n:
            raise FieldError(("body", name), f"got {len(values)} {name} for {n} queries")
    samples = openrlhf_samples(parsed, task)
    return Parsed(samples, url_tool, () if url_tool else None)


def openrlhf_samples(request: OpenRLHFRequest, task: str | None) -> list[Sample]:
    """OpenRLHF's queries as samples, read as the `.py` adapter reads them."""
    n = len(request.query)
    prompts = request.prompts or [None] * n
    labels = request.labels if request.labels is not None else [None] * n
    return [
        Sample(
            completion=response_text(query, prompt),
            prompt=prompt,
            reference=label_reference(label),
            task=task,
        )
        for query, prompt, label in zip(request.query, prompts, labels, strict=True)
    ]


def render(kind: Kind, rewards: Sequence[Reward]) -> bytes:
    """The response body for `rewards`."""
    if kind == "score":
        body: dict[str, Any] = {"rewards": [r.to_dict("api") for r in rewards]}
    else:
        body = openrlhf_json(rewards)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def request_rows(kind: Kind, samples: Sequence[Sample], rewards: Sequence[Reward]) -> list[Any]:
    """The request log's lines for one scored request (`rewardsmith.rollout_log`)."""
    route = "/v1/score" if kind == "score" else "/v1/openrlhf"
    return [
        rollout_record(s, r, source="server", route=route)
        for s, r in zip(samples, rewards, strict=True)
    ]


def counts(rewards: Sequence[Reward]) -> Counts:
    out: Counts = {}
    for reward in rewards:
        key = (reward.tool or "-", reward.status)
        out[key] = out.get(key, 0) + 1
    return out
