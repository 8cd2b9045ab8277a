"""OverlongPenaltyTool (DAPO Eq. 13) and LengthPenaltyTool (verbosity vs the reference)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.length import LengthPenaltyTool, OverlongPenaltyTool
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="overlong", needs_reference=False)


def words(n: int) -> str:
    return " ".join(["word"] * n)


def score_one(tool: Any, completion: str, reference: str | None = None) -> Reward:
    reward: Reward = tool.score([Sample(completion, reference=reference)])[0]
    return reward


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        # DAPO's paper setting scaled down: L_max = 20, L_cache = 4, so the buffer is (16, 20]
        # up to L_max - L_cache: no penalty (an empty completion included)
        (0, 0.0),
        (10, 0.0),
        (16, 0.0),
        # inside the buffer: ((L_max - L_cache) - L) / L_cache
        (17, -0.25),
        (18, -0.5),
        (20, -1.0),
        # beyond L_max: -1
        (21, -1.0),
        (1_000, -1.0),
    ],
)
def test_overlong_penalty_follows_dapo(length: int, expected: float) -> None:
    tool = OverlongPenaltyTool(spec=SPEC, max_length=20, cache_length=4)
    reward = score_one(tool, words(length))
    assert (reward.score, reward.status) == (pytest.approx(expected), "ok")
    assert reward.components["length"] == length
    assert reward.components["limit"] == 20
    assert reward.components["penalty"] == pytest.approx(expected)


@pytest.mark.parametrize(
    ("unit", "completion", "expected"),
    [
        # chars count every character, whitespace included: 18 chars in the (16, 20] buffer
        ("chars", "x" * 18, -0.5),
        ("chars", "abc def", 0.0),
        # words are whitespace-separated, however much whitespace
        ("words", "a  b\n\nc\t" * 6, -0.5),
    ],
)
def test_overlong_units(unit: str, completion: str, expected: float) -> None:
    tool = OverlongPenaltyTool(spec=SPEC, max_length=20, cache_length=4, unit=unit)
    assert score_one(tool, completion).score == pytest.approx(expected)


@pytest.mark.parametrize("reference", [None, "", "a reference is ignored", "x" * 300_000])
def test_overlong_needs_no_reference(reference: str | None) -> None:
    tool = OverlongPenaltyTool(spec=SPEC, max_length=20, cache_length=4)
    assert score_one(tool, words(18), reference).score == pytest.approx(-0.5)


@pytest.mark.parametrize(
    "params",
    [
        # cache_length must be positive and smaller than max_length
        {"max_length": 20, "cache_length": 20},
        {"max_length": 20, "cache_length": 30},
        {"max_length": 20, "cache_length": 0},
        {"max_length": -5, "cache_length": 1},
        # not numbers
        {"max_length": "20", "cache_length": 4},
        {"max_length": True, "cache_length": 4},
        {"max_length": float("inf"), "cache_length": 4},
        # unknown unit; tokens without a tokenizer, or with a missing path; a stray tokenizer
        {"max_length": 20, "cache_length": 4, "unit": "bytes"},
        {"max_length": 20, "cache_length": 4, "unit": "tokens"},
        {"max_length": 20, "cache_length": 4, "unit": "tokens", "tokenizer": "/no/such/dir"},
        {"max_length": 20, "cache_length": 4, "unit": "words", "tokenizer": "/tmp"},
    ],
)
def test_overlong_bad_params_raise_config_error(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OverlongPenaltyTool(spec=SPEC, **params)


@pytest.mark.parametrize(
    ("length", "expected"),
    [
        # reference of 10 words, max_ratio 2: no penalty up to 20 words
        (0, 0.0),
        (10, 0.0),
        (20, 0.0),
        # then -(ratio - max_ratio) / max_ratio, reaching -1 at 40 words
        (25, -0.25),
        (30, -0.5),
        (40, -1.0),
        # clipped at -1 beyond
        (100, -1.0),
    ],
)
def test_length_penalty_relative_to_reference(length: int, expected: float) -> None:
    tool = LengthPenaltyTool(spec=SPEC, max_ratio=2.0)
    reward = score_one(tool, words(length), reference=words(10))
    assert (reward.score, reward.status) == (pytest.approx(expected), "ok")
    assert reward.components["reference_length"] == 10
    assert reward.components["ratio"] == pytest.approx(length / 10)
    assert reward.components["limit"] == 20


def test_length_penalty_in_chars_with_another_ratio() -> None:
    # reference 10 chars, max_ratio 1.5: limit 15 chars, -1 from 30 chars
    tool = LengthPenaltyTool(spec=SPEC, max_ratio=1.5, unit="chars")
    assert score_one(tool, "x" * 15, "0123456789").score == 0.0
    assert score_one(tool, "x" * 30, "0123456789").score == pytest.approx(-1.0)


@pytest.mark.parametrize(
    "reference",
    [
        # missing, blank: there is no length to compare with
        None,
        "",
        " \n ",
    ],
)
def test_length_penalty_bad_reference_is_invalid_reference(reference: str | None) -> None:
    reward = score_one(LengthPenaltyTool(spec=SPEC), words(5), reference)
    assert (reward.score, reward.status) == (None, "invalid_reference")


@pytest.mark.parametrize("max_ratio", [0, -1.0, "2", None, float("nan")])
def test_length_penalty_bad_ratio_raises_config_error(max_ratio: Any) -> None:
    with pytest.raises(ConfigError, match="max_ratio"):
        LengthPenaltyTool(spec=SPEC, max_ratio=max_ratio)


def test_megabyte_completion_is_measured_whole() -> None:
    # the length of the whole completion counts, not the clipped tail other tools read
    completion = words(250_000)
    assert len(completion) > 1_000_000
    chars = OverlongPenaltyTool(spec=SPEC, max_length=2_000_000, cache_length=1_000, unit="chars")
    reward = score_one(chars, completion)
    assert (reward.score, reward.components["length"]) == (0.0, len(completion))
    overlong = OverlongPenaltyTool(spec=SPEC, max_length=4096, cache_length=1024)
    assert score_one(overlong, completion).score == -1.0


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny word-level Hugging Face tokenizer saved to disk (punctuation splits off)."""
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel({"[UNK]": 0, "the": 1, "cat": 2}, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path_factory.mktemp("tokenizer")
    PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]").save_pretrained(path)
    return path


