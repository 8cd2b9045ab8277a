"""Search fixtures: the tiny testbed built once per session, and a task file that uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the `testbed-tiny` build (seconds)."""
    pytest.importorskip("torch")
    from rewardsmith.rl.policies import TESTBED_TINY, build_testbed

    cache = tmp_path_factory.mktemp("testbed")
    build_testbed(TESTBED_TINY, cache_dir=cache)
    return cache


@pytest.fixture
def tiny_task(tmp_path: Path, tiny_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A task file: the tiny testbed, a small pool, small held-out sets, short completions."""
    monkeypatch.setenv("REWARDSMITH_TESTBED_CACHE", str(tiny_cache))
    path = tmp_path / "tiny_task.json"
    path.write_text(json.dumps(TINY_TASK))
    return path


TINY_TASK = {
    "name": "tiny",
    "description": "Arithmetic word problems; answer in <solution> tags.",
    "policy": "testbed-tiny",
    "validation_size": 12,
    "test_size": 12,
    "pool_prompts": 4,
    "pool_group": 4,
    "eval_max_new_tokens": 24,
    "grpo": {"max_new_tokens": 16, "lora_rank": 0, "prompts_per_step": 2, "group_size": 2},
}
