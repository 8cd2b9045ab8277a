"""Numbered checkpoints and the metrics log of a training run (shared by rm and rl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.models.checkpoints import (
    CHECKPOINTS,
    METRICS_FILE,
    STATE_FILE,
    append_metrics,
    checkpoint_dir,
    latest_checkpoint,
    saved_checkpoints,
    truncate_metrics,
    writing_checkpoint,
)


def make(out: Path, name: str, complete: bool = True) -> Path:
    path = out / CHECKPOINTS / name
    path.mkdir(parents=True)
    if complete:
        (path / STATE_FILE).write_bytes(b"state")
    return path


@pytest.mark.parametrize(
    ("names", "newest"),
    [
        # numbers, not strings: "step-1000" < "step-200" as text
        (["step-200", "step-1000", "step-30"], "step-1000"),
        # zero-padded names (GRPO runs before this change) sort right only below 10^6 steps
        (["step-999999", "step-1000000"], "step-1000000"),
        (["step-000200", "step-001000"], "step-001000"),
        # a padded old checkpoint and an unpadded new one of a resumed run
        (["step-000900", "step-1000"], "step-1000"),
    ],
)
def test_the_newest_checkpoint_is_the_highest_step(
    tmp_path: Path, names: list[str], newest: str
) -> None:
    for name in names:
        make(tmp_path, name)
    found = latest_checkpoint(tmp_path)
    assert found is not None and found.name == newest


def test_partial_and_foreign_folders_are_not_checkpoints(tmp_path: Path) -> None:
    make(tmp_path, "step-5")
    make(tmp_path, "step-9", complete=False)  # killed before its state was written
    make(tmp_path, "step-12.tmp")  # killed mid-save
    make(tmp_path, "step-x")
    make(tmp_path, "best")
    assert [step for step, _ in saved_checkpoints(tmp_path)] == [5]
    assert latest_checkpoint(tmp_path / "elsewhere") is None


def test_writing_keeps_the_newest_and_renames_when_complete(tmp_path: Path) -> None:
    for step in (100, 200, 1000):
        with writing_checkpoint(tmp_path, step, keep=2) as path:
            assert path.name == f"step-{step}.tmp"
            (path / STATE_FILE).write_text(str(step))
    assert [p.name for _, p in saved_checkpoints(tmp_path)] == ["step-200", "step-1000"]
    assert checkpoint_dir(tmp_path, 1000) == latest_checkpoint(tmp_path)
    assert not list((tmp_path / CHECKPOINTS).glob("*.tmp"))


def test_a_failed_save_leaves_the_older_checkpoints_and_no_partial_folder(
    tmp_path: Path,
) -> None:
    with writing_checkpoint(tmp_path, 1, keep=1) as path:
        (path / STATE_FILE).write_text("1")
    with pytest.raises(RuntimeError), writing_checkpoint(tmp_path, 2, keep=1) as path:
        (path / STATE_FILE).write_text("half")
        raise RuntimeError("disk full")
    assert [p.name for _, p in saved_checkpoints(tmp_path)] == ["step-1"]
    assert sorted(p.name for p in (tmp_path / CHECKPOINTS).iterdir()) == ["step-1"]


def test_truncating_metrics_keeps_the_steps_up_to_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    for step in range(1, 6):
        append_metrics(path, {"step": step, "loss": step / 10, "reward/tool": [1, 2]})
    truncate_metrics(path, 3)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows == [{"step": s, "loss": s / 10, "reward/tool": [1, 2]} for s in (1, 2, 3)]
    truncate_metrics(tmp_path / "missing.jsonl", 3)  # nothing logged yet: nothing to do


def test_a_broken_metrics_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / METRICS_FILE
    path.write_text('{"step": 1}\n{"step": 2\n')
    with pytest.raises(InputError, match=r"metrics.jsonl:2"):
        truncate_metrics(path, 1)
    path.write_text('{"step": 1}\n{"loss": 0.5}\n')
    with pytest.raises(InputError, match=r"metrics.jsonl:2: .*'step'"):
        truncate_metrics(path, 1)
    assert path.read_text() == '{"step": 1}\n{"loss": 0.5}\n'  # nothing lost
