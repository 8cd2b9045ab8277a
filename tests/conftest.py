"""Shared fixtures: every test gets its own library file and REWARDSMITH_HOME.

Shared constants and helper classes live in `support.py` (import them from there: every
test folder may have a conftest.py of its own, so `import conftest` is ambiguous)."""

from __future__ import annotations

import os
import zlib
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


@pytest.fixture(autouse=True)
def _probe_seed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack corpora drawn "afresh" use one seed per test, so a run repeats; a test marked
    `fresh_probes` (or REWARDSMITH_TEST_PROBE_SEED=fresh, to fuzz) draws as users do.
    bench/bench_probe_sweep.py draws many seeds."""
    chosen = os.environ.get("REWARDSMITH_TEST_PROBE_SEED", "")
    if chosen == "fresh" or request.node.get_closest_marker("fresh_probes"):
        return
    seed = int(chosen) if chosen else zlib.crc32(request.node.nodeid.encode()) & 0x7FFFFFFF
    monkeypatch.setattr("rewardsmith.exploits.corpus.fresh_seed", lambda: seed)


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(tmp_path / "library.db")
    yield lib
    lib.close()
