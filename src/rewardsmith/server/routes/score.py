"""`POST /v1/score`: a batch of samples -> one reward per sample, in order.

The server's hot route has two parts. `router` declares it to FastAPI: its schema, its
errors and its token in /openapi.json, and `score` below is its function. `DirectScore`,
the innermost middleware, answers it without FastAPI's per-request machinery (matching the
route, solving its dependencies, validating nothing: the body is validated in a worker):
it calls the route's one dependency (`require_token`, with `bearer`'s reading of the
header) and the route's function, under the app's own exception handlers. So every answer
(200, 401, 413, 422, a 500), its headers and the metrics are the ones the router would give
(`tests/server/test_direct_score.py` sends the same requests both ways). That machinery
was most of the ASGI stack's CPU per request: measured in-process with the scoring
stubbed, the stack took ~250 us per request through the router and ~100 us this way.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request, Response
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.types import ASGIApp, Receive, Scope, Send

from rewardsmith.server.deps import Engine, bearer, json_body, require_token
from rewardsmith.server.schemas import ErrorResponse, ScoreRequest, ScoreResponse

PATH = "/v1/score"

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])

ERRORS: dict[int | str, dict[str, object]] = {
    code: {"model": ErrorResponse} for code in (400, 401, 413, 422, 503)
}


@router.post(
    PATH,
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


class DirectScore:
    """ASGI middleware, the innermost: answers `POST /v1/score` as the route would (see the
    module docstring) and passes every other request on to the router."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._answer: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != PATH or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self._answer is None:  # on the first request: the app has all its handlers then
            app: Any = scope["app"]
            self._answer = ExceptionMiddleware(
                _answer, handlers=route_handlers(app.exception_handlers), debug=app.debug
            )
        await self._answer(scope, receive, send)


async def _answer(scope: Scope, receive: Receive, send: Send) -> None:
    request = Request(scope, receive, send)
    await require_token(request, await bearer(request))
    response = await score(request, request.app.state.engine)
    await response(scope, receive, send)


def route_handlers(handlers: dict[Any, Any]) -> dict[Any, Any]:
    """The exception handlers FastAPI runs around its routes: all the app's but those for
    500 and `Exception`, which answer from the outermost middleware (as for the router)."""
    return {key: handler for key, handler in handlers.items() if key not in (500, Exception)}
