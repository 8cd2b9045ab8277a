"""WrapLLM: local reward models are found (registry, folders, the Hugging Face cache),
ranked by fit to the task, calibrated on the examples, gated, and recorded with model id
and revision."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
from synth_helpers import TOPICS, topic_text

from rewardsmith.library.store import Library
from rewardsmith.rm.registry import ModelEntry, add_model
from rewardsmith.synth.examples import Example
from rewardsmith.synth.tools import calibrate
from rewardsmith.synth.wrapllm import (
    ModelCandidate,
    cache_models,
    fit_calibration,
    is_reward_model_dir,
    local_models,
    rank_models,
    wrapllm,
)


def topic_examples(n: int = 12) -> list[Example]:
    rng = random.Random(3)
    return [Example(topic_text(w, rng, 12), topic_text(w, rng, 10)) for w in (TOPICS * 2)[:n]]


def test_a_model_saved_by_rm_train_is_wrapped_and_the_gate_reports_its_auc(
    tiny_rm: Path, library: Library
) -> None:
    add_model(ModelEntry(name="topic_rm", path=str(tiny_rm), source="rm train"))
    outcome = wrapllm("continuations that stay on the topic", topic_examples(), "topic", library)
    held = outcome.report.checks["held_out"]
    # Above chance: the wrapped model ranks on-topic continuations first (a flipped sign or
    # a garbled input would put it at or under 0.5); the AUC is the one the verdict quotes.
    assert 0.5 < held["auc"] <= 1.0 and held["cases"] >= 8
    assert outcome.admitted or f"AUC {held['auc']:.3f}" in outcome.reason
    record = library.record("topic")
    assert record.retired is (not outcome.admitted)
    params = record.config["params"]
    assert params["model_id"] == "topic_rm" and params["revision"].startswith("sha256:")
    assert params["path"] == str(tiny_rm.resolve())
    assert set(params["calibration"]) == {"a", "b"}
    assert record.spec.kind == "model" and record.spec.provenance == "synth"
    assert not record.spec.needs_reference
    gate = [e for e in library.history("topic", kind="gate")]
    assert gate and gate[-1].detail["checks"]["held_out"]["auc"] == held["auc"]


def test_the_wrapped_tool_scores_in_zero_one_with_the_raw_logit_kept(
    tiny_rm: Path, library: Library
) -> None:
    from rewardsmith.synth.tools import CalibratedModelTool
    from rewardsmith.types import Sample, ToolSpec

    tool = CalibratedModelTool(
        ToolSpec(name="t", kind="model", needs_reference=False),
        path=str(tiny_rm),
        model_id="topic_rm",
        revision="r",
        calibration={"a": 2.0, "b": -1.0},
    )
    rewards = tool.score([Sample("apple apple the apple", "the apple of apple")] * 3)
    for r in rewards:
        assert r.status == "ok" and 0.0 < r.score < 1.0  # type: ignore[operator]
        assert r.score == pytest.approx(calibrate(r.components["logit"], 2.0, -1.0))


def test_models_are_found_in_folders_and_the_hf_cache_but_not_plain_backbones(
    tiny_rm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "models"
    shutil.copytree(tiny_rm, folder / "team" / "judge")
    shutil.copytree(tiny_rm.parent / "backbone", folder / "backbone")  # no reward head
    assert not is_reward_model_dir(folder / "backbone")
    # a Hugging Face cache with one snapshot of a reward model
    cache = tmp_path / "hub"
    snap = cache / "models--acme--tiny-rm" / "snapshots" / "0123456789abcdef"
    shutil.copytree(tiny_rm, snap)
    (cache / "models--acme--tiny-rm" / "refs").mkdir()
    (cache / "models--acme--tiny-rm" / "refs" / "main").write_text("0123456789abcdef")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    found = {(m.source, m.model_id, m.revision[:7]) for m in local_models([folder])}
    assert ("folder", "judge", "sha256:") in found
    assert ("hf-cache", "acme/tiny-rm", "0123456") in {
        (m.source, m.model_id, m.revision[:7]) for m in cache_models()
    }
    assert not any(m.model_id == "backbone" for m in local_models([folder]))


def test_models_are_ranked_by_fit_to_the_task() -> None:
    def model(name: str, description: str) -> ModelCandidate:
        return ModelCandidate(name, f"/m/{name}", "r", "folder", description, 1000)

    models = [
        model("helpful", "reward model for helpful and harmless chat assistant dialogues"),
        model("code_rm", "scores python code solutions for programming problems"),
        model("summ", "judges news article summaries for faithfulness"),
    ]
    ranked = rank_models("rate python programs that solve coding tasks", models)
    assert ranked[0][1].model_id == "code_rm" and ranked[0][0] > ranked[-1][0]


def test_calibration_is_monotone_and_separates_the_fitted_examples() -> None:
    raw = [3.1, 2.5, 2.9, -1.0, -0.2, 0.3]
    labels = [1, 1, 1, 0, 0, 0]
    c = fit_calibration(raw, labels)
    probs = [calibrate(s, c["a"], c["b"]) for s in raw]
    assert all(p > 0.5 for p in probs[:3]) and all(p < 0.5 for p in probs[3:])
    assert calibrate(10.0, c["a"], c["b"]) < 1.0  # regularized: never a step function
    assert sorted(probs) == [calibrate(s, c["a"], c["b"]) for s in sorted(raw)]


def test_no_local_model_is_a_clean_rejection(library: Library, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    outcome = wrapllm("anything", topic_examples(), "x", library, model_dirs=[tmp_path / "empty"])
    assert not outcome.admitted and outcome.stored_as == ""
    assert "no local reward model" in outcome.reason


@pytest.mark.network
def test_online_search_finds_downloads_and_wraps_a_hub_model(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    examples = tmp_path / "ex.jsonl"
    examples.write_text("".join(json.dumps(e.to_dict()) + "\n" for e in topic_examples()))
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env["HF_HUB_CACHE"] = str(tmp_path / "hub")
    proc = subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "synth", "wrapllm", "--online"]
        + ["--task", "helpful harmless assistant replies", "--examples", str(examples)]
        + [
            "--name",
            "hub_rm",
            "--library",
            str(tmp_path / "lib.db"),
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode in (0, 3), proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    model = report["synth"]["model"]
    assert (
        model["source"] == "hub" and model["revision"] and is_reward_model_dir(Path(model["path"]))
    )
