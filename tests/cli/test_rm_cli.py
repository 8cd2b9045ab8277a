"""`rewardsmith rm train` and `rm eval` as a user runs them (tiny backbone, a few steps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")

from rewardsmith.cli.main import app  # noqa: E402
from rewardsmith.errors import InputError  # noqa: E402
from rewardsmith.library.store import Library  # noqa: E402
from rewardsmith.rm.registry import list_models  # noqa: E402
from rm_fixtures import make_tiny_backbone  # noqa: E402

runner = CliRunner()

DOC = (
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in "
    "May. How many clips did Natalia sell altogether in April and May? Natalia sold 48/2 = 24 "
    "clips in May. Natalia sold 48+24 = 72 clips altogether in April and May. #### 72"
)


def test_train_then_eval_then_score(tmp_path: Path) -> None:
    backbone = make_tiny_backbone(tmp_path / "tiny")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"body": f"Doc {i}. {DOC}"}) + "\n" for i in range(40)))
    out, lib = tmp_path / "rm", tmp_path / "lib.db"
    result = runner.invoke(
        app,
        [
            "rm",
            "train",
            "--corpus",
            str(corpus),
            "--field",
            "body",
            "--out",
            str(out),
            "--backbone",
            str(backbone),
            "--max-steps",
            "3",
            "--batch-size",
            "4",
            "--negatives",
            "2",
            "--prefix-min",
            "8",
            "--suffix-min",
            "8",
            "--device",
            "cpu",
            "--threads",
            "1",
            "--name",
            "clips_rm",
            "--domains",
            "math",
            "--library",
            str(lib),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "registered tool clips_rm@1" in result.output
    assert [m.name for m in list_models()] == ["clips_rm"]

    prefs = tmp_path / "prefs.jsonl"
    prefs.write_text(
        json.dumps({"prompt": "How many clips?", "chosen": "72 clips.", "rejected": "Blue."})
        + "\n"
        + json.dumps({"prompt": "How many eggs?", "chosen": "12 eggs.", "rejected": "Red."})
        + "\n"
    )
    report = tmp_path / "eval.json"
    result = runner.invoke(
        app,
        [
            "rm",
            "eval",
            "--model",
            str(out),
            "--data",
            str(prefs),
            "--device",
            "cpu",
            "-o",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(report.read_text())
    assert (tmp_path / "eval.png").read_bytes()[:4] == b"\x89PNG"  # accuracy by set, intervals
    paged = runner.invoke(app, ["report", str(out)])  # the training folder as one page
    assert paged.exit_code == 0 and "## Reward model" in (out / "report.md").read_text()
    assert set(data["results"]) == {"trained", "untrained"}
    assert data["results"]["trained"]["prefs"]["n"] == 2
    assert data["results"]["trained"]["prefs"]["groups"] == 2
    cmp = data["trained_minus_untrained"]["prefs"]
    trained_acc = data["results"]["trained"]["prefs"]["accuracy"]
    untrained_acc = data["results"]["untrained"]["prefs"]["accuracy"]
    assert cmp["difference"] == pytest.approx(trained_acc - untrained_acc)
    assert " p=" in result.output  # the difference column: groups better/worse, sign test
    # the results go to their own file; the card only points to it
    saved = json.loads((out / "eval_results.json").read_text())
    assert saved["results"] == data["results"] and "evaluated_at" in saved
    assert "eval_results.json" in (out / "README.md").read_text()
    assert '"trained_minus_untrained"' not in (out / "README.md").read_text()

    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"prompt": "How many clips?", "completion": "72"}) + "\n")
    scored = tmp_path / "scored.jsonl"
    result = runner.invoke(
        app,
        [
            "score",
            str(samples),
            "-o",
            str(scored),
            "--tool",
            "clips_rm",
            "--library",
            str(lib),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    line = json.loads(scored.read_text())
    assert line["status"] == "ok" and line["tool"] == "clips_rm@1"
    with Library(lib) as opened:
        assert opened.record("clips_rm").spec.kind == "model"


def test_train_refuses_a_missing_corpus(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "rm",
            "train",
            "--corpus",
            str(tmp_path / "nope.jsonl"),
            "--out",
            str(tmp_path / "o"),
            "--backbone",
            str(tmp_path),
        ],
    )
    assert result.exit_code != 0
    assert isinstance(result.exception, InputError) and "does not exist" in str(result.exception)
