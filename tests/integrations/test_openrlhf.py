"""The OpenRLHF adapter: `reward_func(queries, prompts, labels)` as OpenRLHF calls it, the
tensors it reads back, and loading the file by path (`--reward.remote_url file.py`)."""

from __future__ import annotations

import importlib.util
import pickle
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.integrations import openrlhf  # noqa: E402
from rewardsmith.integrations.openrlhf import (  # noqa: E402
    COMPONENTS_ENV,
    TOOL_ENV,
    make_reward_func,
    response_text,
    reward_func,
)

PROMPT = "<|user|>Natalia sold 48 clips in April and half as many in May. How many?<|assistant|>"
FORMATTED = "<thinking>48 + 24 = 72</thinking><solution>72</solution>"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path))
    monkeypatch.delenv(TOOL_ENV, raising=False)
    monkeypatch.delenv(COMPONENTS_ENV, raising=False)
    return tmp_path


@pytest.mark.parametrize(
    ("query", "prompt", "expected"),
    [
        # the normal case: query = prompt + response
        ("Q: 2+2? A: 4", "Q: 2+2? ", "A: 4"),
        # decoding put a BOS marker in front of the prompt
        ("<s>Q: 2+2? A: 4", "Q: 2+2? ", "A: 4"),
        # the prompt is not found (re-tokenization changed it): the whole query is scored
        ("Q:  2+2?  A: 4", "Q: 2+2? ", "Q:  2+2?  A: 4"),
        # no prompt given
        ("A: 4", "", "A: 4"),
    ],
)
def test_response_text(query: str, prompt: str, expected: str) -> None:
    assert response_text(query, prompt) == expected


def test_reward_func_returns_what_openrlhf_reads() -> None:
    responses = ["48 / 2 = 24, 48 + 24 = 72. #### 72", "The answer is 70.", "no idea"]
    out = reward_func([PROMPT + r for r in responses], [PROMPT] * 3, ["72"] * 3)
    assert set(out) == {"rewards", "scores", "extra_logs"}
    for tensor in (out["rewards"], out["scores"], *out["extra_logs"].values()):
        assert isinstance(tensor, torch.Tensor)
        assert tensor.dtype == torch.float32
        assert tensor.shape == (3,)
    assert out["rewards"].tolist() == [1.0, 0.0, 0.0]
    assert out["scores"].tolist() == [1.0, 0.0, 0.0]
    assert set(out["extra_logs"]) == {"applicable", "failed"}


def test_the_prompt_is_not_scored() -> None:
    # the prompt holds numbers (48) and the response none: gsm8k must not see the prompt's
    out = reward_func([PROMPT + "I cannot tell."], [PROMPT], ["48"])
    assert out["rewards"].tolist() == [0.0]


def test_unusable_label_scores_zero_and_is_not_applicable() -> None:
    out = reward_func([PROMPT + "#### 72", PROMPT + "#### 72"], [PROMPT] * 2, ["72", "n/a"])
    assert out["rewards"].tolist() == [1.0, 0.0]
    assert out["extra_logs"]["applicable"].tolist() == [1.0, 0.0]


def test_tool_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOL_ENV, "format_tags")
    out = reward_func([PROMPT + FORMATTED, PROMPT + "#### 72"], [PROMPT] * 2, ["72", "72"])
    assert out["rewards"].tolist() == [1.0, 0.0]


def test_scores_for_dynamic_filtering_stay_in_zero_one() -> None:
    # the verbosity penalty is negative; OpenRLHF's dynamic filtering expects [0, 1] scores
    func = make_reward_func("length")
    out = func(["q " + "word " * 50, "q ok"], ["q ", "q "], ["two words", "two words"])
    assert out["rewards"][0] < 0.0
    assert out["scores"].tolist() == [0.0, 0.0]


def test_labels_may_be_missing_or_not_strings() -> None:
    func = make_reward_func("format_tags")  # needs no reference
    assert func([FORMATTED], None, None)["rewards"].tolist() == [1.0]
    gsm8k = make_reward_func("gsm8k")
    assert gsm8k(["q #### 72"], ["q "], [72])["rewards"].tolist() == [1.0]


def test_components_are_opt_in_and_keep_their_keys_across_batches() -> None:
    plain = make_reward_func("gsm8k_with_format")
    assert set(plain([FORMATTED], [""], ["72"])["extra_logs"]) == {"applicable", "failed"}

    func = make_reward_func("gsm8k_with_format", components=True)
    first = func([FORMATTED, "#### 72"], ["", ""], ["72", "72"])["extra_logs"]
    assert first["format_tags"].tolist() == [1.0, 0.0]
    assert first["gsm8k"].shape == (2,)
    # OpenRLHF takes the keys of the first batch for every batch: a later one keeps them all
    later = func(["#### 72"], [""], ["x"])["extra_logs"]
    assert set(first) <= set(later)


def test_components_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOL_ENV, "gsm8k_with_format")
    monkeypatch.setenv(COMPONENTS_ENV, "1")
    assert "format_tags" in reward_func([FORMATTED], [""], ["72"])["extra_logs"]


def test_task_map_routes_by_the_tasks_argument() -> None:
    func = make_reward_func("gsm8k", task_map={"fmt": "format_tags"})
    out = func(["#### 72", "#### 72"], ["", ""], ["72", "72"], tasks=["gsm8k", "fmt"])
    assert out["rewards"].tolist() == [1.0, 0.0]


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="2 labels for 1 queries"):
        reward_func(["q"], ["q"], ["1", "2"])


def test_pickle_round_trip(tmp_path: Path) -> None:
    func = make_reward_func("gsm8k", library=tmp_path / "lib.db")
    func(["#### 1"], [""], ["1"])
    clone = pickle.loads(pickle.dumps(func))
    assert clone._scorer is None
    assert clone(["#### 2"], [""], ["2"])["rewards"].tolist() == [1.0]


def test_env_library_change_gets_a_new_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reward_func(["#### 1"], [""], ["1"])
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path / "other"))
    reward_func(["#### 1"], [""], ["1"])
    assert (tmp_path / "library.db").exists()
    assert (tmp_path / "other" / "library.db").exists()
    assert {key[2] for key in openrlhf._FUNCS} >= {
        str(tmp_path / "library.db"),
        str(tmp_path / "other" / "library.db"),
    }


def test_loaded_by_path_as_openrlhf_does() -> None:
    # OpenRLHF: spec_from_file_location("reward_func", remote_rm_url); module.reward_func
    spec = importlib.util.spec_from_file_location("reward_func", openrlhf.__file__)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.reward_func([PROMPT + "#### 72"], [PROMPT], ["72"])
    assert out["rewards"].tolist() == [1.0]


def test_rollout_log_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardsmith.rollout_log import read_rollouts

    monkeypatch.setenv("REWARDSMITH_ROLLOUT_LOG", str(tmp_path / "rollouts.jsonl"))
    func = make_reward_func("gsm8k", library=tmp_path / "lib.db")
    func(["Q: 2+2? A: #### 4", "Q: 2+2? A: #### 5"], ["Q: 2+2? A: ", "Q: 2+2? A: "], ["4", "4"])
    rows = read_rollouts(tmp_path / "rollouts.jsonl")
    assert [r.stored.score for r in rows if r.stored] == [1.0, 0.0]
    assert rows[0].group == rows[1].group and rows[0].record["source"] == "openrlhf"
