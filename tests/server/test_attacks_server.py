"""Attacks on the reward server, each against a real uvicorn on loopback: clients that send
their bodies slowly, jobs larger than a pipe buffer on either event loop, retired tools named
with their version, and a stop signal while bodies are half sent. Readiness comes from the
server itself (`/health`, `/metrics` gauges), never from sleeping."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from server_support import TESTS_DIR, add_misbehaving_tool, free_port, running_server

from rewardsmith.library.store import Library
from rewardsmith.server import ServerConfig
from rewardsmith.types import ToolSpec

BODY_TIMEOUT = 3.0
FORMAT_TAGS = {"factory": "rewardsmith.tools.format:FormatTagsTool", "params": {}}


def metric(url: str, name: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    found = re.search(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def until(check: object, what: str, timeout: float = 60.0) -> None:
    """Poll the server's own signal `check()` until true (a readiness signal, not a nap)."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"the server never reported {what}")
        time.sleep(0.05)


def half_sent(url: str, declared: int = 1000) -> socket.socket:
    """A connection that sends its headers and the first bytes of a body, then nothing."""
    port = int(url.rsplit(":", 1)[1])
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(
        b"POST /v1/score HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {declared}\r\n\r\n".encode()
        + b'{"samples": ['
    )
    return sock


def status_of(sock: socket.socket) -> tuple[int, str]:
    """The status code and the whole answer the server sent on `sock`."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    text = data.decode("utf-8", "replace")
    return int(text.split(" ", 2)[1]), text


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("attacks") / "library.db"
    with Library(path) as lib:
        lib.add(ToolSpec(name="tags", provenance="user", needs_reference=False), FORMAT_TAGS)
    return path


@pytest.fixture(scope="module")
def small_server(library: Path) -> Iterator[str]:
    config = ServerConfig(
        library=str(library),
        tool="gsm8k",
        workers=2,
        deadline_seconds=30,
        max_pending=2,
        body_timeout_seconds=BODY_TIMEOUT,
    )
    with running_server(config) as url:
        yield url


def test_slow_bodies_hold_no_admission_slot_and_are_cut_off(small_server: str) -> None:
    # Twice as many slow senders as admission slots: complete requests, as many at a time as
    # there are slots, are still admitted.
    slow = [half_sent(small_server) for _ in range(4)]
    until(lambda: metric(small_server, "rewardsmith_reading_requests") == 4, "4 bodies reading")
    body = {"samples": [{"completion": "#### 72", "reference": "72"}]}
    with ThreadPoolExecutor(2) as pool:  # max_pending: more at once would be "full", rightly
        answers = list(
            pool.map(
                lambda _: httpx.post(f"{small_server}/v1/score", json=body, timeout=60), range(8)
            )
        )
    assert [a.status_code for a in answers] == [200] * 8
    assert {a.json()["rewards"][0]["score"] for a in answers} == {1.0}
    # The slow senders get 408 at the body timeout, and their connections are closed.
    for sock in slow:
        code, text = status_of(sock)
        assert code == 408 and "did not arrive within 3 s" in text, text
    assert metric(small_server, "rewardsmith_reading_requests") == 0


def test_a_retired_tool_is_not_served_when_named_with_its_version(
    small_server: str, library: Path
) -> None:
    body = {"samples": [{"completion": "<thinking>a</thinking><solution>b</solution>"}]}
    before = httpx.post(f"{small_server}/v1/score", json={**body, "tool": "tags@1"}, timeout=60)
    assert before.status_code == 200 and before.json()["rewards"][0]["score"] == 1.0
    with Library(library) as lib:
        lib.retire("tags", reason="withdrawn")
    after = httpx.post(f"{small_server}/v1/score", json={**body, "tool": "tags@1"}, timeout=60)
    assert after.status_code == 422, after.text
    assert "'tags@1' is retired" in after.json()["error"]


def test_the_servers_own_tool_retired_while_serving_is_not_served(tmp_path: Path) -> None:
    path = tmp_path / "lib.db"
    with Library(path) as lib:
        lib.add(ToolSpec(name="mine", provenance="user", needs_reference=False), FORMAT_TAGS)
    config = ServerConfig(library=str(path), tool="mine@1", workers=1, deadline_seconds=30)
    with running_server(config) as url:
        body = {"samples": [{"completion": "x"}]}
        assert httpx.post(f"{url}/v1/score", json=body, timeout=60).status_code == 200
        with Library(path) as lib:
            lib.retire("mine")
        refused = httpx.post(f"{url}/v1/score", json=body, timeout=60)
        assert refused.status_code == 422 and "is retired" in refused.json()["error"]


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_jobs_larger_than_a_pipe_buffer_are_never_lost(loop: str, tmp_path: Path) -> None:
    # Bodies of 1-6 MB and answers of a thousand rewards, many at once: every valid sample
    # comes back scored, and no worker is restarted.
    pytest.importorskip(loop)
    config = ServerConfig(
        library=str(tmp_path / "lib.db"),
        tool="gsm8k",
        workers=2,
        deadline_seconds=120,
        max_body_bytes=16 * 1024 * 1024,
        max_pending=16,
    )
    pad = "Let me add these numbers carefully, one step at a time. " * 20
    sizes = [1000, 200, 1, 3000, 1000, 500]
    with running_server(config, loop=loop) as url:

        def post(n: int) -> list[dict[str, object]]:
            samples = [
                {"completion": f"{pad} #### {i}", "reference": str(i if i % 2 else i + 1)}
                for i in range(n)
            ]
            answer = httpx.post(f"{url}/v1/score", json={"samples": samples}, timeout=300)
            assert answer.status_code == 200, answer.text[:300]
            return list(answer.json()["rewards"])

        with ThreadPoolExecutor(len(sizes)) as pool:
            results = list(pool.map(post, sizes))
        restarts = metric(url, "rewardsmith_worker_restarts_total")
    for n, rewards in zip(sizes, results, strict=True):
        assert [r["status"] for r in rewards] == ["ok"] * n
        assert [r["score"] for r in rewards] == [float(i % 2 == 1) for i in range(n)]
    assert restarts == 0


def test_sigterm_with_half_sent_bodies_answers_the_admitted_and_exits_0(tmp_path: Path) -> None:
    library = tmp_path / "lib.db"
    with Library(library) as lib:
        add_misbehaving_tool(lib)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # A deadline far longer than the test waits: a drain held by a half-sent body would show.
    proc = subprocess.Popen(
        [sys.executable, "-m", "rewardsmith.cli.main", "serve", "--port", str(port)]
        + ["--library", str(library), "--workers", "2", "--tool", "misbehaving"]
        + ["--deadline", "300", "--body-timeout", "300"],
        env={**os.environ, "PYTHONPATH": str(TESTS_DIR)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        until(lambda: _healthy(url), "ready", timeout=120)
        answer: dict[str, httpx.Response] = {}
        body = {"samples": [{"completion": "SLEEP1"}, {"completion": "abc"}]}
        admitted = threading.Thread(
            target=lambda: answer.setdefault(
                "r", httpx.post(f"{url}/v1/score", json=body, timeout=120)
            )
        )
        admitted.start()
        until(lambda: metric(url, "rewardsmith_busy_workers") == 1, "the request being scored")
        slow = [half_sent(url) for _ in range(2)]
        until(lambda: metric(url, "rewardsmith_reading_requests") == 2, "2 bodies reading")
        proc.send_signal(signal.SIGTERM)
        for sock in slow:
            code, text = status_of(sock)
            assert code == 503 and "stopping" in text and "Traceback" not in text, text
        admitted.join(timeout=120)
        assert answer["r"].status_code == 200
        assert [r["score"] for r in answer["r"].json()["rewards"]] == [0.06, 0.03]
        out, _ = proc.communicate(timeout=60)  # not the 300 s deadline, nor a 500
        assert proc.returncode == 0, out
        assert "Traceback" not in out and " 500 " not in out, out
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_tool_naming_a_local_module_is_refused_without_importing_it(tmp_path: Path) -> None:
    # The server preloads its tools' modules in its forkserver: not one the library refuses.
    marker = tmp_path / "imported"
    (tmp_path / "local_tools.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('x')\n"
        "from rewardsmith.tools.format import FormatTagsTool as Tool\n"
    )
    library = tmp_path / "lib.db"
    Library(library).close()
    conn = sqlite3.connect(library)
    with conn:
        spec = ToolSpec(name="local", provenance="user", needs_reference=False).to_dict()
        config = {"factory": "local_tools:Tool", "params": {}}
        conn.execute(
            "INSERT INTO tools (name, version, spec, config, created_at, retired) "
            "VALUES ('local', 1, ?, ?, '2024-01-01T00:00:00+00:00', 0)",
            (json.dumps(spec), json.dumps(config)),
        )
    conn.close()
    done = subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "serve", "--port", str(free_port())]
        + ["--library", str(library), "--workers", "1", "--tool", "local"],
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not allowed" in done.stderr and not marker.exists()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/health", timeout=5).status_code == 200
    except httpx.TransportError:
        return False
