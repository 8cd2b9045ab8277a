"""No silent wrong rewards from `score`: a reference of another tool's kind is
`invalid_reference`, a `--task-map` typo is exit 2, unmapped tasks get one warning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.scoring import NO_TASK, check_task_map

CODE_SAMPLES = [
    {"completion": "def f():\n    return 4", "reference": json.dumps(["assert f() == 4"])},
    {
        "completion": "def f():\n    return 4",
        "reference": json.dumps(
            {"test": "def check(candidate):\n    assert candidate() == 4", "entry_point": "f"}
        ),
    },
]


def run_score(tmp_path: Path, lines: list[dict], *args: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "score", str(src), "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )


def test_math_on_code_samples_is_invalid_reference_not_a_guessed_number(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    proc = run_score(tmp_path, CODE_SAMPLES, "-o", str(out), "--tool", "math")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["status"] for r in rows] == ["invalid_reference", "invalid_reference"]
    assert [r["reward"] for r in rows] == [None, None]
    assert "unit tests" in rows[0]["reason"] and "HumanEval record" in rows[1]["reason"]


def test_a_task_map_key_matching_no_task_is_exit_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    lines = [{"task": "gsm8k", "completion": "4", "reference": "4"}]
    proc = run_score(tmp_path, lines, "-o", str(out), "--task-map", "gsm8kk=gsm8k")
    assert proc.returncode == 2
    said = proc.stderr.replace("\n", "")
    assert "'gsm8kk' match no task" in said and "gsm8k (1)" in said
    assert not out.exists()


def test_unmapped_tasks_get_one_summary_warning(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    lines = [
        {"task": "gsm8k", "completion": "4", "reference": "4"},
        {"task": "other", "completion": "4", "reference": "4"},
        {"task": "other", "completion": "5", "reference": "4"},
        {"completion": "4", "reference": "4"},
    ]
    proc = run_score(tmp_path, lines, "-o", str(out), "--task-map", "gsm8k=gsm8k")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("warning:") == 1
    assert "3 sample(s)" in proc.stderr and "other (2)" in proc.stderr
    statuses = [json.loads(line)["status"] for line in out.read_text().splitlines()]
    assert statuses == ["ok", "not_applicable", "not_applicable", "not_applicable"]


# check_task_map on its own: what a map names against what the input holds.
@pytest.mark.parametrize(
    ("mapping", "tasks", "has_default", "unmapped"),
    [
        ({"a": "math"}, ["a", "a"], False, {}),
        ({"a": "math"}, ["a", "b", None], False, {"b": 1, NO_TASK: 1}),
        ({"a": "math"}, ["a", "b", None], True, {}),  # --tool covers the rest
    ],
)
def test_check_task_map_counts_unmapped_samples(
    mapping: dict[str, str], tasks: list[str | None], has_default: bool, unmapped: dict
) -> None:
    assert check_task_map(mapping, tasks, has_default=has_default) == unmapped


def test_check_task_map_refuses_keys_that_match_nothing() -> None:
    with pytest.raises(ConfigError, match="'mth' match no task"):
        check_task_map({"math": "math", "mth": "math"}, ["math"], has_default=False)
