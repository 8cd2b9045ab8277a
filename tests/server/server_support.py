"""Helpers for the server tests: a running server in a thread, and a tool that misbehaves
on purpose (imported by the scoring workers through its factory path)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from misbehaving_tool import CRASH, HANG, SLEEP, SPIN, MisbehavingTool  # noqa: F401

from rewardsmith.library.store import Library
from rewardsmith.server import ServerConfig, create_app
from rewardsmith.types import ToolSpec

# The shared test server (conftest.py): a short deadline and small limits, so timeouts and
# 413s are cheap to provoke.
DEADLINE = 3.0
MAX_BATCH = 200
MAX_BODY_BYTES = 256 * 1024


def add_misbehaving_tool(library: Library, name: str = "misbehaving") -> None:
    spec = ToolSpec(name=name, needs_reference=False, provenance="user")
    library.add(spec, {"factory": "misbehaving_tool:MisbehavingTool", "params": {}})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running_server(
    config: ServerConfig, loop: str = "auto", app: Any | None = None
) -> Iterator[str]:
    """Serve `config` (or `app`, built from it) with uvicorn in a thread (`loop`: uvicorn's
    event loop, "auto" is uvloop when installed); yields the base URL once /health is 200."""
    port = free_port()
    app = app if app is not None else create_app(config)
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", lifespan="on", loop=loop
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, thread)
        yield url
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def wait_healthy(url: str, thread: threading.Thread | None = None, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if thread is not None and not thread.is_alive():
            raise RuntimeError("the server thread ended before it was ready")
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not become healthy in {timeout} s")


def wait_metric(
    url: str,
    name: str,
    minimum: float = 1.0,
    timeout: float = 60,
    headers: dict[str, str] | None = None,
) -> None:
    """Poll /metrics until the gauge `name` is at least `minimum`: the server's own signal
    that a request is admitted or being scored, instead of a sleep that guesses it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in httpx.get(f"{url}/metrics", timeout=5, headers=headers).text.splitlines():
            if line.startswith(f"{name} ") and float(line.split()[1]) >= minimum:
                return
        time.sleep(0.02)
    raise TimeoutError(f"{name} did not reach {minimum} in {timeout} s")


TESTS_DIR = Path(__file__).resolve().parent


def mixed_samples() -> list[dict[str, object]]:
    """Real samples of three tools, tagged by task (gsm8k, math500, humaneval): right and
    wrong answers from the test fixtures, HumanEval canonical and `return None` programs."""
    import json

    from rewardsmith.tools.code.dataset import read_dataset, to_samples

    fixtures = TESTS_DIR.parent / "fixtures"
    out: list[dict[str, object]] = []
    for i, line in enumerate(
        (fixtures / "gsm8k" / "test_slice.jsonl").read_text().splitlines()[:12]
    ):
        row = json.loads(line)
        gold = row["answer"].split("####")[-1].strip()
        completion = row["answer"] if i % 3 else f"I think it is {int(gold.replace(',', '')) + 1}."
        out.append(
            {
                "id": f"g{i}",
                "prompt": row["question"],
                "completion": completion,
                "reference": gold,
                "task": "gsm8k",
            }
        )
    for i, line in enumerate(
        (fixtures / "math" / "hendrycks_is_equiv_cases.jsonl").read_text().splitlines()
    ):
        row = json.loads(line)
        out.append(
            {
                "id": f"m{i}",
                "completion": f"The answer is $\\boxed{{{row['pred']}}}$",
                "reference": row["gold"],
                "task": "math500",
            }
        )
    records = read_dataset(fixtures / "code" / "humaneval_slice.jsonl")
    for kind in ("canonical", "return_none"):
        for sample in to_samples(records, kind):
            out.append({**sample, "task": "humaneval"})
    return out


MIXED_TASK_MAP = {"gsm8k": "gsm8k", "math500": "math", "humaneval": "code"}
