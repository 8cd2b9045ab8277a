"""`POST /v1/score` answered by its direct path (`routes.score.DirectScore`, what
`create_app` serves) and by FastAPI's router (the same app without it) is the same answer:
status, body bytes and headers for a table of requests (200, 401, 405, 413, 422, 503, a
sample past the deadline), and the same metrics after all of them."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from server_support import HANG, running_server, wait_metric

from rewardsmith.server import ServerConfig, create_app
from rewardsmith.server.routes.score import DirectScore

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_BATCH = 5
GOOD = [
    {"completion": "48 + 24 = 72. #### 72", "reference": "72"},
    {"completion": "#### 7", "reference": "72", "id": 3, "meta": {"k": "v"}},
]

# (name, method, headers, body: JSON or raw bytes)
CASES: list[tuple[str, str, dict[str, str], Any]] = [
    # scored: the server's tool, a tool named by the request, a task map, nothing to score
    ("default tool", "POST", AUTH, {"samples": GOOD}),
    ("named tool", "POST", AUTH, {"samples": GOOD, "tool": "misbehaving"}),
    ("task map", "POST", AUTH, {"samples": [{**GOOD[0], "task": "t"}], "task_map": {"t": "gsm8k"}}),
    ("empty batch", "POST", AUTH, {"samples": []}),
    # the token, read as FastAPI's HTTPBearer reads it
    ("no token", "POST", {}, {"samples": GOOD}),
    ("wrong token", "POST", {"Authorization": "Bearer nope"}, {"samples": GOOD}),
    ("not bearer", "POST", {"Authorization": f"Basic {TOKEN}"}, {"samples": GOOD}),
    ("scheme only", "POST", {"Authorization": "Bearer"}, {"samples": GOOD}),
    ("lower-case scheme", "POST", {"Authorization": f"bearer {TOKEN}"}, {"samples": GOOD}),
    ("spaces", "POST", {"Authorization": f"Bearer   {TOKEN}"}, {"samples": GOOD}),
    # bodies the server refuses: 413 for the batch, 422 naming the field
    ("batch too large", "POST", AUTH, {"samples": [{"completion": "1"}] * (MAX_BATCH + 1)}),
    ("not JSON", "POST", AUTH, b"{not json"),
    ("not an object", "POST", AUTH, b"[1, 2]"),
    ("bad sample", "POST", AUTH, {"samples": [{"completion": 5}, {"meta": []}]}),
    ("unknown field", "POST", AUTH, {"samples": [], "taskmap": {}}),
    ("unknown tool", "POST", AUTH, {"samples": GOOD, "tool": "nope"}),
    ("unknown tool in map", "POST", AUTH, {"samples": GOOD, "task_map": {"t": "nope"}}),
    # not the scoring method: the router's 405
    ("GET", "GET", AUTH, None),
]

# The series both servers must agree on (request counts and latency counts per route,
# rewards, refusals, timeouts, restarts); /health and /metrics are polled unevenly.
COMPARED = re.compile(
    r"^rewardsmith_(http_requests_total|http_request_seconds_count|rewards_total|"
    r"rejected_requests_total|sample_timeouts_total|worker_restarts_total)\b"
)


@pytest.fixture(scope="module")
def servers(server_library: Path) -> Iterator[tuple[str, str]]:
    """(direct, routed): one config, served with and without the direct path."""
    config = ServerConfig(
        library=str(server_library),
        tool="gsm8k",
        task_map={"misbehaving": "misbehaving"},  # warms the misbehaving tool too
        token=TOKEN,
        workers=2,
        deadline_seconds=3.0,
        max_batch=MAX_BATCH,
        max_pending=1,
    )
    routed = create_app(config)
    routed.user_middleware = [m for m in routed.user_middleware if m.cls is not DirectScore]
    with running_server(config) as direct, running_server(config, app=routed) as via_router:
        yield direct, via_router


def test_the_app_answers_scoring_by_the_direct_path() -> None:
    app = create_app(ServerConfig(tool="gsm8k", workers=1))
    # Innermost of the app's middleware: after the metrics and the admission gate.
    assert app.user_middleware[-1].cls is DirectScore


def answer(url: str, method: str, headers: dict[str, str], body: Any) -> tuple[int, bytes, Any]:
    content = body if isinstance(body, bytes | None) else None
    response = httpx.request(
        method,
        f"{url}/v1/score",
        headers={"content-type": "application/json", **headers},
        content=content,
        json=None if content is not None or body is None else body,
        timeout=60,
    )
    kept = sorted((k, v) for k, v in response.headers.items() if k not in ("date",))
    return response.status_code, response.content, kept


@pytest.mark.parametrize(("name", "method", "headers", "body"), CASES, ids=[c[0] for c in CASES])
def test_same_answer_both_ways(
    servers: tuple[str, str], name: str, method: str, headers: dict[str, str], body: Any
) -> None:
    direct, routed = servers
    got = answer(direct, method, headers, body)
    assert got == answer(routed, method, headers, body)
    expected_status = {
        "no token": 401,
        "wrong token": 401,
        "not bearer": 401,
        "scheme only": 401,
        "batch too large": 413,
        "GET": 405,
    }.get(name, 422 if "not" in name or "unknown" in name or "bad" in name else 200)
    assert got[0] == expected_status, got


def test_same_503_when_full(servers: tuple[str, str]) -> None:
    answers = []
    for url in servers:
        # A slow request holds the one admission slot (max_pending 1) while another comes.
        slow = threading.Thread(
            target=httpx.post,
            args=(f"{url}/v1/score",),
            kwargs={
                "json": {"samples": [{"completion": "SLEEP2"}], "tool": "misbehaving"},
                "headers": AUTH,
                "timeout": 60,
            },
        )
        slow.start()
        wait_metric(url, "rewardsmith_busy_workers", headers=AUTH)
        answers.append(answer(url, "POST", AUTH, {"samples": GOOD}))
        slow.join()
    assert answers[0][0] == 503 and b"full" in answers[0][1]
    assert answers[0] == answers[1]


def test_same_timeout_rewards_and_then_the_same_metrics(servers: tuple[str, str]) -> None:
    # Last: a sample past the deadline (its worker killed and replaced), then every counter.
    body = {"samples": [{"completion": "x"}, {"completion": HANG}], "tool": "misbehaving"}
    direct, routed = (answer(url, "POST", AUTH, body) for url in servers)
    assert direct == routed
    assert [r["status"] for r in httpx.Response(200, content=direct[1]).json()["rewards"]] == [
        "ok",
        "timeout",
    ]
    counters = [
        sorted(
            line
            for line in httpx.get(f"{url}/metrics", headers=AUTH).text.splitlines()
            if COMPARED.match(line) and "/health" not in line and "/metrics" not in line
        )
        for url in servers
    ]
    assert any('route="/v1/score"' in line for line in counters[0])
    assert any('source="deadline"' in line for line in counters[0])
    assert any('reason="batch"' in line for line in counters[0])
    assert counters[0] == counters[1]
