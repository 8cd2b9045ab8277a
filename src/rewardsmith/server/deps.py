"""Dependencies of the routes: the token check and the batch-size limit."""

from __future__ import annotations

import hmac
from typing import Annotated, Any, TypeVar

from fastapi import Depends, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError

from rewardsmith.server.engine import ScoringEngine
from rewardsmith.server.schemas import BatchTooLarge, request_errors

#: Reads `Authorization: Bearer T` (and documents the scheme in the OpenAPI schema).
bearer = HTTPBearer(auto_error=False, description="The server's --token, if it has one.")


# Dependencies are `async def`: FastAPI runs a plain `def` in a thread pool, a thread hop
# per request for a dictionary lookup.
async def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """401 unless the request carries `Authorization: Bearer TOKEN` (when a token is set).
    `POST /v1/score`'s direct path (`routes.score`) calls it too, with `bearer`'s answer."""
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


ModelT = TypeVar("ModelT", bound=BaseModel)


async def parse_body(request: Request, model: type[ModelT]) -> tuple[ModelT, bytes]:
    """The request body validated as `model` straight from its bytes (pydantic's JSON parser),
    and the bytes. A body that does not fit raises FastAPI's `RequestValidationError` (422,
    each bad field's location under `body`); too many samples, 413 before any is validated."""
    body = await request.body()
    limit: int = request.app.state.config.max_batch
    try:
        return model.model_validate_json(body, context={"max_batch": limit}), body
    except BatchTooLarge as exc:
        request.app.state.metrics.rejected.labels("batch").inc()
        raise HTTPException(status_code=413, detail=str(exc)) from None
    except ValidationError as exc:
        raise RequestValidationError(request_errors(exc)) from None


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` documenting a body read by `parse_body` (the schema is added to the
    components by the app factory)."""
    ref = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": ref}}}}


async def _engine(request: Request) -> ScoringEngine:
    engine: ScoringEngine = request.app.state.engine
    return engine


#: The app's scoring engine, as a route parameter.
Engine = Annotated[ScoringEngine, Depends(_engine)]
