"""The testbed build: deterministic per seed, cached, its tokenizer keeps digits and tags whole;
prompt styles of the policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.errors import ConfigError  # noqa: E402
from rewardsmith.rl.policies import (  # noqa: E402
    POLICY_FILE,
    TESTBED_FILE,
    TESTBED_TINY,
    build_testbed,
    load_policy,
    load_pretrained,
    with_preset,
)


def test_same_seed_same_model_and_the_cache_is_reused(tiny_testbed: Path, tmp_path: Path) -> None:
    again = build_testbed(TESTBED_TINY, cache_dir=tmp_path)
    a = load_pretrained(tiny_testbed)
    b = load_pretrained(again)
    sa, sb = a.model.state_dict(), b.model.state_dict()
    assert sa.keys() == sb.keys()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert a.tokenizer.get_vocab() == b.tokenizer.get_vocab()
    # a second call finds the finished build and does not train again
    stamp = (again / TESTBED_FILE).stat().st_mtime_ns
    assert build_testbed(TESTBED_TINY, cache_dir=tmp_path) == again
    assert (again / TESTBED_FILE).stat().st_mtime_ns == stamp


def test_another_seed_is_another_cache_entry() -> None:
    assert with_preset("testbed-tiny", seed=1).key() != TESTBED_TINY.key()
    with pytest.raises(ConfigError, match="unknown testbed preset"):
        with_preset("nope")


def test_a_build_stopped_inside_its_schedule_is_its_own_cache_entry(tmp_path: Path) -> None:
    # a build that runs its whole schedule keeps the hash it had before the field existed
    # (the shipped testbed is found by it); a stopped one is another build
    assert TESTBED_TINY.key() == with_preset("testbed-tiny", sft_stop=None).key()
    stopped = with_preset("testbed-tiny", sft_stop=15)
    assert stopped.key() != TESTBED_TINY.key()
    assert stopped.key() != with_preset("testbed-tiny", sft_steps=15).key()
    for bad in (0, TESTBED_TINY.sft_steps + 1):
        with pytest.raises(ConfigError, match="sft_stop must be in"):
            build_testbed(with_preset("testbed-tiny", sft_stop=bad), cache_dir=tmp_path)
    assert not [p for p in tmp_path.iterdir() if not p.name.startswith(".")]


def test_tokenizer_keeps_digits_single_and_tags_whole(tiny_testbed: Path) -> None:
    tok = load_pretrained(tiny_testbed).tokenizer
    text = "<thinking>12+30=42.</thinking><solution>42</solution>"
    pieces = tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])
    for tag in ("<thinking>", "</thinking>", "<solution>", "</solution>"):
        assert tag in pieces
    assert [p for p in pieces if any(ch.isdigit() for ch in p)] == list("12304242")
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == text


def test_build_record_and_prompt_style(tiny_testbed: Path) -> None:
    record = json.loads((tiny_testbed / TESTBED_FILE).read_text())
    assert record["config"]["preset"] == "testbed-tiny"
    assert json.loads((tiny_testbed / POLICY_FILE).read_text())["style"] == "testbed"
    policy = load_pretrained(tiny_testbed)
    assert policy.prompt_for("How many?") == "Question: How many?\nAnswer: "


def test_unknown_policy_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown policy"):
        load_policy("no-such-policy")
