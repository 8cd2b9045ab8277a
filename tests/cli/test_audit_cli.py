"""`rewardsmith audit`: exit 0 clean, 3 exploitable, 2 bad input; the JSON report; the rates
`tools show` prints afterwards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from support import FIXTURES, REPO_ROOT

EXAMPLES = FIXTURES / "synth" / "gsm8k_examples.jsonl"
CONTAINS = REPO_ROOT / "examples" / "audit" / "contains_reference.py"
# Pays only a completion that is exactly the answer: no attack passes, most styles fail.
EXACT = (
    "def reward(completion, reference):\n"
    "    return 1.0 if completion.strip() == reference.rpartition('####')[2].strip() else 0.0\n"
)
runner = CliRunner()


def audit(*args: str) -> object:
    return runner.invoke(app, ["audit", *args, "--quiet"])


def test_a_clean_builtin_exits_0_writes_json_and_shows_in_tools_show(tmp_path: Path) -> None:
    lib, out = tmp_path / "lib.db", tmp_path / "report.json"
    result = audit(
        "gsm8k",
        "--examples",
        str(EXAMPLES),
        "--json",
        str(out),
        "--library",
        str(lib),
        "--seed",
        "5",
    )
    assert result.exit_code == 0, result.output
    assert "CLEAN: gsm8k@1" in result.output
    report = json.loads(out.read_text())
    assert report["seed"] == 5 and report["false_pass"]["wrong"] == 0
    assert {c["class"] for c in report["false_pass"]["classes"]} >= {"hedge", "shotgun", "negation"}
    assert all(len(c["ci95"]) == 2 for c in report["false_pass"]["classes"])
    shown = runner.invoke(app, ["tools", "show", "gsm8k", "--library", str(lib)])
    audit_json = json.loads(shown.output)["audit"]
    assert audit_json["seed"] == 5 and audit_json["rates"]["hedge"].startswith("0/")


def test_an_exploitable_file_exits_3_unless_the_rate_is_allowed(tmp_path: Path) -> None:
    result = audit(
        str(CONTAINS), "--examples", str(EXAMPLES), "--seed", "1", "--attacks", "hedge,empty"
    )
    assert result.exit_code == 3, result.output
    assert "EXPLOITABLE" in result.output and "hedge" in result.output
    allowed = audit(
        str(CONTAINS),
        "--examples",
        str(EXAMPLES),
        "--seed",
        "1",
        "--attacks",
        "hedge,empty",
        "--max-false-pass",
        "1.0",
    )
    assert allowed.exit_code == 0, allowed.output


def test_fail_on_any_also_fails_on_right_answers_it_does_not_pay(tmp_path: Path) -> None:
    exact = tmp_path / "exact.py"
    exact.write_text(EXACT)
    args = [str(exact), "--examples", str(EXAMPLES), "--seed", "2", "--attacks", "hedge,style"]
    assert audit(*args).exit_code == 0
    failed = audit(*args, "--fail-on", "any")
    assert failed.exit_code == 3 and "FAILS ON RIGHT ANSWERS" in failed.output


def rewardsmith(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed command in a subprocess: its exit code and stderr are what users see."""
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        # an unreadable file, a file without a reward function, a bad examples line
        ("missing", "cannot read"),
        ("no_function", "no reward function found"),
        ("bad_line", "examples.jsonl:2"),
        ("bad_class", "unknown attack class"),
        ("bad_fail_on", "--fail-on"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(tmp_path: Path, setup: str, words: str) -> None:
    target, examples, extra = str(CONTAINS), str(EXAMPLES), []
    if setup == "missing":
        target = str(tmp_path / "nope.py")
    elif setup == "no_function":
        target = str(tmp_path / "none.py")
        Path(target).write_text("x = 1\n")
    elif setup == "bad_line":
        examples = str(tmp_path / "examples.jsonl")
        Path(examples).write_text('{"prompt": "p", "reference": "1"}\n{"prompt": 3}\n')
    elif setup == "bad_class":
        extra = ["--attacks", "hedgehog"]
    else:
        extra = ["--fail-on", "sometimes"]
    proc = rewardsmith(tmp_path, "audit", target, "--examples", examples, *extra, "-q")
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr.replace("\n", "") and "Traceback" not in proc.stderr
