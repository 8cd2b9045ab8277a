"""`rewardsmith synth codeverify|gate` as users script them: exit 0 admitted, 3 rejected (the
candidate still stored, retired, with its reasons), 2 bad input; the source readable with
`tools show`; a JSON report with every number."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from rewardsmith.bench.codeverify_data import examples_for
from rewardsmith.cli.main import app
from rewardsmith.library.store import Library
from support import FIXTURES

runner = CliRunner()


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def rewardsmith(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args], capture_output=True, text=True
    )


def test_codeverify_admits_registers_and_shows_the_source(tmp_path: Path) -> None:
    examples = write(tmp_path / "ex.jsonl", examples_for("caesar_cipher"))
    lib, report = tmp_path / "lib.db", tmp_path / "report.json"
    result = runner.invoke(
        app,
        ["synth", "codeverify", str(examples), "--name", "caesar", "--library", str(lib)]
        + ["--json", str(report)],
    )
    assert result.exit_code == 0, result.output
    assert "admitted as caesar@1" in result.output
    data = json.loads(report.read_text())
    assert data["admitted"] and data["gate"]["checks"]["held_out"]["auc"] == 1.0
    assert data["synth"]["method"] == "codeverify-offline" and "def reward(" in data["source"]

    shown = runner.invoke(app, ["tools", "show", "caesar", "--library", str(lib)])
    spec = json.loads(shown.output)
    assert spec["provenance"] == "synth" and spec["kind"] == "code"
    assert "def reward(completions, references" in spec["config"]["params"]["source"]
    assert spec["validation"]["gate"]["admitted"] is True
    assert len(spec["exemplars"]) == 12  # the router learns the task from its prompts
    with Library(lib) as library:
        kinds = [e.kind for e in library.history("caesar")]
    assert kinds == ["gate", "add"]


def test_a_rejected_candidate_exits_3_and_is_kept_retired_with_its_reasons(
    tmp_path: Path,
) -> None:
    # labels that contradict the answers: no verifier can agree with them
    rows = examples_for("caesar_cipher")
    for row in rows:
        if "label" in row:
            row["label"] = 1 - row["label"]
    examples = write(tmp_path / "ex.jsonl", rows)
    lib, report = tmp_path / "lib.db", tmp_path / "report.json"
    proc = rewardsmith(
        "synth", "codeverify", str(examples), "--name", "caesar", "--library", str(lib),
        "--json", str(report),
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "rejected: held_out: accuracy" in proc.stdout and "labeled completions" in proc.stdout
    data = json.loads(report.read_text())
    assert not data["admitted"] and data["gate"]["failed_check"] == "held_out"
    assert data["stored_as"] == "caesar@1"
    with Library(lib) as library:
        record = library.record("caesar")
        assert record.retired and "caesar" not in library.names()
        assert record.spec.validation["gate"]["checks"]["held_out"]["labeled_accuracy"] < 0.9
        assert "def reward(" in record.config["params"]["source"]
        assert [e.kind for e in library.history("caesar")] == ["gate", "add_retired"]
        # a later admitted version is used; a later rejection never retires it
        good = write(tmp_path / "good.jsonl", examples_for("caesar_cipher"))
    assert rewardsmith(
        "synth", "codeverify", str(good), "--name", "caesar", "--library", str(lib)
    ).returncode == 0  # fmt: skip
    assert rewardsmith(
        "synth", "codeverify", str(examples), "--name", "caesar", "--library", str(lib)
    ).returncode == 3  # fmt: skip
    with Library(lib) as library:
        assert library.get("caesar").spec.ref == "caesar@2"
        assert library.record("caesar.rejected").retired


def test_bad_input_exits_2_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "p", "reference": "a", "label": 1}\n', encoding="utf-8")
    proc = rewardsmith(
        "synth", "codeverify", str(bad), "--name", "x", "--library", str(tmp_path / "l.db")
    )
    assert proc.returncode == 2 and f"{bad}:1" in proc.stderr and "Traceback" not in proc.stderr
    ok = write(tmp_path / "ok.jsonl", examples_for("caesar_cipher"))
    proc = rewardsmith(
        "synth", "codeverify", str(ok), "--name", "bad name!", "--library", str(tmp_path / "l.db")
    )
    assert proc.returncode == 2 and "bad tool name" in proc.stderr
    proc = rewardsmith(
        "synth",
        "gate",
        "--tool",
        "nope",
        "--examples",
        str(ok),
        "--library",
        str(tmp_path / "l.db"),
    )
    assert proc.returncode == 2 and "unknown tool 'nope'" in proc.stderr


def test_gate_audits_any_tool_with_exit_0_or_3(tmp_path: Path) -> None:
    lib = str(tmp_path / "lib.db")
    gsm8k = str(FIXTURES / "synth" / "gsm8k_examples.jsonl")
    proc = rewardsmith("synth", "gate", "--tool", "gsm8k", "--examples", gsm8k, "--library", lib)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "would be admitted" in proc.stdout
    # the format checker ignores the answer: it cannot tell right from wrong
    proc = rewardsmith(
        "synth", "gate", "--tool", "format_tags", "--examples", gsm8k, "--library", lib,
        "--json", str(tmp_path / "r.json"),
    )  # fmt: skip
    assert proc.returncode == 3
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["failed_check"] == "held_out" and report["checks"]["held_out"]["auc"] <= 0.6
