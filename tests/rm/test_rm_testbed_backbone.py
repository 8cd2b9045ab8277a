"""The shipped testbed policy as an RBS backbone (`rm train --backbone testbed`): it
resolves to the shipped folder, reads `pair` windows, and its tokenizer (spaces inside its
tokens, digits one by one) still gives splits at word boundaries and inside calculations."""

from __future__ import annotations

import random

import pytest

from rewardsmith.rm.backbones import SHIPPED_TESTBED, resolve_backbone
from rewardsmith.rm.data import SplitConfig, split_document
from rewardsmith.rm.train import TrainConfig

transformers = pytest.importorskip("transformers")

DOC = (
    "Question: Ada buys 5 stamps at 2 dollars each and pays with 58 dollars. How much change "
    "does Ada get?\nAnswer:\n\n<thinking>5*2=10. 58-10=48.</thinking><solution>48</solution>"
)


@pytest.fixture(scope="module")
def testbed_tokenizer():  # type: ignore[no-untyped-def]
    return transformers.AutoTokenizer.from_pretrained(resolve_backbone("testbed"))


def test_the_alias_names_the_shipped_policy_and_its_pair_format() -> None:
    assert resolve_backbone("testbed") == str(SHIPPED_TESTBED)
    assert resolve_backbone("Testbed") == str(SHIPPED_TESTBED)
    assert TrainConfig(backbone="testbed").format() == "pair"
    # an explicit format, and the other backbones' defaults, are unchanged
    assert TrainConfig(backbone="testbed", input_format="chat").format() == "chat"
    assert TrainConfig(backbone="minilm").format() == "chat"


def test_splits_fall_between_words_and_inside_calculations(testbed_tokenizer) -> None:  # type: ignore[no-untyped-def]
    config = SplitConfig(prefix_min=4, prefix_max=96, suffix_min=2, suffix_max=64)
    rng = random.Random(0)
    seen = set()
    for _ in range(300):
        pair = split_document(DOC, testbed_tokenizer, config, rng)
        assert pair is not None  # round 2's rule found no split at all with this tokenizer
        cut = len(pair.prefix)
        assert DOC.endswith(pair.suffix) or DOC[cut:].startswith(pair.suffix)
        before, after = DOC[cut - 1], DOC[cut]
        # never inside a word or a number: "Ad|a", "4|8"
        assert not (before.isalnum() and after.isalnum()), (pair.prefix[-10:], pair.suffix[:10])
        seen.add(pair.prefix[-3:])
    # splits right after "=" exist: the suffix starts with the result to be computed
    assert any(p.endswith("=") for p in seen)
