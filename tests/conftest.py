"""Shared fixtures: every test gets its own library file and REWARDSMITH_HOME."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from rewardsmith.library.store import Library
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the user's ~/.rewardsmith."""
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path_factory.mktemp("home")))


@pytest.fixture
def library(tmp_path: Path) -> Iterator[Library]:
    lib = Library(tmp_path / "library.db")
    yield lib
    lib.close()


class EchoLengthTool(RewardTool):
    """A test tool: score = len(completion) / 10, 'not_applicable' for empty completions."""

    def __init__(self, name: str = "echo_length") -> None:
        self.spec = ToolSpec(name=name, needs_reference=False, provenance="user")
        self.calls = 0

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        self.calls += 1
        return [
            Reward(len(s.completion) / 10, tool=self.spec.ref)
            if s.completion
            else Reward(None, "not_applicable", tool=self.spec.ref)
            for s in samples
        ]
