"""Dependencies of the routes: the token check and the batch-size limit."""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rewardsmith.server.engine import ScoringEngine
from rewardsmith.server.metrics import Metrics

_bearer = HTTPBearer(auto_error=False, description="The server's --token, if it has one.")


def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """401 unless the request carries `Authorization: Bearer TOKEN` (when a token is set)."""
    token: str | None = request.app.state.config.token
    if not token:
        return
    given = credentials.credentials if credentials is not None else ""
    if not hmac.compare_digest(given.encode(), token.encode()):
        raise HTTPException(
            status_code=401,
            detail="missing or wrong token: send `Authorization: Bearer <token>`",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def batch_limit(request: Request) -> None:
    """413 when a request lists more samples (or OpenRLHF queries) than the server takes.

    Runs before the body is validated, on the JSON FastAPI already parsed (cached on the
    request), so a 100k-sample batch is refused without building 100k models."""
    try:
        data: Any = await request.json()
    except ValueError:
        return  # not JSON: validation answers 422
    if not isinstance(data, dict):
        return
    limit: int = request.app.state.config.max_batch
    for field in ("samples", "query"):
        items = data.get(field)
        if isinstance(items, list) and len(items) > limit:
            metrics: Metrics = request.app.state.metrics
            metrics.rejected.labels("batch").inc()
            raise HTTPException(
                status_code=413,
                detail=f"'{field}' has {len(items)} items; this server takes at most {limit} "
                "per request (split the batch)",
            )


def _engine(request: Request) -> ScoringEngine:
    engine: ScoringEngine = request.app.state.engine
    return engine


#: The app's scoring engine, as a route parameter.
Engine = Annotated[ScoringEngine, Depends(_engine)]
