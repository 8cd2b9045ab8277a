"""The report says whether GRPO with the base rewards alone beat, held or harmed the
starting policy, from the two runs' verdicts on the same validation problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.search.report import _start_lines
from rewardsmith.search.results import RunDir


def _verdicts(rd: RunDir, name: str, steps: int, correct: list[bool]) -> None:
    folder = rd.run_dir(name)
    folder.mkdir(parents=True)
    sets = {"validation": {"correct": correct, "parseable": [True] * len(correct)}}
    (folder / "eval.json").write_text(json.dumps({"steps": steps, "sets": sets}))


START = [True] * 40 + [False] * 60
METRICS = {"f1": 0.4, "accuracy": 0.4, "ci95": {"f1": [0.3, 0.5], "accuracy": [0.3, 0.5]}}


@pytest.mark.parametrize(
    ("after", "verdict"),
    [
        ([False] * 30 + [True] * 10 + [False] * 60, "significantly worse than the starting"),
        ([True] * 40 + [True] * 30 + [False] * 30, "significantly better than the starting"),
        ([False] * 3 + [True] * 37 + [True] * 2 + [False] * 58, "not significantly different"),
    ],
)
def test_base_only_against_the_starting_policy(
    tmp_path: Path, after: list[bool], verdict: str
) -> None:
    rd = RunDir(tmp_path)
    _verdicts(rd, "start", 0, START)
    _verdicts(rd, "base", 120, after)
    [line, _] = _start_lines(rd, {"start": METRICS})
    assert line.startswith("Starting policy, before GRPO: F1 0.400 [0.300, 0.500].")
    assert "Base rewards alone after 120 steps against it" in line
    assert verdict in line
    if "worse" in verdict:
        assert "lower `lr` or raise `prompts_per_step`" in line


def test_no_start_no_line(tmp_path: Path) -> None:
    assert _start_lines(RunDir(tmp_path), {}) == []
