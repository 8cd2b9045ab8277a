"""examples/mixed.jsonl: the bundled multi-task batch that `make run` scores."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.tools.reasoning_gym import ReasoningGymTool
from rewardsmith.types import Sample, ToolSpec

REPO = Path(__file__).resolve().parents[1]
MIXED = REPO / "examples" / "mixed.jsonl"
BUILDER = REPO / "examples" / "build_mixed.py"
SHARED_DATA = REPO.parent / "shared" / "data"

TASKS = {
    "gsm8k",
    "math500",
    "format",
    "multiple_choice",
    "translation",
    "rg_basic_arithmetic",
    "rg_letter_counting",
    "word_reversal",
}
EXPECTED = {"correct", "wrong", "partial"}


def load() -> list[dict[str, Any]]:
    with MIXED.open(encoding="utf-8") as f:
        return [json.loads(text) for text in f]


def test_every_line_is_a_sample_with_provenance() -> None:
    lines = load()
    for item in lines:
        assert set(item) == {"id", "prompt", "completion", "reference", "task", "meta"}, item["id"]
        assert isinstance(item["completion"], str) and item["completion"].strip(), item["id"]
        assert item["reference"] is None or isinstance(item["reference"], str), item["id"]
        meta = item["meta"]
        assert meta["expected"] in EXPECTED, item["id"]
        assert meta["simulated"] is True, item["id"]
        assert isinstance(meta["source"], dict) and "index" in meta["source"], item["id"]
        assert "file" in meta["source"] or "dataset" in meta["source"], item["id"]


def test_ids_unique_and_all_tasks_present() -> None:
    lines = load()
    ids = [item["id"] for item in lines]
    assert len(ids) == len(set(ids))
    counts = Counter(item["task"] for item in lines)
    assert set(counts) == TASKS
    assert all(10 <= n <= 15 for n in counts.values()), counts


def test_every_task_has_right_and_wrong_completions() -> None:
    by_task: dict[str, set[str]] = {}
    for item in load():
        by_task.setdefault(item["task"], set()).add(item["meta"]["expected"])
    for task, expected in by_task.items():
        assert {"correct", "wrong"} <= expected, task


def test_only_format_task_lacks_references() -> None:
    for item in load():
        assert (item["reference"] is None) == (item["task"] == "format"), item["id"]


def test_reasoning_gym_references_score_as_labelled() -> None:
    items = [item for item in load() if item["task"].startswith("rg_")]
    samples = [Sample(it["completion"], reference=it["reference"]) for it in items]
    rewards = ReasoningGymTool(spec=ToolSpec(name="reasoning_gym")).score(samples)
    for item, reward in zip(items, rewards, strict=True):
        assert reward.status == "ok", (item["id"], reward.reason)
        assert reward.score is not None
        if item["meta"]["expected"] == "correct":
            assert reward.score == 1.0, (item["id"], reward.reason)
        else:
            assert reward.score < 1.0, (item["id"], reward.reason)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="needs ../shared/data beside the checkout")
def test_builder_reproduces_the_checked_in_file(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("build_mixed", BUILDER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "mixed.jsonl"
    module.main(["--data", str(SHARED_DATA), "--out", str(out)])
    assert out.read_text(encoding="utf-8") == MIXED.read_text(encoding="utf-8")


def test_the_task_no_built_in_grades_has_plain_answers_as_references() -> None:
    items = [item for item in load() if item["task"] == "word_reversal"]
    assert len(items) == 12
    for item in items:
        # the answer itself, not the reasoning-gym entry the `reasoning_gym` tool reads
        assert not item["reference"].lstrip().startswith("{"), item["id"]
        assert item["meta"]["source"]["dataset"] == "word_sequence_reversal"
        right = item["meta"]["expected"] == "correct"
        assert (item["reference"] in item["completion"]) is right, item["id"]


STREAM = REPO / "examples" / "stream.jsonl"


def test_the_training_stream_is_the_multi_task_rl_split(tmp_path: Path) -> None:
    from rewardsmith.rl.families import FAMILIES

    rows = [json.loads(line) for line in STREAM.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 400 and {r["task"] for r in rows} == set(FAMILIES)
    for row in rows:
        assert FAMILIES[row["task"]].correct(row["reference"], row["reference"])
    spec = importlib.util.spec_from_file_location(
        "build_stream", REPO / "examples" / "build_stream.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--out", str(tmp_path / "stream.jsonl")])
    assert (tmp_path / "stream.jsonl").read_text(encoding="utf-8") == STREAM.read_text(
        encoding="utf-8"
    )
