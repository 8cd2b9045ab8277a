"""The veRL adapter: `compute_score` / `compute_score_batch` as veRL's reward managers call
them, the data-source mapping and its overrides, and loading the file by path."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.integrations import verl
from rewardsmith.integrations.verl import TASK_MAP_ENV, compute_score, compute_score_batch

GSM8K_SOLUTION = "Natalia sold 48/2 = 24 clips in May. 48 + 24 = 72. #### 72"
FORMATTED = "<thinking>48 + 24 = 72</thinking><solution>72</solution>"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own library file (veRL reads it from $REWARDSMITH_HOME)."""
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path))
    monkeypatch.delenv(TASK_MAP_ENV, raising=False)
    return tmp_path


@pytest.mark.parametrize(
    ("data_source", "solution", "ground_truth", "score"),
    [
        # veRL's examples/data_preprocess/gsm8k.py writes data_source "openai/gsm8k"
        ("openai/gsm8k", GSM8K_SOLUTION, "72", 1.0),
        ("openai/gsm8k", "So the answer is 70.", "72", 0.0),
        ("gsm8k", "The answer is $1,000.", "1000", 1.0),
        # ground truths read from parquet can be numbers
        ("openai/gsm8k", "#### 72", 72, 1.0),
        # a completion with no number scores 0.0 and still applies
        ("openai/gsm8k", "I don't know", "72", 0.0),
    ],
)
def test_gsm8k_data_sources(
    data_source: str, solution: str, ground_truth: Any, score: float
) -> None:
    result = compute_score(data_source, solution, ground_truth)
    assert result == {"score": score, "applicable": 1, "failed": 0}
    assert isinstance(result["score"], float)


def test_math_data_sources_use_the_math_tool() -> None:
    for source in (
        "lighteval/MATH",
        "DigitalLearningGmbH/MATH-lighteval",
        "HuggingFaceH4/MATH-500",
    ):
        assert verl.tool_for(source, None, None) == "math"
    pytest.importorskip("rewardsmith.tools.math")
    result = compute_score("HuggingFaceH4/MATH-500", "So $x = \\boxed{\\frac{1}{2}}$.", "\\frac12")
    assert result["score"] == 1.0


def test_an_unusable_ground_truth_scores_zero_and_is_marked_not_applicable() -> None:
    # veRL needs a number for every sample; `applicable` tells the logs it was not scored
    result = compute_score("openai/gsm8k", "#### 72", "seventy-two-ish")
    assert result == {"score": 0.0, "applicable": 0, "failed": 0}


def test_unknown_data_source_says_how_to_map_it() -> None:
    with pytest.raises(ConfigError) as info:
        compute_score("my_org/puzzles", "x", "y")
    message = str(info.value)
    assert "'my_org/puzzles'" in message
    assert f"{TASK_MAP_ENV}='my_org/puzzles=TOOL'" in message
    assert "reward_kwargs.tool" in message
    assert "rewardsmith_tool" in message


def test_env_task_map_adds_and_overrides_data_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TASK_MAP_ENV, "my_org/puzzles=gsm8k, openai/gsm8k=format_tags")
    assert compute_score("my_org/puzzles", "#### 3", "3")["score"] == 1.0
    # openai/gsm8k now goes to the format check: a bare answer fails it
    assert compute_score("openai/gsm8k", "#### 72", "72")["score"] == 0.0
    assert compute_score("openai/gsm8k", FORMATTED, "72")["score"] == 1.0


def test_bad_env_task_map_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TASK_MAP_ENV, "openai/gsm8k")
    with pytest.raises(ConfigError, match=rf"\${TASK_MAP_ENV} must read SOURCE=TOOL"):
        compute_score("openai/gsm8k", "#### 72", "72")


def test_extra_info_tool_beats_the_tool_kwarg_which_beats_the_data_source() -> None:
    by_kwarg = compute_score("anything", FORMATTED, "72", None, tool="format_tags")
    assert by_kwarg["score"] == 1.0
    extra = {"index": 3, "rewardsmith_tool": "gsm8k"}
    by_extra = compute_score("anything", "#### 72", "72", extra, tool="format_tags")
    assert by_extra["score"] == 1.0


def test_an_unknown_tool_name_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known tools: .*gsm8k"):
        compute_score("openai/gsm8k", "#### 72", "72", {"rewardsmith_tool": "nope"})


