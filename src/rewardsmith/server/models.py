"""Request and response bodies of the HTTP API (pydantic, at module level so they are
testable on their own and make the OpenAPI schema).

A sample in a request has the fields of a JSONL input line (docs/architecture.md, Design,
"JSONL in/out"); only `completion` is required, unknown fields are ignored, and a reference
that is not a string (a number, an object) is kept as its JSON text, as `rewardsmith score`
reads files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from rewardsmith.types import STATUSES, Reward, Sample

Status = Literal["ok", "not_applicable", "timeout", "error", "invalid_reference"]
assert set(STATUSES) == set(Status.__args__)  # type: ignore[attr-defined]  # one list of statuses


class BatchTooLarge(Exception):
    """A request lists more samples than the server takes (a 413, not a schema error)."""

    def __init__(self, field: str, count: int, limit: int) -> None:
        self.field, self.count, self.limit = field, count, limit
        super().__init__(
            f"'{field}' has {count} items; this server takes at most {limit} per request "
            "(split the batch)"
        )


def _check_batch(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    """Refuse an over-long list before its items are validated (`context={"max_batch": N}`)."""
    limit = (info.context or {}).get("max_batch")
    if isinstance(value, list) and limit is not None and len(value) > limit:
        raise BatchTooLarge(info.field_name or "samples", len(value), limit)
    return handler(value)


class Message(BaseModel):
    """One chat message of a prompt."""

    model_config = ConfigDict(extra="allow")

    role: str = "user"
    content: Any = ""


class SampleIn(BaseModel):
    """One sample to score: a JSONL input line."""

    model_config = ConfigDict(extra="ignore")

    completion: str
    prompt: str | list[Message] | None = None
    reference: str | int | float | bool | list[Any] | dict[str, Any] | None = None
    task: str | None = None
    id: str | int | None = None
    meta: dict[str, Any] | None = None

    def to_sample(self) -> Sample:
        """The core `Sample`, read as `rewardsmith.jsonl.sample_from_dict` reads a line."""
        reference = self.reference
        if reference is not None and not isinstance(reference, str):
            reference = json.dumps(reference, ensure_ascii=False)
        prompt: str | list[dict[str, Any]] | None
        if isinstance(self.prompt, list):
            prompt = [m.model_dump() for m in self.prompt]
        else:
            prompt = self.prompt
        return Sample(
            completion=self.completion,
            prompt=prompt,
            reference=reference,
            task=self.task,
            meta=dict(self.meta or {}),
            id=None if self.id is None else str(self.id),
        )


class ScoreRequest(BaseModel):
    """`POST /v1/score`: samples, and optionally the tool or a tool per task for this call
    (otherwise the server's `--tool` / `--task-map`, or its router)."""

    model_config = ConfigDict(extra="forbid")

    samples: list[SampleIn]
    tool: str | None = Field(default=None, min_length=1)
    task_map: dict[str, str] | None = None

    _batch_limit = field_validator("samples", mode="wrap")(_check_batch)


class RewardOut(BaseModel):
    """One reward, as `rewardsmith score` writes it (the `reward` field is `score` here)."""

    score: float | None
    status: Status
    components: dict[str, float | None] = Field(default_factory=dict)
    tool: str = ""
    reason: str = ""


class ScoreResponse(BaseModel):
    """One reward per sample, in the order of the request."""

    rewards: list[RewardOut]


class RouteRequest(BaseModel):
    """`POST /v1/route`: samples to route (no scoring)."""

    model_config = ConfigDict(extra="forbid")

    samples: list[SampleIn]

    _batch_limit = field_validator("samples", mode="wrap")(_check_batch)


class RouteResponse(BaseModel):
    """The router's decision for each sample (`rewardsmith route`'s `route` field)."""

    decisions: list[dict[str, Any]]


class OpenRLHFRequest(BaseModel):
    """What OpenRLHF posts to `--reward.remote_url` (openrlhf/utils/agent.py,
    `SingleTurnAgentExecutor._fetch_rewards_via_http`): prompt + response texts, the prompts,
    and the `--data.label_key` column. Other keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    query: list[str]
    prompts: list[str | None] | None = None
    labels: list[Any] | None = None

    _batch_limit = field_validator("query", mode="wrap")(_check_batch)


class OpenRLHFResponse(BaseModel):
    """What OpenRLHF reads back: `rewards` (the reward), `scores` (in [0, 1], for dynamic
    filtering) and `extra_logs` (per-sample values it logs as means)."""

    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


class ToolOut(BaseModel):
    """A library tool: its spec (`rewardsmith tools show`)."""

    model_config = ConfigDict(extra="allow")

    name: str
    version: int
    kind: str
    description: str = ""


class ToolsResponse(BaseModel):
    tools: list[ToolOut]


class HealthResponse(BaseModel):
    status: Literal["ok", "starting", "stopping"]


class ErrorResponse(BaseModel):
    """Every 4xx/503 body: what was wrong, and for schema errors each bad field's location."""

    error: str
    detail: list[dict[str, Any]] | None = None


def _finite(value: float) -> float | None:
    # JSON has no NaN or infinity; a tool component that is not finite is reported as null.
    return value if math.isfinite(value) else None


def reward_json(reward: Reward) -> dict[str, Any]:
    """A `Reward` as a `RewardOut` dict (built directly: this runs for every sample)."""
    return {
        "score": reward.score,
        "status": reward.status,
        "components": {str(k): _finite(float(v)) for k, v in reward.components.items()},
        "tool": reward.tool,
        "reason": reward.reason,
    }


def openrlhf_json(rewards: Sequence[Reward]) -> dict[str, Any]:
    """OpenRLHF's response for `rewards`, with the same values as the `.py` adapter
    (`rewardsmith.integrations.openrlhf.RewardFunc`): a sample the tool does not apply to
    gets reward 0.0 and `applicable` 0; `failed` is 1 on a tool error or timeout; `scores`
    are the rewards clipped to [0, 1]."""
    values: list[float] = []
    applicable: list[float] = []
    for r in rewards:
        ok = r.status != "not_applicable" and r.score is not None
        applicable.append(float(ok))
        values.append(float(r.score) if ok and r.score is not None else 0.0)
    return {
        "rewards": values,
        "scores": [min(1.0, max(0.0, v)) for v in values],
        "extra_logs": {
            "applicable": applicable,
            "failed": [float(r.status in ("error", "timeout")) for r in rewards],
        },
    }
