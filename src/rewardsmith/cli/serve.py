"""`rewardsmith serve`: the reward server (docs/server.md).

    rewardsmith serve --tool gsm8k                        # 127.0.0.1:8000, no token needed
    rewardsmith serve --host 0.0.0.0 --token "$T" --task-map gsm8k=gsm8k,math500=math
    rewardsmith serve --tool code --ray                   # sandboxes as actors of a local Ray

SIGTERM (or Ctrl-C) stops accepting connections, answers requests still sending their body
with 503, lets the admitted requests finish, stops the workers and exits 0.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer

from rewardsmith.cli.common import (
    FallbackOption,
    LibraryOption,
    LLMKeyOption,
    LLMModelOption,
    LLMUrlOption,
    apply_llm_flags,
    llm_fallback,
)
from rewardsmith.errors import ConfigError, MissingDependencyError
from rewardsmith.jsonl import check_output_path
from rewardsmith.scoring import parse_task_map
from rewardsmith.server.config import (
    DEFAULT_BODY_TIMEOUT_SECONDS,
    DEFAULT_DEADLINE_SECONDS,
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_PENDING,
    TOKEN_ENV,
    ServerConfig,
    default_workers,
)

# uvicorn's drain on shutdown may take as long as one request's deadline, plus this.
DRAIN_MARGIN_SECONDS = 5.0

# What may follow `--ray` as its ADDRESS; anything else (an option, the input file) means
# `--ray` was given alone: a local Ray.
_RAY_ADDRESS = re.compile(r"^(auto|local|ray://\S+|\[?[\w.:-]+\]?:\d+)$")
LOCAL_RAY = "local"

RayOption = Annotated[
    str | None,
    typer.Option(
        "--ray",
        metavar="[ADDRESS]",
        help="Run sandbox workers and reward-model replicas as Ray actors: `--ray` alone starts "
        "a local Ray, `--ray ADDRESS` joins a cluster (e.g. ray://head:10001 or auto).",
    ),
]


def serve(
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to listen on.")] = 8000,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help=f"Bearer token every request must carry (default: ${TOKEN_ENV}). Required "
            "to listen beyond loopback.",
        ),
    ] = None,
    library: LibraryOption = None,
    tool: Annotated[
        str | None, typer.Option("--tool", "-t", help="Tool for every sample (NAME[@VERSION]).")
    ] = None,
    task_map: Annotated[
        str | None,
        typer.Option("--task-map", help="Tool per `task` field: TASK=TOOL,TASK=TOOL,..."),
    ] = None,
    synthesize: Annotated[
        bool,
        typer.Option(
            "--synthesize",
            help="The router's 'synthesize' decisions build gated new tools (raise --deadline: synthesis runs inside a request).",
        ),
    ] = False,
    ray: RayOption = None,
    router: Annotated[
        str,
        typer.Option(
            "--backend", "-b", "--router", help="Router backend without --tool/--task-map."
        ),
    ] = "embedded",
    workers: Annotated[
        int, typer.Option("--workers", help="Scoring worker processes.", min=1)
    ] = default_workers(),
    deadline: Annotated[
        float,
        typer.Option(
            "--deadline",
            help="Seconds a request may take; samples not scored by then come back `timeout`.",
            min=0.1,
        ),
    ] = DEFAULT_DEADLINE_SECONDS,
    max_batch: Annotated[
        int, typer.Option("--max-batch", help="Samples per request (more: 413).", min=1)
    ] = DEFAULT_MAX_BATCH,
    max_body_mb: Annotated[
        float, typer.Option("--max-body-mb", help="Request body size limit (more: 413).", min=0.01)
    ] = DEFAULT_MAX_BODY_BYTES / 2**20,
    max_pending: Annotated[
        int,
        typer.Option(
            "--max-pending",
            help="Scoring requests admitted at once (more: 503 + Retry-After).",
            min=1,
        ),
    ] = DEFAULT_MAX_PENDING,
    body_timeout: Annotated[
        float,
        typer.Option(
            "--body-timeout",
            help="Seconds a request body may take to arrive (more: 408); slow senders are not admitted meanwhile.",
            min=0.1,
        ),
    ] = DEFAULT_BODY_TIMEOUT_SECONDS,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
    request_log: Annotated[
        Path | None,
        typer.Option(
            "--request-log",
            help="Append every scored sample (sample + reward) to this rollout JSONL, for "
            "`rewardsmith rescore / compare / profile`.",
            dir_okay=False,
        ),
    ] = None,
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
    fallback: FallbackOption = None,
) -> None:
    """Serve rewards over HTTP: POST /v1/score, /v1/openrlhf, /v1/route; GET /v1/tools,
    /health, /metrics."""
    apply_llm_flags(llm_url, llm_model, llm_key)  # the llm router and synthesis read them
    if router == "llm" and not tool and not task_map and not llm_fallback(fallback):
        _check_llm()
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependencyError("uvicorn", "server") from exc
    config = ServerConfig(
        host=host,
        port=port,
        token=token or os.environ.get(TOKEN_ENV) or None,
        library=str(library) if library is not None else None,
        tool=tool,
        task_map=parse_task_map(task_map) if task_map else {},
        router=router,
        synthesize=synthesize,
        workers=workers,
        deadline_seconds=deadline,
        max_batch=max_batch,
        max_body_bytes=int(max_body_mb * 2**20),
        max_pending=max_pending,
        body_timeout_seconds=body_timeout,
        request_log=str(request_log) if request_log is not None else None,
    ).validate()
    if request_log is not None:
        check_output_path(request_log)  # exit 2 now, not in every worker
    if ray is not None:
        from dataclasses import replace

        from rewardsmith.server.ray_backend import start_ray

        config = replace(config, ray_address=start_ray(None if ray == LOCAL_RAY else ray))
    from rewardsmith.server.app import create_app
    from rewardsmith.server.serving import Server

    app = create_app(config)
    server = Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level=log_level,
            timeout_graceful_shutdown=int(deadline + DRAIN_MARGIN_SECONDS),
        )
    )
    # uvicorn drains on SIGTERM/SIGINT and then raises the signal again for the handler it
    # found; a finished drain is a clean exit, so that handler does nothing (exit code 0).
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    try:
        server.run()
    except SystemExit:  # uvicorn exits 3 when the app fails to start; say why instead
        if app.state.startup_error is None:
            raise
    if app.state.startup_error is not None:
        raise ConfigError(f"the server stopped: {app.state.startup_error}")
    if not server.started:
        raise ConfigError(f"the server did not start on {host}:{port} (see the log above)")


def _check_llm() -> None:
    """An explicit `--backend llm` must work before the server starts (exit 2 otherwise): once
    serving, a request never fails for it; the router falls back per request instead."""
    from rewardsmith.errors import LLMError
    from rewardsmith.llm.client import LLMClient

    hint = "pass --fallback embedded to serve with the embedded router instead"
    try:
        client = LLMClient()
    except ConfigError as exc:
        raise ConfigError(f"--backend llm: {exc}; {hint}") from None
    try:
        client.check()
    except LLMError as exc:
        raise LLMError(f"--backend llm: {exc}; {hint}") from None
    finally:
        client.close()


def expand_ray_flag(argv: Sequence[str]) -> list[str]:
    """`--ray` takes an optional value, which Typer options cannot: a bare `--ray` (followed
    by an option, the input file or nothing) becomes `--ray local`."""
    out = list(argv)
    for i, arg in enumerate(out):
        if arg == "--":
            break
        if arg == "--ray" and (i + 1 == len(out) or not _RAY_ADDRESS.match(out[i + 1])):
            out.insert(i + 1, LOCAL_RAY)
            break
    return out


__all__ = ["LOCAL_RAY", "RayOption", "expand_ray_flag", "serve"]