def test_components_are_opt_in_flat_keys_per_sample() -> None:
    gated = {"rewardsmith_tool": "gsm8k_with_format"}
    # off by default: veRL's per-sample managers need the same keys in every sample's dict
    bare = compute_score("openai/gsm8k", FORMATTED, "72", gated)
    assert bare == {"score": 1.0, "applicable": 1, "failed": 0}
    result = compute_score("openai/gsm8k", FORMATTED, "72", gated, components=True)
    assert result == {"score": 1.0, "applicable": 1, "failed": 0, "format_tags": 1.0, "gsm8k": 1.0}


def test_extra_veRL_kwargs_are_ignored() -> None:
    result = compute_score(
        data_source="openai/gsm8k",
        solution_str="#### 72",
        ground_truth="72",
        extra_info={"split": "train", "index": 0},
        sandbox_fusion_url=None,
        concurrent_semaphore=None,
    )
    assert result["score"] == 1.0


def test_batch_keeps_order_across_tools_and_gives_every_row_the_same_keys() -> None:
    results = compute_score_batch(
        data_sources=["openai/gsm8k", "openai/gsm8k", "openai/gsm8k", "openai/gsm8k"],
        solution_strs=["#### 72", FORMATTED, "#### 5", "#### 72"],
        ground_truths=["72", "72", "72", "x"],
        extra_infos=[None, {"rewardsmith_tool": "gsm8k_with_format"}, {}, None],
    )
    assert [r["score"] for r in results] == [1.0, 1.0, 0.0, 0.0]
    assert [r["applicable"] for r in results] == [1, 1, 1, 0]
    assert all(r.keys() == results[1].keys() for r in results)
    # filled in, but not with a made-up 0.0: gsm8k never ran format_tags on row 0, so
    # veRL's per-data-source means read NaN there instead of a zero
    assert math.isnan(results[0]["format_tags"]) and math.isnan(results[0]["gsm8k"])
    assert results[1]["gsm8k"] == 1.0


def test_batch_without_extra_infos_and_with_mismatched_lengths() -> None:
    assert compute_score_batch(["openai/gsm8k"], ["#### 1"], ["1"])[0]["score"] == 1.0
    with pytest.raises(ValueError, match="must match"):
        compute_score_batch(["openai/gsm8k"], ["#### 1", "#### 2"], ["1"])


def test_one_scorer_per_tool_per_process_and_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compute_score("openai/gsm8k", "#### 1", "1")
    first = verl._CACHE.scorer("gsm8k")
    compute_score("openai/gsm8k", "#### 1", "1")
    assert verl._CACHE.scorer("gsm8k") is first
    assert verl._CACHE.library is not None
    assert verl._CACHE.library.path == tmp_path / "library.db"
    other = tmp_path / "other"
    monkeypatch.setenv("REWARDSMITH_HOME", str(other))
    compute_score("openai/gsm8k", "#### 1", "1")
    assert verl._CACHE.scorer("gsm8k") is not first
    assert (other / "library.db").exists()


def test_loaded_by_path_as_verl_custom_reward_function_does() -> None:
    # veRL: spec_from_file_location("custom_module", custom_reward_function.path)
    spec = importlib.util.spec_from_file_location("custom_module", verl.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = module.compute_score
    assert fn("openai/gsm8k", GSM8K_SOLUTION, "72", {"split": "test"})["score"] == 1.0
    batch = module.compute_score_batch(
        ["openai/gsm8k"] * 2, ["#### 72", "#### 7"], ["72"] * 2, [{}, {}]
    )
    assert [r["score"] for r in batch] == [1.0, 0.0]


def test_rollout_log_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardsmith.rollout_log import read_rollouts

    monkeypatch.setenv("REWARDSMITH_ROLLOUT_LOG", str(tmp_path / "rollouts.jsonl"))
    compute_score_batch(["openai/gsm8k", "math"], ["#### 72", "\\boxed{3}"], ["72", "4"])
    rows = read_rollouts(tmp_path / "rollouts.jsonl")
    assert {(r.sample.task, r.stored.score if r.stored else None) for r in rows} == {
        ("openai/gsm8k", 1.0),
        ("math", 0.0),
    }
