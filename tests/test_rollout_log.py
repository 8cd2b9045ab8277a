"""The rollout file: what each writer writes reads back as the same sample and reward, older
and foreign layouts are read too, and a file that is not rollouts stops with the bad lines."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.errors import InputError
from rewardsmith.rollout_log import RolloutLog, read_rollouts, rollout_record
from rewardsmith.types import Reward, Sample


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# (line as a writer wrote it, stored (score, status, tool) read back, group key)
CASES = [
    # `rewardsmith score -o`: the input line plus the reward fields
    (
        {
            "id": 7,
            "prompt": "2+2?",
            "completion": "4",
            "reference": "4",
            "task": "gsm8k",
            "reward": 1.0,
            "status": "ok",
            "tool": "gsm8k@1",
            "components": {},
            "reason": "ok",
        },
        (1.0, "ok", "gsm8k@1"),
        "2+2?",
    ),
    # a sample that got no score keeps its status
    (
        {
            "completion": "x",
            "prompt": "p",
            "reward": None,
            "status": "not_applicable",
            "tool": "",
            "reason": "router: no library tool fits",
        },
        (None, "not_applicable", ""),
        "p",
    ),
    # `grpo train` before rollout lines (no status/tool): the parts name the tool
    (
        {
            "step": 3,
            "prompt": "Q",
            "completion": "<solution>5</solution>",
            "reference": "5",
            "reward": 2.0,
            "rewards": {"gsm8k": 1.0, "format_tags": 1.0},
            "correct": True,
        },
        (2.0, "ok", "gsm8k+format_tags"),
        "step 3: Q",
    ),
    # an explicit group wins over step and prompt
    (
        {"group": "step-1/prompt-0", "step": 1, "prompt": "Q", "completion": "a", "reward": 0.0},
        (0.0, "ok", ""),
        "step-1/prompt-0",
    ),
    # veRL's rollout dump (trainer.rollout_data_dir)
    (
        {"input": "Q?", "output": "#### 3", "gts": "3", "score": 1.0, "step": 2},
        (1.0, "ok", ""),
        "step 2: Q?",
    ),
    # a plain input line has no stored reward
    ({"completion": "c"}, None, "line 1"),
]


@pytest.mark.parametrize(("line", "stored", "group"), CASES)
def test_each_writer_s_line_reads_back(
    tmp_path: Path, line: dict[str, Any], stored: tuple | None, group: str
) -> None:
    (rollout,) = read_rollouts(write(tmp_path / "r.jsonl", [line]))
    got = rollout.stored
    assert (None if got is None else (got.score, got.status, got.tool)) == stored
    assert rollout.group == group
    assert rollout.sample.completion == (line.get("completion") or line.get("output"))


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        # no completion
        ([{"prompt": "p", "reward": 1.0}], "line 1: missing required field 'completion'"),
        # a reward that is not a number
        ([{"completion": "c", "reward": "high"}], "'reward' must be a number or null"),
        # a status rewardsmith does not have
        ([{"completion": "c", "reward": 1.0, "status": "great"}], "'status' must be one of"),
        # every bad line is listed, not just the first
        ([{"completion": "c"}, {"x": 1}, {"y": 2}], "2 line(s) are not rollouts"),
    ],
)
def test_lines_that_are_not_rollouts_are_listed(
    tmp_path: Path, lines: list[Any], message: str
) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_rollouts(write(tmp_path / "r.jsonl", lines))


def test_a_written_record_reads_back_as_its_sample_and_reward(tmp_path: Path) -> None:
    sample = Sample(
        "#### 4",
        prompt=[{"role": "user", "content": "2+2?"}],
        reference="4",
        task="gsm8k",
        meta={"k": 1},
        id="s1",
    )
    reward = Reward(1.0, "ok", {"part": 0.5}, "gsm8k@1", "answer 4 equals the reference")
    with RolloutLog(tmp_path / "sub" / "log.jsonl") as log:  # the folder is created
        log.write([rollout_record(sample, reward, step=2, source="test")])
    (rollout,) = read_rollouts(tmp_path / "sub" / "log.jsonl")
    assert rollout.sample == sample and rollout.stored == reward
    assert rollout.record["step"] == 2 and rollout.record["source"] == "test"


def _append(path: str, worker: int) -> None:
    log = RolloutLog(path)
    for i in range(50):
        batch = [rollout_record(Sample(f"w{worker} b{i} " + "x" * 3000), Reward(1.0))] * 8
        log.write(batch)
    log.close()


def test_concurrent_writers_never_interleave_lines(tmp_path: Path) -> None:
    # server workers append to one file at once: every line must stay whole
    path = str(tmp_path / "shared.jsonl")
    procs = [multiprocessing.Process(target=_append, args=(path, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    rollouts = read_rollouts(path)
    assert len(rollouts) == 4 * 50 * 8
    assert all(r.sample.completion.endswith("x" * 3000) for r in rollouts)


def test_a_log_that_cannot_be_opened_fails_before_any_scoring(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="cannot write the rollout log"):
        RolloutLog(tmp_path / "file" / "log.jsonl")
