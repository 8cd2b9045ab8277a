"""`POST /v1/score`: a batch of samples -> one reward per sample, in order."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response

from rewardsmith.server.deps import Engine, json_body, require_token
from rewardsmith.server.schemas import ErrorResponse, ScoreRequest, ScoreResponse

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 413, 422, 503)
}


@router.post(
    "/v1/score",
    response_model=ScoreResponse,
    responses=ERRORS,
    openapi_extra=json_body(ScoreRequest),
    summary="Score a batch of samples",
)
async def score(request: Request, scoring: Engine) -> Response:
    """The same rewards `rewardsmith score` gives: with the server's tool / task map /
    router, or the `tool` / `task_map` of this request. A sample not scored within the
    server's deadline is `timeout`; the others in its batch are scored."""
    # Validated in a worker, with the per-sample work (`payloads.parse`): 422 / 413 from there.
    outcome = await scoring.score_request("score", await request.body())
    request.app.state.metrics.observe_counts(outcome.counts, outcome.deadline_timeouts)
    return Response(outcome.body, media_type="application/json")
