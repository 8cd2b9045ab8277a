"""ReasoningGymTool: reasoning-gym's own scorers, fed real entries of its datasets."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reasoning_gym

from rewardsmith.errors import ConfigError
from rewardsmith.tools import reasoning_gym as rg_tool
from rewardsmith.tools.reasoning_gym import ReasoningGymTool, extract_rg_answer
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="reasoning_gym")


def entry(dataset: str, seed: int = 7, index: int = 0, **config: Any) -> dict[str, Any]:
    """A real entry, as `create_dataset` returns it."""
    item: dict[str, Any] = reasoning_gym.create_dataset(
        dataset, size=index + 1, seed=seed, **config
    )[index]
    return item


def as_entry(item: dict[str, Any]) -> str:
    """Reference form 1: the entry itself (metadata.source_dataset names the dataset)."""
    return json.dumps(item)


def as_wrapper(item: dict[str, Any], **extra: Any) -> str:
    """Reference form 2: {"dataset", "entry"} (and optionally "config")."""
    return json.dumps({"dataset": item["metadata"]["source_dataset"], "entry": item, **extra})


def score_one(completion: str, reference: str | None, **params: Any) -> Reward:
    return ReasoningGymTool(spec=SPEC, **params).score([Sample(completion, reference=reference)])[0]


def bump_number(answer: str) -> str:
    return str(int(answer) + 1)


def reverse_words(answer: str) -> str:
    return ", ".join(reversed(answer.split(", ")))


def change_first_cell(answer: str) -> str:
    first, rest = answer[0], answer[1:]
    return ("1" if first != "1" else "2") + rest


# (dataset, how to make a wrong answer from the gold one)
DATASETS = [
    # numeric answers, default scorer: exact match 1.0
    ("basic_arithmetic", bump_number),
    ("letter_counting", bump_number),
    ("chain_sum", bump_number),
    # a list answer: descending order reversed is wrong
    ("word_sorting", reverse_words),
    # grids: the entry's tuples become JSON lists and must be turned back for `==`
    ("arc_agi", change_first_cell),
]


@pytest.mark.parametrize(("dataset", "wrong"), DATASETS)
@pytest.mark.parametrize("form", [as_entry, as_wrapper])
def test_gold_answer_scores_one_and_wrong_answer_less(dataset, wrong, form) -> None:
    item = entry(dataset)
    reference = form(item)
    gold = score_one(f"<think>work</think>\n<answer>{item['answer']}</answer>", reference)
    assert (gold.score, gold.status) == (1.0, "ok")
    assert gold.components == {"rg_score": 1.0}
    assert dataset in gold.reason
    assert gold.tool == "reasoning_gym@1"
    bad = score_one(f"<answer>{wrong(item['answer'])}</answer>", reference)
    assert bad.status == "ok"
    assert bad.score is not None and bad.score < 1.0


def test_last_answer_tag_wins() -> None:
    item = entry("basic_arithmetic")
    completion = f"<answer>{bump_number(item['answer'])}</answer> wait, no: <answer>{item['answer']}</answer>"
    assert score_one(completion, as_entry(item)).score == 1.0


def test_partial_credit_passes_through() -> None:
    # The default scorer gives len(oracle)/len(answer) when the oracle is inside the answer.
    item = entry("letter_counting")
    answer = f"{item['answer']} times"
    reward = score_one(f"<answer>{answer}</answer>", as_entry(item))
    assert reward.score == pytest.approx(len(item["answer"]) / len(answer))
    assert "partial" in reward.reason


# Completions without <answer> tags, per fallback
MISSING_TAGS = [
    # default: the last non-empty line, where a chat model puts its bare final answer
    ("last_line", "Let me count.\n{gold}\n\n", 1.0),
    ("last_line", "I counted {gold} before.\nDone.", 0.0),
    # ... after any marked final answer ("The answer is", "Final answer:", \boxed{})
    ("last_line", "The answer is {gold}, I think.\nDone.", 1.0),
    ("last_line", "Final answer: \\boxed{{{gold}}}", 1.0),
    # the whole completion: the gold inside a longer text gets partial credit only
    ("all", "Let me count.\n{gold}", "partial"),
    # reasoning-gym's own evaluation: no tags, no answer
    ("none", "{gold}", 0.0),
]


@pytest.mark.parametrize(("fallback", "template", "expected"), MISSING_TAGS)
def test_missing_tags(fallback, template, expected) -> None:
    item = entry("basic_arithmetic")
    reward = score_one(template.format(gold=item["answer"]), as_entry(item), fallback=fallback)
    assert reward.status == "ok"
    if expected == "partial":
        assert reward.score is not None and 0.0 < reward.score < 1.0
    else:
        assert reward.score == expected


def test_no_tags_with_fallback_none_says_why() -> None:
    reward = score_one("42", as_entry(entry("basic_arithmetic")), fallback="none")
    assert (reward.score, reward.status) == (0.0, "ok")
    assert "no <answer> tags" in reward.reason


def test_empty_completion_scores_zero() -> None:
    reward = score_one("   \n", as_entry(entry("basic_arithmetic")))
    assert (reward.score, reward.status) == (0.0, "ok")


# References that cannot be used: (reference, words the reason must contain)
BAD_REFERENCES = [
    ("{not json", "not JSON"),
    ('"just a string"', "JSON object"),
    (json.dumps({"question": "q", "answer": "1"}), "names no dataset"),
    (json.dumps({"dataset": "no_such_dataset", "entry": {"answer": "1"}}), "unknown"),
    (json.dumps({"answer": "1", "metadata": {"source_dataset": "no_such_dataset"}}), "unknown"),
    (json.dumps({"dataset": "basic_arithmetic", "entry": {"question": "1+1"}}), "answer"),
    (json.dumps({"dataset": "basic_arithmetic", "entry": {"answer": 2}}), "answer"),
    (json.dumps({"dataset": "basic_arithmetic", "entry": "2"}), "entry"),
    (
        json.dumps(
            {"dataset": "basic_arithmetic", "entry": {"answer": "2"}, "config": {"bogus": 1}}
        ),
        "cannot build",
    ),
    ("", "not JSON"),
]


@pytest.mark.parametrize(("reference", "words"), BAD_REFERENCES)
def test_bad_reference_is_invalid_reference(reference, words) -> None:
    reward = score_one("<answer>2</answer>", reference)
    assert (reward.score, reward.status) == (None, "invalid_reference")
    assert words in reward.reason


def test_missing_reference_is_invalid_reference() -> None:
    assert score_one("<answer>2</answer>", None).status == "invalid_reference"


def test_config_reaches_scorers_that_read_it() -> None:
    # decimal_arithmetic accepts answers within 10**-max_num_decimal_places of the gold one;
    # the default config has 3 places, so an answer 0.05 off passes only with 1 place.
    item = entry("decimal_arithmetic")
    off = str(float(item["answer"]) + 0.05)
    config = {"min_num_decimal_places": 1, "max_num_decimal_places": 1}
    assert score_one(f"<answer>{off}</answer>", as_wrapper(item)).score == 0.0
    assert score_one(f"<answer>{off}</answer>", as_wrapper(item, config=config)).score == 1.0


def test_scorer_exception_scores_zero_with_error(monkeypatch) -> None:
    def broken(answer: str | None, item: dict[str, Any]) -> float:
        raise RuntimeError("scorer blew up")

    monkeypatch.setattr(rg_tool, "_score_fn", lambda name, config_json: broken)
    reward = score_one("<answer>1</answer>", as_entry(entry("basic_arithmetic")))
    assert (reward.score, reward.status) == (0.0, "error")
    assert "scorer blew up" in reward.reason


def test_batch_mixes_datasets_in_order() -> None:
    items = [entry("basic_arithmetic"), entry("letter_counting"), entry("word_sorting")]
    samples = [Sample(f"<answer>{it['answer']}</answer>", reference=as_entry(it)) for it in items]
    samples.insert(1, Sample("<answer>1</answer>", reference="{bad"))
    rewards = ReasoningGymTool(spec=SPEC).score(samples)
    assert [r.status for r in rewards] == ["ok", "invalid_reference", "ok", "ok"]
    assert [r.score for r in rewards] == [1.0, None, 1.0, 1.0]


def test_unknown_fallback_is_config_error() -> None:
    with pytest.raises(ConfigError, match="fallback"):
        ReasoningGymTool(spec=SPEC, fallback="first_line")


# extract_rg_answer on its own: (completion, fallback, expected answer)
EXTRACT_CASES = [
    ("<answer> 12 </answer>", "last_line", "12"),
    ("<answer>a</answer><answer>b</answer>", "none", "b"),
    ("<answer>\n1 2\n3 4\n</answer>", "none", "1 2\n3 4"),
    ("work\n\n  7  \n", "last_line", "7"),
    ("1 2\n3 4", "all", "1 2\n3 4"),
    ("7", "none", None),
    ("", "last_line", None),
]


@pytest.mark.parametrize(("completion", "fallback", "expected"), EXTRACT_CASES)
def test_extract(completion, fallback, expected) -> None:
    assert extract_rg_answer(completion, fallback) == expected
