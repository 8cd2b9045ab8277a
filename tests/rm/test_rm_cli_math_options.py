"""The problem/solution options of `rm train` and `rm eval` as a user types them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("transformers")

from rewardsmith.cli.main import app  # noqa: E402

runner = CliRunner()


def train_args(corpus: Path, out: Path, backbone: Path, lib: Path, *extra: str) -> list[str]:
    return [
        "rm",
        "train",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--backbone",
        str(backbone),
        "--max-steps",
        "2",
        "--batch-size",
        "4",
        "--prefix-min",
        "4",
        "--suffix-min",
        "4",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--library",
        str(lib),
        "-q",
        *extra,
    ]


def test_boundary_end_and_hard_batches_from_the_command_line(
    tiny_backbone: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(
            json.dumps(
                {"text": f"Ann has {i} pens and buys {i}. How many?\n\n{i} + {i} = {2 * i}."}
            )
            + "\n"
            for i in range(1, 41)
        )
    )
    out, lib = tmp_path / "rm", tmp_path / "lib.db"
    extra = ["--split-mode", "boundary", "--suffix-side", "end", "--similar-pool", "12"]
    extra += ["--shuffle-buffer", "7"]
    result = runner.invoke(app, train_args(corpus, out, tiny_backbone, lib, *extra))
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "rbs_config.json").read_text())
    assert saved["windows"]["completion_side"] == "end"  # the suffix side, by default
    assert saved["train"]["similar_pool"] == 12
    assert saved["train"]["split"]["shuffle_buffer"] == 7

    # `rm eval --completion-side` overrides the saved side, for both columns.
    prefs = tmp_path / "prefs.jsonl"
    prefs.write_text(json.dumps({"prompt": "How many?", "chosen": "2 + 2 = 4.", "rejected": "5."}))
    report = tmp_path / "eval.json"
    args = ["rm", "eval", "--model", str(out), "--data", str(prefs), "--device", "cpu"]
    result = runner.invoke(app, [*args, "--completion-side", "start", "-o", str(report)])
    assert result.exit_code == 0, result.output
    payload = json.loads(report.read_text())
    assert payload["windows"]["completion_side"] == "start"
    assert set(payload["results"]) == {"trained", "untrained"}


def test_end_suffix_side_without_boundary_mode_is_refused(
    tiny_backbone: Path, tmp_path: Path
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"text": "a b c d e f g h i j k l"}) + "\n")
    args = train_args(corpus, tmp_path / "rm", tiny_backbone, tmp_path / "lib.db")
    result = runner.invoke(app, [*args, "--suffix-side", "end"])
    assert result.exit_code != 0
    assert "boundary" in result.output + str(result.exception)