def test_tokens_unit_uses_the_local_tokenizer(tokenizer_dir: Path) -> None:
    # "the cat sat, on it." is 5 words but 7 tokens: buffer (4, 8] -> (4 - 7) / 4
    tool = OverlongPenaltyTool(
        spec=SPEC, max_length=8, cache_length=4, unit="tokens", tokenizer=str(tokenizer_dir)
    )
    reward = score_one(tool, "the cat sat, on it.")
    assert reward.components["length"] == 7
    assert reward.score == pytest.approx(-0.75)
    # the loaded tokenizer stays behind when the tool is pickled, and reloads on first use
    clone = pickle.loads(pickle.dumps(tool))
    assert score_one(clone, "the cat sat, on it.").score == pytest.approx(-0.75)


def test_tokenizer_that_cannot_load_raises_config_error(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    tool = OverlongPenaltyTool(
        spec=SPEC, max_length=8, cache_length=4, unit="tokens", tokenizer=str(tmp_path)
    )
    with pytest.raises(ConfigError, match="tokenizer"):
        tool.score([Sample("the cat")])


@pytest.mark.parametrize("name", ["overlong", "length"])
def test_builtins_build_from_registry(name: str) -> None:
    (builtin,) = [b for b in BUILTINS if b.spec.name == name]
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, OverlongPenaltyTool | LengthPenaltyTool)
    reward = tool.score([Sample(words(5), reference=words(5))])[0]
    assert (reward.score, reward.status) == (0.0, "ok")
