"""Request bodies to samples and rewards to response bodies, in the scoring workers.

The server validates every body with its pydantic model (422 naming the field), then hands
the raw bytes to a worker, which reads the samples and writes the response JSON itself: the
per-sample work of a request (parsing, building `Sample`s, encoding rewards) then runs in
the workers, in parallel, and the event loop only moves bytes. Samples are read by
`rewardsmith.jsonl.sample_from_dict`, as `rewardsmith score` reads a file, so the values are
the same.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from rewardsmith.integrations.openrlhf import _reference as label_reference
from rewardsmith.integrations.openrlhf import response_text
from rewardsmith.jsonl import sample_from_dict
from rewardsmith.server.models import openrlhf_json, reward_json
from rewardsmith.types import Reward, Sample

Kind = Literal["score", "openrlhf"]
#: (tool, status) -> count, for the metrics.
Counts = dict[tuple[str, str], int]


def read_samples(kind: Kind, data: Any, task: str | None = None) -> list[Sample]:
    """The samples of a parsed (and already validated) request body."""
    if kind == "score":
        return [sample_from_dict(s) for s in data["samples"]]
    queries: list[str] = data["query"]
    prompts = data.get("prompts") or [None] * len(queries)
    labels = data.get("labels")
    labels = labels if labels is not None else [None] * len(queries)
    return [
        Sample(
            completion=response_text(query, prompt),
            prompt=prompt,
            reference=label_reference(label),
            task=task,
        )
        for query, prompt, label in zip(queries, prompts, labels, strict=True)
    ]


def render(kind: Kind, rewards: Sequence[Reward]) -> bytes:
    """The response body for `rewards`."""
    if kind == "score":
        body: dict[str, Any] = {"rewards": [reward_json(r) for r in rewards]}
    else:
        body = openrlhf_json(rewards)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def counts(rewards: Sequence[Reward]) -> Counts:
    out: Counts = {}
    for reward in rewards:
        key = (reward.tool or "-", reward.status)
        out[key] = out.get(key, 0) + 1
    return out
