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

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from rewardsmith.integrations.openrlhf import _reference as label_reference
from rewardsmith.integrations.openrlhf import response_text
from rewardsmith.server.deps import Engine, batch_limit, require_token
from rewardsmith.server.engine import FieldError
from rewardsmith.server.models import OpenRLHFRequest, OpenRLHFResponse, openrlhf_json
from rewardsmith.server.routes.score import ERRORS
from rewardsmith.types import Sample

router = APIRouter(tags=["scoring"], dependencies=[Depends(require_token)])


@router.post(
    "/v1/openrlhf",
    response_model=OpenRLHFResponse,
    responses=ERRORS,
    dependencies=[Depends(batch_limit)],
    summary="OpenRLHF remote reward model (--remote_rm_url)",
)
async def openrlhf(
    body: OpenRLHFRequest,
    request: Request,
    scoring: Engine,
    tool: Annotated[str | None, Query(min_length=1, description="Tool for this URL.")] = None,
    task: Annotated[str | None, Query(min_length=1, description="Task of every query.")] = None,
) -> JSONResponse:
    n = len(body.query)
    for name, values in (("prompts", body.prompts), ("labels", body.labels)):
        if values is not None and len(values) != n:
            raise FieldError(("body", name), f"got {len(values)} {name} for {n} queries")
    if tool is not None:
        scoring.check_tools(tool, None, tool_loc=("query", "tool"))
    prompts = body.prompts or [None] * n
    labels = body.labels if body.labels is not None else [None] * n
    samples = [
        Sample(
            completion=response_text(query, prompt),
            prompt=prompt,
            reference=label_reference(label),
            task=task,
        )
        for query, prompt, label in zip(body.query, prompts, labels, strict=True)
    ]
    outcome = await scoring.score(samples, tool, None)
    request.app.state.metrics.observe_rewards(outcome.rewards, outcome.deadline_timeouts)
    return JSONResponse(openrlhf_json(outcome.rewards))
