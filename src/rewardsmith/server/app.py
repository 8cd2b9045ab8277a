"""The app factory: `create_app(ServerConfig(...))` -> a FastAPI app (run it with uvicorn,
or `rewardsmith serve`).

Layers, outermost first: metrics (every request counted, refusals too), the admission gate
(reads the body first, within the body timeout (408) and the body limit (413), then admits
it or answers 503 when full, starting or stopping; `limits.py`), `POST /v1/score`'s direct
path (`routes/score.py`: the route's token check and function without FastAPI's routing),
then the routers, whose dependencies check the token (401) and the batch size (413) before
the body is validated (422 naming each bad field). Errors are JSON `{"error", "detail"?}`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version as package_version
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from rewardsmith.errors import ConfigError, RewardsmithError
from rewardsmith.server.config import RETRY_AFTER_SECONDS, ServerConfig
from rewardsmith.server.engine import RequestRefused, ScoringEngine, Unavailable
from rewardsmith.server.limits import Admission, AdmissionGate
from rewardsmith.server.metrics import Metrics, MetricsMiddleware
from rewardsmith.server.payloads import FieldError
from rewardsmith.server.routes import health, openrlhf, score, tools
from rewardsmith.server.routes.score import DirectScore
from rewardsmith.server.schemas import OpenRLHFRequest, RouteRequest, ScoreRequest

log = logging.getLogger(__name__)

# Validation messages quote at most this much of a bad value.
MAX_ERRORS_REPORTED = 20


def create_app(config: ServerConfig, scoring: ScoringEngine | None = None) -> FastAPI:
    """The rewardsmith HTTP API for `config` (see docs/server.md)."""
    config.validate()
    metrics = Metrics()
    admission = Admission(
        config.max_pending,
        RETRY_AFTER_SECONDS,
        body_timeout=config.body_timeout_seconds,
        max_body_bytes=config.max_body_bytes,
        max_reading=config.max_reading,
    )
    engine = scoring or ScoringEngine(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # A bad --tool fails here, before the server listens; the workers then start while
        # it listens, so /health can say 503 "starting" until they are warm.
        try:
            engine.check_startup()
        except RewardsmithError as exc:
            app.state.startup_error = exc
            raise
        admission.bind(asyncio.get_running_loop())
        warming = asyncio.create_task(_warm_up(app, engine, admission))
        try:
            yield
        finally:
            # uvicorn has let in-flight requests finish before it gets here (run under
            # `serving.Server`, the stop began at the signal already).
            admission.begin_stopping()
            warming.cancel()
            await engine.close()

    app = FastAPI(
        title="rewardsmith",
        version=package_version("rewardsmith"),
        description="Reward engine for RL on language models: score batches of samples.",
        lifespan=lifespan,
        # No `max_body_size`: the admission gate reads (and limits) the scoring routes'
        # bodies itself, and no other route reads one.
    )
    app.state.config = config
    app.state.engine = engine
    app.state.metrics = metrics
    app.state.admission = admission
    app.state.startup_error = None
    for module in (score, openrlhf, tools, health):
        app.include_router(module.router)
    _add_error_handlers(app)
    _document_bodies(app, [ScoreRequest, OpenRLHFRequest, RouteRequest])
    app.add_middleware(DirectScore)  # added first: innermost, answers POST /v1/score
    app.add_middleware(AdmissionGate, admission=admission, metrics=metrics)
    app.add_middleware(MetricsMiddleware, metrics=metrics)  # added last: outermost
    return app


async def _warm_up(app: FastAPI, engine: ScoringEngine, admission: Admission) -> None:
    """Start the workers; on failure record why (the CLI reports it) and stop the server."""
    try:
        await engine.start()
    except Exception as exc:
        log.error("the scoring workers did not start: %s", exc)
        app.state.startup_error = exc
        os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's own handler: a clean shutdown
        return
    admission.ready = True


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _unprocessable(
            [
                {
                    "loc": list(e.get("loc", ())),
                    "msg": str(e.get("msg", "")),
                    "type": str(e.get("type", "")),
                }
                for e in exc.errors()
            ]
        )

    @app.exception_handler(RequestRefused)
    async def refused(request: Request, exc: RequestRefused) -> JSONResponse:
        if exc.problem.kind == "too_large":
            request.app.state.metrics.rejected.labels("batch").inc()
            return JSONResponse({"error": exc.problem.message}, status_code=413)
        return _unprocessable(exc.problem.errors)

    @app.exception_handler(FieldError)
    async def bad_field(request: Request, exc: FieldError) -> JSONResponse:
        return _unprocessable([{"loc": list(exc.location), "msg": str(exc), "type": "value_error"}])

    @app.exception_handler(ConfigError)
    async def bad_config(request: Request, exc: ConfigError) -> JSONResponse:
        return _unprocessable([{"loc": ["body"], "msg": str(exc), "type": "value_error"}])

    @app.exception_handler(Unavailable)
    async def unavailable(request: Request, exc: Unavailable) -> JSONResponse:
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        return JSONResponse({"error": str(exc)}, status_code=503, headers=headers)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        headers = dict(exc.headers or {})
        detail = str(exc.detail)
        if exc.status_code == 413 and detail == "Content Too Large":
            detail = (
                f"request body over the limit of {request.app.state.config.max_body_bytes} bytes"
            )
        if exc.status_code == 413:
            # Close the connection: the rest of an oversized body is not read at all.
            headers["Connection"] = "close"
        if exc.status_code == 400 and detail == "There was an error parsing the body":
            detail = "the body is not JSON (send UTF-8 JSON with content-type application/json)"
        return JSONResponse({"error": detail}, status_code=exc.status_code, headers=headers)


def _document_bodies(app: FastAPI, models: list[type[BaseModel]]) -> None:
    """Add the bodies the routes validate themselves (`deps.parse_body`) to the schema's
    components, where their `openapi_extra` points."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for model in models:
                body = model.model_json_schema(ref_template="#/components/schemas/{model}")
                for name, definition in body.pop("$defs", {}).items():
                    components.setdefault(name, definition)
                components[model.__name__] = body
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _unprocessable(errors: list[dict[str, Any]]) -> JSONResponse:
    shown = errors[:MAX_ERRORS_REPORTED]
    where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in shown[:3])
    more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
    return JSONResponse(
        {"error": f"invalid request: {where}{more}", "detail": shown}, status_code=422
    )
