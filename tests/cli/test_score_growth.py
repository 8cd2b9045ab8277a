"""`score --synthesize` on the bundled mix's task that no built-in grades (what `make run`
shows): the first run synthesizes, gates, admits and scores it and its table says so; a
second run on the same library routes to the new tool directly."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rewardsmith.cli.main import app

runner = CliRunner()
MIXED = Path(__file__).resolve().parents[2] / "examples" / "mixed.jsonl"


def _score(src: Path, out: Path, library: Path) -> str:
    result = runner.invoke(
        app,
        ["score", str(src), "-o", str(out), "--library", str(library), "--synthesize"],
        env={"COLUMNS": "200"},  # table cells on one line
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_the_library_grows_in_one_run_and_is_used_in_the_next(tmp_path: Path) -> None:
    # (no width set on the module's console: restoring it would pin every later test to 80)
    lines = [json.loads(x) for x in MIXED.read_text(encoding="utf-8").splitlines()]
    keep = [x for x in lines if x["task"] in ("word_reversal", "gsm8k")]
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(x) + "\n" for x in keep), encoding="utf-8")
    library = tmp_path / "lib.db"
    first = _score(src, tmp_path / "a.jsonl", library)
    assert "library growth" in first and "synthesized, admitted" in first
    scored = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    new = [x for x in scored if x["task"] == "word_reversal"]
    assert {x["tool"] for x in new} == {"word_reversal@1"}
    assert all(x["status"] == "ok" for x in new)
    assert {x["tool"] for x in scored if x["task"] == "gsm8k"} == {"gsm8k@1"}
    # the right answers in tags and after "Final answer:" are paid, the wrong ones are not
    for x in new:
        if x["completion"].startswith(("<answer>", "Final answer:")):
            assert x["reward"] == (1.0 if x["meta"]["expected"] == "correct" else 0.0), x["id"]
    second = _score(src, tmp_path / "b.jsonl", library)
    assert "routed to" in second and "synthesized," not in second
    again = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
    assert [x["reward"] for x in again] == [x["reward"] for x in scored]
