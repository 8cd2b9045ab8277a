"""A server that scores by task map: OpenRLHF requests it cannot score are refused with what to
add (never a silent 0.0), and `--request-log` keeps every scored sample as a rollout line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_support import running_server

from rewardsmith.rollout_log import read_rollouts
from rewardsmith.server import ServerConfig


@pytest.fixture(scope="module")
def mapped_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("mapped")
    log = folder / "logs" / "requests.jsonl"
    config = ServerConfig(
        library=str(folder / "library.db"),
        task_map={"gsm8k": "gsm8k", "fmt": "format_tags"},
        workers=2,
        request_log=str(log),
    )
    with running_server(config) as url:
        yield url, log


def post(url: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.post(f"{url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]


OPENRLHF = {"query": ["Q: 2+2? A: #### 4"], "prompts": ["Q: 2+2? A: "], "labels": ["4"]}


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # OpenRLHF posts no task: without ?task= or ?tool= nothing could be scored
        ("", "no ?task="),
        # a task the map does not name is the same dead end
        ("?task=math500", "?task='math500', which the map does not name"),
    ],
)
def test_openrlhf_without_a_task_the_map_names_is_refused_with_what_to_add(
    mapped_server: tuple[str, Path],
    query: str,
    expected: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url, _ = mapped_server
    with caplog.at_level(logging.WARNING, logger="rewardsmith.server.routes.openrlhf"):
        response = post(url, f"/v1/openrlhf{query}", json=OPENRLHF)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["query", "task"]
    assert expected in error["msg"] and "?task=TASK (one of: fmt, gsm8k)" in error["msg"]
    assert "/v1/openrlhf refused" in caplog.text  # and the server's log says so


@pytest.mark.parametrize("query", ["?task=gsm8k", "?tool=gsm8k"])
def test_openrlhf_with_a_mapped_task_or_a_tool_scores(
    mapped_server: tuple[str, Path], query: str
) -> None:
    url, _ = mapped_server
    body = post(url, f"/v1/openrlhf{query}", json=OPENRLHF).json()
    assert body["rewards"] == [1.0] and body["extra_logs"]["applicable"] == [1.0]


def test_request_log_holds_every_scored_sample_as_a_rollout(
    mapped_server: tuple[str, Path],
) -> None:
    url, log = mapped_server
    samples = [
        {"id": "a", "prompt": "2+2?", "completion": "#### 4", "reference": "4", "task": "gsm8k"},
        {"id": "b", "completion": "<thinking>x</thinking><solution>y</solution>", "task": "fmt"},
        # no task on a task-map server: not scored, and the reason names the map
        {"id": "c", "completion": "#### 4", "reference": "4"},
    ]
    rewards = post(url, "/v1/score", json={"samples": samples}).json()["rewards"]
    assert [r["score"] for r in rewards] == [1.0, 1.0, None]
    assert "task map (fmt, gsm8k)" in rewards[2]["reason"]
    logged = {r.sample.id: r for r in read_rollouts(log) if r.record.get("route") == "/v1/score"}
    assert set(logged) == {"a", "b", "c"}
    for sample, reward in zip(samples, rewards, strict=True):
        line = logged[sample["id"]]
        assert line.stored is not None and line.stored.score == reward["score"]
        assert line.stored.status == reward["status"] and line.record["source"] == "server"
        assert line.sample.completion == sample["completion"]
