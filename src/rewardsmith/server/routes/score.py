"""`POST /v1/score`: a batch of samples -> one reward per sample, in order."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from rewardsmith.server.deps import Engine, batch_limit, require_token
from rewardsmith.server.models import ErrorResponse, ScoreRequest, ScoreResponse, reward_json

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 413, 422, 503)
}


@router.post(
    "/v1/score",
    response_model=ScoreResponse,
    responses=ERRORS,
    dependencies=[Depends(batch_limit)],
    summary="Score a batch of samples",
)
async def score(body: ScoreRequest, request: Request, scoring: Engine) -> JSONResponse:
    """The same rewards `rewardsmith score` gives: with the server's tool / task map /
    router, or the `tool` / `task_map` of this request. A sample not scored within the
    server's deadline is `timeout`; the others in its batch are scored."""
    if body.tool is not None or body.task_map is not None:
        scoring.check_tools(body.tool, body.task_map)
    samples = [s.to_sample() for s in body.samples]
    outcome = await scoring.score(samples, body.tool, body.task_map)
    request.app.state.metrics.observe_rewards(outcome.rewards, outcome.deadline_timeouts)
    # Built directly (not through ScoreResponse): this is the hot path.
    return JSONResponse({"rewards": [reward_json(r) for r in outcome.rewards]})
