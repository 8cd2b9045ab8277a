"""Request and response bodies of the HTTP API (pydantic, at module level so they are
testable on their own and make the OpenAPI schema).

A sample in a request is a JSONL input line (docs/architecture.md, Design, "JSONL in/out"),
read by the function `rewardsmith score` reads files with (`samples.sample_from_dict`): the
same object is accepted or refused, with the same message, over HTTP and on the command line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_core import PydanticCustomError
from pydantic_core.core_schema import ValidatorFunctionWrapHandler

from rewardsmith.errors import SampleError
from rewardsmith.samples import sample_from_dict
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


class SampleIn(BaseModel):
    """One sample to score: a JSONL input line. This model documents the schema; a sample
    is read by `rewardsmith.samples.sample_from_dict`, the reader `rewardsmith score` uses,
    so a sample is accepted or refused (with the same message) over HTTP as in a file."""

    model_config = ConfigDict(extra="allow")

    completion: str
    prompt: str | list[dict[str, Any]] | None = Field(
        default=None, description="Text, or chat messages (`role`, when given, a string)."
    )
    reference: Any = Field(default=None, description="Not a string: kept as its JSON text.")
    task: str | None = None
    id: str | int | None = Field(default=None, description="A string or an integer.")
    meta: dict[str, Any] | None = None
    group: Any = Field(default=None, description="Samples that vote together; kept in `meta`.")


def _read_sample(value: Any) -> Sample:
    try:
        return sample_from_dict(value)
    except SampleError as exc:
        context = {"reason": str(exc), "field": exc.field}
        raise PydanticCustomError("sample", "{reason}", context) from None


#: A request's sample: read by the one sample reader, documented as `SampleIn`.
SampleField = Annotated[Sample, PlainValidator(_read_sample, json_schema_input_type=SampleIn)]


def request_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """A body's validation errors as a 422 lists them: each location under `body`, and a
    bad sample's location ending in the field at fault (`["body", "samples", 3, "meta"]`)."""
    out = []
    for error in exc.errors(include_url=False):
        loc: list[Any] = ["body", *error["loc"]]
        field = (error.get("ctx") or {}).get("field") if error["type"] == "sample" else None
        if field:
            loc.append(field)
        out.append({"loc": loc, "msg": error["msg"], "type": error["type"]})
    return out


class ScoreRequest(BaseModel):
    """`POST /v1/score`: samples, and optionally the tool or a tool per task for this call
    (otherwise the server's `--tool` / `--task-map`, or its router)."""

    model_config = ConfigDict(extra="forbid")

    samples: list[SampleField]
    tool: str | None = Field(default=None, min_length=1)
    task_map: dict[str, str] | None = None

    _batch_limit = field_validator("samples", mode="wrap")(_check_batch)


class RewardOut(BaseModel):
    """One reward, as `rewardsmith score` writes it (the `reward` field is `score` here).
    Documents the schema; the server writes `Reward.to_dict("api")`."""

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

    samples: list[SampleField]

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
