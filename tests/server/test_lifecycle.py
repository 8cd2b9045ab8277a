"""`rewardsmith serve` as a process: refusing an unsafe bind, the token, back-pressure (503
with Retry-After, which the client honours), and a graceful drain on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from server_support import TESTS_DIR, free_port, running_server, wait_healthy, wait_metric

from rewardsmith.client import AsyncRewardClient, RewardClient
from rewardsmith.errors import ConfigError, ServiceError
from rewardsmith.server import ServerConfig

REPO = TESTS_DIR.parent.parent


def serve_process(library: Path, port: int, *args: str, **env: str) -> subprocess.Popen[str]:
    environ = {**os.environ, "PYTHONPATH": str(TESTS_DIR), **env}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rewardsmith.cli.main",
            "serve",
            "--port",
            str(port),
            "--library",
            str(library),
            "--workers",
            "2",
            *args,
        ],
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_non_loopback_bind_without_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="without a token"):
        ServerConfig(host="0.0.0.0").validate()
    ServerConfig(host="0.0.0.0", token="t").validate()
    ServerConfig(host="::1").validate()
    proc = serve_process(tmp_path / "lib.db", free_port(), "--host", "0.0.0.0", "--tool", "gsm8k")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "without a token" in out


def test_token_is_required_when_set(server_library: Path) -> None:
    config = ServerConfig(library=str(server_library), tool="gsm8k", workers=1, token="s3cret")
    with running_server(config) as url:
        body = {"samples": [{"completion": "1", "reference": "1"}]}
        assert httpx.post(f"{url}/v1/score", json=body).status_code == 401
        wrong = {"Authorization": "Bearer nope"}
        assert httpx.post(f"{url}/v1/score", json=body, headers=wrong).status_code == 401
        assert httpx.get(f"{url}/v1/tools").status_code == 401
        assert httpx.get(f"{url}/metrics").status_code == 401
        assert httpx.get(f"{url}/health").status_code == 200  # probes need no token
        with RewardClient(url, token="s3cret") as client:
            assert client.score([{"completion": "1", "reference": "1"}])[0].score == 1.0
        with RewardClient(url, token="nope") as client, pytest.raises(ServiceError, match="401"):
            client.score([{"completion": "1"}])


def test_full_server_answers_503_with_retry_after_and_the_client_retries(
    server_library: Path,
) -> None:
    config = ServerConfig(
        library=str(server_library),
        tool="misbehaving",
        workers=1,
        max_pending=1,
        deadline_seconds=10,
    )
    with running_server(config) as url:
        slow = threading.Thread(
            target=httpx.post,
            args=(f"{url}/v1/score",),
            kwargs={"json": {"samples": [{"completion": "SLEEP2"}]}, "timeout": 30},
        )
        slow.start()
        wait_metric(url, "rewardsmith_busy_workers")  # the slow request holds the only slot
        refused = httpx.post(f"{url}/v1/score", json={"samples": [{"completion": "x"}]})
        assert refused.status_code == 503
        assert int(refused.headers["retry-after"]) >= 1
        assert "full" in refused.json()["error"]
        # The client waits Retry-After and gets through once the slow request is done.
        start = time.monotonic()
        with RewardClient(url) as client:
            assert client.score([{"completion": "xx"}])[0].score == 0.02
        assert time.monotonic() - start >= 1.0
        slow.join()
        assert (
            'rewardsmith_rejected_requests_total{reason="full"}' in httpx.get(f"{url}/metrics").text
        )


def test_client_retries_until_the_server_comes_up(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    result: dict[str, object] = {}
    refused = threading.Event()

    class WatchedClient(AsyncRewardClient):
        def _retryable(self, attempt: int, response: object, exc: Exception | None) -> bool:
            if isinstance(exc, httpx.ConnectError):
                refused.set()
            return super()._retryable(attempt, response, exc)

    def call() -> None:
        import asyncio

        async def go() -> object:
            async with WatchedClient(url, retries=12) as client:
                return await client.score([{"completion": "#### 3", "reference": "3"}])

        result["rewards"] = asyncio.run(go())

    caller = threading.Thread(target=call)
    caller.start()
    assert refused.wait(timeout=30)  # the client was refused before the server started
    proc = serve_process(tmp_path / "lib.db", port, "--tool", "gsm8k")
    try:
        caller.join(timeout=120)
        assert result["rewards"][0].score == 1.0  # type: ignore[index]
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_sigterm_drains_in_flight_requests_and_exits_0(tmp_path: Path) -> None:
    from server_support import add_misbehaving_tool

    from rewardsmith.library.store import Library

    library = tmp_path / "lib.db"
    with Library(library) as lib:
        add_misbehaving_tool(lib)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = serve_process(library, port, "--tool", "misbehaving", "--deadline", "30")
    try:
        wait_healthy(url)
        answer: dict[str, httpx.Response] = {}
        body = {"samples": [{"completion": "SLEEP2"}, {"completion": "abc"}]}
        inflight = threading.Thread(
            target=lambda: answer.setdefault(
                "r", httpx.post(f"{url}/v1/score", json=body, timeout=60)
            )
        )
        inflight.start()
        wait_metric(url, "rewardsmith_busy_workers")  # the request is being scored
        proc.send_signal(signal.SIGTERM)
        inflight.join(timeout=60)
        assert answer["r"].status_code == 200
        assert [r["score"] for r in answer["r"].json()["rewards"]] == [0.06, 0.03]
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out
        with pytest.raises(httpx.TransportError):  # no longer listening
            httpx.get(f"{url}/health", timeout=2)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_health_is_503_until_the_workers_are_warm(tmp_path: Path) -> None:
    from rewardsmith.library.store import Library
    from rewardsmith.types import ToolSpec

    library = tmp_path / "lib.db"
    with Library(library) as lib:
        spec = ToolSpec(name="slow_start", needs_reference=False, provenance="user")
        lib.add(
            spec, {"factory": "misbehaving_tool:MisbehavingTool", "params": {"start_seconds": 4}}
        )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = serve_process(library, port, "--tool", "slow_start")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                starting = httpx.get(f"{url}/health", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        assert starting.status_code == 503 and starting.json() == {"status": "starting"}
        assert "retry-after" in starting.headers
        body = {"samples": [{"completion": "x"}]}
        assert httpx.post(f"{url}/v1/score", json=body).status_code == 503
        wait_healthy(url)
        assert httpx.post(f"{url}/v1/score", json=body).json()["rewards"][0]["score"] == 0.01
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_unknown_tool_stops_the_server_at_start_with_a_message(tmp_path: Path) -> None:
    proc = serve_process(tmp_path / "lib.db", free_port(), "--tool", "no_such_tool")
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "unknown tool 'no_such_tool'" in out


# Which modules the forkserver imports once for every worker: a routing server's include
# what the router's embedding model needs (onnxruntime, or torch and transformers: seconds
# per worker otherwise); a one-tool or rules-routing server's pull in neither.
@pytest.mark.parametrize(
    "tool, router, preloads_model",
    [(None, "embedded", True), ("gsm8k", "embedded", False), (None, "rules", False)],
)
def test_a_routing_server_imports_the_embedding_model_once_for_all_workers(
    tmp_path: Path, tool: str | None, router: str, preloads_model: bool
) -> None:
    from rewardsmith.router.embedder import MODEL_MODULES, ONNX_MODULES, model_modules
    from rewardsmith.server.engine import ScoringEngine

    config = ServerConfig(library=str(tmp_path / "lib.db"), tool=tool, router=router, workers=1)
    engine = ScoringEngine(config)
    try:
        modules = set(engine._factory_modules())
    finally:
        engine.library.close()
    model = set(model_modules())
    assert model <= modules if preloads_model else not modules & (set(MODEL_MODULES) | model)
    if preloads_model:  # one runtime's, not both
        assert not modules & (set(ONNX_MODULES) if model == set(MODEL_MODULES) else {"torch"})
