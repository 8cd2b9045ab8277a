"""The LLM generator end to end against a real llama.cpp server (SmolLM2-135M): a 2-round
proxy search whose candidates, mostly not admissible Python from so small a model, are
each checked, kept with stage and reason, and fed back to the next round."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llama_server import llama_server
from rewardsmith.cli.main import app
from rewardsmith.search.results import RunDir


@pytest.mark.llm_server
def test_llm_search_against_llama_cpp(
    tiny_task: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "run"
    with llama_server(n_ctx=4096) as url:
        # The flags win over the variables (a dead endpoint here); monkeypatch restores both,
        # which the flags set for the process.
        monkeypatch.setenv("REWARDSMITH_LLM_BASE_URL", "http://127.0.0.1:9/v1")
        monkeypatch.setenv("REWARDSMITH_LLM_MODEL", "no-such-model")
        args = ["search", "run", "--task", str(tiny_task), "--generator", "llm", "--rounds", "2"]
        args += ["--per-round", "1", "--fidelity", "proxy", "--out", str(out), "--threads", "1"]
        args += ["--llm-url", url, "--llm-model", "smollm2"]
        result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rd = RunDir(out)
    records = rd.read_records()
    assert len(records) == 2
    for r in records:
        assert r.admitted is not None and r.stage in (1, 2, 3, 4)
        assert r.reason == "admitted" if r.admitted else r.reason.startswith(f"stage {r.stage}")
        assert r.details["completion_tokens"] > 0
        assert rd.source_path(r.name).exists()
    told = rd.read_feedback(2)
    assert told is not None and told.startswith("## system")
    for r in records:
        if r.round == 1 and not r.admitted:
            assert r.name in told and f"stage {r.stage}" in told
    lines = (out / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["name"] for x in lines] == [r.name for r in records]
