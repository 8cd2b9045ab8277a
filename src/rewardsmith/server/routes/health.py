"""`GET /health` (readiness) and `GET /metrics` (Prometheus text)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse

from rewardsmith.server.deps import require_token
from rewardsmith.server.metrics import CONTENT_TYPE_LATEST
from rewardsmith.server.routes.score import ERRORS
from rewardsmith.server.schemas import HealthResponse

router = APIRouter(tags=["service"])


@router.get(
    "/health",
    response_model=HealthResponse,
    responses={503: {"model": HealthResponse, "description": "Not ready yet, or stopping."}},
)
async def health(request: Request) -> JSONResponse:
    """200 `{"status": "ok"}` once the scoring workers are warm, 503 before (and while
    stopping). Needs no token, so load balancers can probe it."""
    admission = request.app.state.admission
    if admission.ready and not admission.stopping:
        return JSONResponse({"status": "ok"})
    status = "stopping" if admission.stopping else "starting"
    headers = {"Retry-After": str(admission.retry_after)}
    return JSONResponse({"status": status}, status_code=503, headers=headers)


@router.get(
    "/metrics",
    response_class=Response,
    dependencies=[Depends(require_token)],
    responses={200: {"content": {"text/plain": {}}}, 401: ERRORS[401]},
)
async def metrics(request: Request) -> Response:
    """Prometheus metrics (see `rewardsmith.server.metrics`)."""
    pool = request.app.state.engine.pool
    body = request.app.state.metrics.render(lambda: (pool.waiting, pool.busy, pool.restarts))
    return Response(body, media_type=CONTENT_TYPE_LATEST)
