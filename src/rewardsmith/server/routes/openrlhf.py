"""`POST /v1/openrlhf`: OpenRLHF's remote reward protocol, for `--remote_rm_url`.

OpenRLHF (openrlhf/utils/agent.py, `SingleTurnAgentExecutor._fetch_rewards_via_http`) posts
`{"query": [...], "prompts": [...], "labels": [...]}`, where each query is the prompt followed
by the response, and reads `rewards`, `scores` and `extra_logs` from the JSON answer. The tool
is the server's (`--tool`, `--task-map` with `?task=`), or `?tool=NAME` in the URL, since
OpenRLHF posts to the URL exactly as given. Values match the `.py` adapter
(`rewardsmith.integrations.openrlhf`).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from rewardsmith.server.deps import Engine, json_body, require_token
from rewardsmith.server.models import OpenRLHFRequest, OpenRLHFResponse
from rewardsmith.server.routes.score import ERRORS

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])


@router.post(
    "/v1/openrlhf",
    response_model=OpenRLHFResponse,
    responses=ERRORS,
    openapi_extra=json_body(OpenRLHFRequest),
    summary="OpenRLHF remote reward model (--remote_rm_url)",
)
async def openrlhf(
    request: Request,
    scoring: Engine,
    tool: Annotated[str | None, Query(min_length=1, description="Tool for this URL.")] = None,
    task: Annotated[str | None, Query(min_length=1, description="Task of every query.")] = None,
) -> Response:
    if tool is not None:
        scoring.check_tools(tool, None, tool_loc=("query", "tool"))
    outcome = await scoring.score_request("openrlhf", await request.body(), task, tool)
    request.app.state.metrics.observe_counts(outcome.counts, outcome.deadline_timeouts)
    return Response(outcome.body, media_type="application/json")
