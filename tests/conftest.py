"""Shared fixtures: every test gets its own library file and REWARDSMITH_HOME.

Shared constants and helper classes live in `support.py` (import them from there: every
test folder may have a conftest.py of its own, so `import conftest` is ambiguous)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.library.store import Library


@pytest.fixture(scope="session")
def _shared_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of exported models for the whole run: the router's ONNX export is made by
    the first test that routes, not by every one (tests of the export itself use their own)."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    _shared_model_cache: Path,
) -> None:
    """No test reads or writes the user's ~/.rewardsmith."""
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path_factory.mktemp("home")))
    monkeypatch.setenv("REWARDSMITH_MODEL_CACHE", str(_shared_model_cache))


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(tmp_path / "library.db")
    yield lib
    lib.close()
