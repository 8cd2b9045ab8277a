"""The HTTP API against a real uvicorn server: the same rewards as in-process scoring, the
documented status codes for bad input, and one misbehaving sample never costing the rest of
its batch."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from server_support import CRASH, DEADLINE, HANG, MAX_BATCH, MAX_BODY_BYTES, SPIN

# Seconds past the deadline a response may take on a loaded 2-core machine (killing and
# replacing workers, the HTTP round trip).
LATE_MARGIN = 3.0


def post(url: str, path: str, **kwargs: object) -> httpx.Response:
    return httpx.post(f"{url}{path}", timeout=60, **kwargs)  # type: ignore[arg-type]


# -- the same values as `rewardsmith score` -------------------------------------------------


def test_server_tool_is_the_default_and_a_request_may_name_another(server: str) -> None:
    sample = {"completion": "so the answer is 72", "reference": "72"}
    default = post(server, "/v1/score", json={"samples": [sample]}).json()["rewards"][0]
    assert default["tool"] == "gsm8k@1" and default["score"] == 1.0
    other = post(server, "/v1/score", json={"samples": [sample], "tool": "misbehaving"})
    assert other.json()["rewards"][0]["tool"] == "misbehaving@1"


def test_empty_batch_gives_no_rewards(server: str) -> None:
    assert post(server, "/v1/score", json={"samples": []}).json() == {"rewards": []}


# -- bad input: a clear 4xx naming what was wrong, never a 5xx ------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        # the one required field missing
        ({"samples": [{"prompt": "p"}]}, ["body", "samples", 0, "completion"]),
        # wrong types
        ({"samples": [{"completion": 5}]}, ["body", "samples", 0, "completion"]),
        ({"samples": "not a list"}, ["body", "samples"]),
        ({"samples": [{"completion": "x", "task": ["a"]}]}, ["body", "samples", 0, "task"]),
        # unknown top-level field (a typo of task_map)
        ({"samples": [], "taskmap": {}}, ["body", "taskmap"]),
        # a tool the library does not have, directly or through the task map
        ({"samples": [{"completion": "x"}], "tool": "nope"}, ["body", "tool"]),
        ({"samples": [{"completion": "x"}], "task_map": {"t": "nope"}}, ["body", "task_map", "t"]),
    ],
)
def test_schema_errors_are_422_naming_the_field(server: str, body: object, field: list) -> None:
    response = post(server, "/v1/score", json=body)
    assert response.status_code == 422
    assert field in [e["loc"] for e in response.json()["detail"]]
    assert response.json()["error"].startswith("invalid request: ")


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"", b"[1, 2]", b'{"samples": [\xff\xfe]}', b"\x00" * 100, b"null"],
)
def test_malformed_bodies_are_4xx(server: str, content: bytes) -> None:
    response = post(
        server, "/v1/score", content=content, headers={"content-type": "application/json"}
    )
    assert 400 <= response.status_code < 500


def test_a_body_over_the_limit_is_413_before_it_is_read(server: str) -> None:
    big = b'{"samples": [' + b" " * (MAX_BODY_BYTES + 10) + b"]}"
    response = post(server, "/v1/score", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413


def test_a_streamed_body_without_length_is_cut_at_the_limit(server: str) -> None:
    sent = {"bytes": 0}

    def chunks():  # chunked transfer: no Content-Length to refuse up front
        yield b'{"samples": ['
        for _ in range(100 * 1024):  # 100 MB if the server read it all
            sent["bytes"] += 1024
            yield b" " * 1024

    try:
        response = httpx.post(
            f"{server}/v1/score",
            content=chunks(),
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert response.status_code == 413
    except httpx.TransportError:
        pass  # the server answered 413 and closed while we were still sending
    assert sent["bytes"] < 50 * 1024 * 1024


def test_a_batch_over_the_limit_is_413(server: str) -> None:
    body = {"samples": [{"completion": "1"}] * (MAX_BATCH + 1)}
    response = post(server, "/v1/score", json=body)
    assert response.status_code == 413
    assert str(MAX_BATCH) in response.json()["error"]


# -- deadlines: a hanging sample is `timeout`, the others are scored -----------------------


@pytest.mark.parametrize("marker", [HANG, SPIN])
def test_a_hanging_sample_times_out_at_the_deadline_and_the_rest_is_scored(
    server: str, marker: str
) -> None:
    completions = ["a" * n for n in range(1, 8)] + [marker]
    start = time.monotonic()
    response = post(
        server,
        "/v1/score",
        json={"samples": [{"completion": c} for c in completions], "tool": "misbehaving"},
    )
    elapsed = time.monotonic() - start
    assert response.status_code == 200
    rewards = response.json()["rewards"]
    assert [r["score"] for r in rewards[:-1]] == [len(c) / 100 for c in completions[:-1]], [
        r["reason"] for r in rewards
    ]
    assert all(r["status"] == "ok" for r in rewards[:-1])
    assert rewards[-1]["status"] == "timeout" and rewards[-1]["score"] == 0.0
    assert rewards[-1]["tool"] == "misbehaving@1"
    assert elapsed < DEADLINE + LATE_MARGIN
    # The server goes on serving (the hung workers were replaced).
    after = post(server, "/v1/score", json={"samples": [{"completion": "x", "reference": "1"}]})
    assert after.status_code == 200


def test_a_sample_that_crashes_its_worker_is_error_and_the_rest_is_scored(server: str) -> None:
    body = {"samples": [{"completion": "ok"}, {"completion": CRASH}], "tool": "misbehaving"}
    rewards = post(server, "/v1/score", json=body).json()["rewards"]
    assert rewards[0] == {
        "score": 0.02,
        "status": "ok",
        "components": {},
        "tool": "misbehaving@1",
        "reason": "",
    }
    assert rewards[1]["status"] == "error" and "crashed" in rewards[1]["reason"]


def test_other_clients_are_served_while_a_batch_hangs(server: str) -> None:
    slow = threading.Thread(
        target=post,
        args=(server, "/v1/score"),
        kwargs={"json": {"samples": [{"completion": HANG}] * 2, "tool": "misbehaving"}},
    )
    slow.start()
    time.sleep(0.3)
    start = time.monotonic()
    fast = post(server, "/v1/score", json={"samples": [{"completion": "42", "reference": "42"}]})
    assert fast.status_code == 200 and fast.json()["rewards"][0]["score"] == 1.0
    assert time.monotonic() - start < DEADLINE
    slow.join()


# -- the other routes -----------------------------------------------------------------------


def test_health_tools_and_metrics(server: str) -> None:
    assert httpx.get(f"{server}/health").json() == {"status": "ok"}
    tools = httpx.get(f"{server}/v1/tools").json()["tools"]
    assert {"gsm8k", "math", "code", "misbehaving"} <= {t["name"] for t in tools}
    post(server, "/v1/score", json={"samples": [{"completion": "1", "reference": "1"}]})
    text = httpx.get(f"{server}/metrics").text
    for name in (
        'rewardsmith_http_requests_total{code="200",method="POST",route="/v1/score"}',
        "rewardsmith_http_request_seconds_bucket",
        'rewardsmith_rewards_total{status="ok",tool="gsm8k@1"}',
        "rewardsmith_in_flight_requests",
        "rewardsmith_queue_depth",
        "rewardsmith_busy_workers",
    ):
        assert name in text, name


def test_timeouts_are_counted_in_metrics(server: str) -> None:
    body = {"samples": [{"completion": "x"}, {"completion": HANG}], "tool": "misbehaving"}
    post(server, "/v1/score", json=body)
    text = httpx.get(f"{server}/metrics").text
    line = next(
        x
        for x in text.splitlines()
        if x.startswith('rewardsmith_sample_timeouts_total{source="deadline"}')
    )
    assert float(line.split()[-1]) >= 1


def test_openrlhf_route_length_mismatch_is_422(server: str) -> None:
    response = post(server, "/v1/openrlhf", json={"query": ["a", "b"], "labels": ["1"]})
    assert response.status_code == 422
    assert ["body", "labels"] in [e["loc"] for e in response.json()["detail"]]
