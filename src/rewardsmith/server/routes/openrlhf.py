"""`POST /v1/openrlhf`: OpenRLHF's remote reward protocol, for `--reward.remote_url`.

OpenRLHF (openrlhf/utils/agent.py, `SingleTurnAgentExecutor._fetch_rewards_via_http`) posts
`{"query": [...], "prompts": [...], "labels": [...]}`, where each query is the prompt followed
by the response, and reads `rewards`, `scores` and `extra_logs` from the JSON answer. The tool
is the server's (`--tool`, `--task-map` with `?task=`), or `?tool=NAME` in the URL, since
OpenRLHF posts to the URL exactly as given. Values match the `.py` adapter
(`rewardsmith.integrations.openrlhf`).

OpenRLHF's body carries no task, so on a server started with `--task-map` and no `--tool`,
a request without `?tool=` or a `?task=` the map names would score every query 0.0
(`applicable` 0): it is refused with a 422 that says what to add to `--reward.remote_url`, and
logged.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from rewardsmith.server.deps import Engine, json_body, require_token
from rewardsmith.server.payloads import FieldError
from rewardsmith.server.routes.score import ERRORS
from rewardsmith.server.schemas import OpenRLHFRequest, OpenRLHFResponse

log = logging.getLogger(__name__)

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])


@router.post(
    "/v1/openrlhf",
    response_model=OpenRLHFResponse,
    responses=ERRORS,
    openapi_extra=json_body(OpenRLHFRequest),
    summary="OpenRLHF remote reward model (--reward.remote_url)",
)
async def openrlhf(
    request: Request,
    scoring: Engine,
    tool: Annotated[str | None, Query(min_length=1, description="Tool for this URL.")] = None,
    task: Annotated[str | None, Query(min_length=1, description="Task of every query.")] = None,
) -> Response:
    if tool is not None:
        scoring.check_tools(tool, None, tool_loc=("query", "tool"))
    else:
        _check_task(scoring.config.tool, dict(scoring.config.task_map), task)
    outcome = await scoring.score_request("openrlhf", await request.body(), task, tool)
    request.app.state.metrics.observe_counts(outcome.counts, outcome.deadline_timeouts)
    return Response(outcome.body, media_type="application/json")


def _check_task(server_tool: str | None, task_map: dict[str, str], task: str | None) -> None:
    """Refuse (422, logged) a request no tool would score: the server maps tasks, has no
    default tool, and the URL names no tool and no task of the map."""
    if server_tool is not None or not task_map or (task is not None and task in task_map):
        return
    tasks = ", ".join(sorted(task_map))
    given = "no ?task=" if task is None else f"?task={task!r}, which the map does not name,"
    message = (
        f"this server scores by --task-map (tasks: {tasks}) and has no --tool; OpenRLHF "
        f"sends no task, and the URL has {given} so no query would be scored. Append "
        f"?task=TASK (one of: {tasks}) or ?tool=NAME to --reward.remote_url, e.g. "
        f"http://HOST:PORT/v1/openrlhf?task={sorted(task_map)[0]}"
    )
    log.warning("/v1/openrlhf refused: %s", message)
    raise FieldError(("query", "task"), message)
