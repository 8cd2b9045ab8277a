"""Search fixtures: the tiny testbed built once per session, and a task file that uses it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from search_helpers import TINY_TASK


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
