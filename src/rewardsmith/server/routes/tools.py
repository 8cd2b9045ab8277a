"""`GET /v1/tools` (the library) and `POST /v1/route` (the router's decisions)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from rewardsmith.server.deps import Engine, json_body, parse_body, require_token
from rewardsmith.server.routes.score import ERRORS
from rewardsmith.server.schemas import RouteRequest, RouteResponse, ToolsResponse

router = APIRouter(tags=["tools"], dependencies=[Depends(require_token)])


@router.get("/v1/tools", response_model=ToolsResponse, responses={401: ERRORS[401]})
async def tools(scoring: Engine) -> dict[str, Any]:
    """Every active tool in the server's library, with its spec."""
    return {"tools": [r.spec.to_dict() for r in scoring.library.records()]}


@router.post(
    "/v1/route",
    response_model=RouteResponse,
    responses=ERRORS,
    openapi_extra=json_body(RouteRequest),
)
async def route(request: Request, scoring: Engine) -> dict[str, Any]:
    """The router's decision for each sample (`rewardsmith route`'s `route` field)."""
    parsed, _ = await parse_body(request, RouteRequest)
    return {"decisions": await scoring.route(parsed.samples)}
