"""The server gives the values `rewardsmith score` gives, for math, GSM8K and code samples
(its task map, or one sent with the request)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_support import MIXED_TASK_MAP, mixed_samples, running_server

from rewardsmith.client import RewardClient
from rewardsmith.scoring import score
from rewardsmith.server import ServerConfig


@pytest.fixture(scope="module")
def mixed_server(server_library: Path) -> Iterator[str]:
    config = ServerConfig(library=str(server_library), task_map=MIXED_TASK_MAP, workers=2)
    with running_server(config) as url:
        yield url


def test_server_rewards_equal_in_process_rewards(mixed_server: str, server_library: Path) -> None:
    samples = mixed_samples()
    expected = score(samples, task_map=MIXED_TASK_MAP, library=server_library)
    assert {r.status for r in expected} >= {"ok"}
    assert len({r.tool for r in expected}) == 3  # math, gsm8k and code all took part
    with RewardClient(mixed_server) as client:
        assert client.score(samples) == expected
        # The same map sent with the request instead of configured on the server.
        assert client.score(samples, task_map=MIXED_TASK_MAP) == expected


def test_raw_json_has_the_documented_fields(mixed_server: str) -> None:
    response = httpx.post(
        f"{mixed_server}/v1/score",
        json={"samples": [{"completion": "#### 72", "reference": "72", "task": "gsm8k"}]},
    )
    assert response.json() == {
        "rewards": [
            {
                "score": 1.0,
                "status": "ok",
                "components": {},
                "tool": "gsm8k@1",
                "reason": response.json()["rewards"][0]["reason"],
            }
        ]
    }
