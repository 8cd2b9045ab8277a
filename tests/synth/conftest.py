"""Synthesis fixtures: a tiny reward model trained once per session with `rm train`."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from synth_helpers import TOPICS, topic_text
from typer.testing import CliRunner

from rewardsmith.cli.main import app


@pytest.fixture(scope="session")
def tiny_rm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A reward model saved by `rewardsmith rm train` (2-layer, 32-wide BERT backbone with
    MiniLM's tokenizer, 60 steps on topic documents; seconds on one core)."""
    pytest.importorskip("torch")
    from rm_fixtures import make_tiny_backbone

    root = tmp_path_factory.mktemp("tiny_rm")
    backbone = make_tiny_backbone(root / "backbone")
    rng = random.Random(0)
    corpus = root / "corpus.txt"
    corpus.write_text("\n\n".join(topic_text(rng.choice(TOPICS), rng) for _ in range(300)))
    out = root / "topic_rm"
    args = ["rm", "train", "-c", str(corpus), "-o", str(out), "--backbone", str(backbone)]
    args += ["--max-steps", "60", "--batch-size", "8", "--lr", "5e-3", "--warmup-steps", "2"]
    args += ["--prefix-min", "6", "--prefix-max", "24", "--suffix-min", "6", "--suffix-max", "16"]
    args += ["--shuffle-buffer", "64", "--device", "cpu", "--threads", "1", "--no-register", "-q"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out
