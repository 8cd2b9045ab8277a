"""`rewardsmith rescore | compare | profile` as a user runs them: the installed command in a
subprocess (exit codes 0 and 2, no tracebacks), on a rollout file `score` wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FORMATTED = "<thinking>2+2=4</thinking><solution>4</solution>"
# A prompt's group of four completions, as `score -o` writes them for a gsm8k run: two
# plain "#### 4" answers that gsm8k pays and gsm8k_with_format (tags required) does not.
LINES = [
    {"id": "a", "prompt": "2+2?", "completion": "#### 4", "reference": "4", "task": "add"},
    {"id": "b", "prompt": "2+2?", "completion": "#### 4", "reference": "4", "task": "add"},
    {"id": "c", "prompt": "2+2?", "completion": FORMATTED, "reference": "4", "task": "add"},
    {"id": "d", "prompt": "2+2?", "completion": "#### 5", "reference": "4", "task": "add"},
    # a group where every completion is wrong: dead for GRPO
    {"id": "e", "prompt": "3+3?", "completion": "#### 7", "reference": "6", "task": "add"},
    {"id": "f", "prompt": "3+3?", "completion": "#### 8", "reference": "6", "task": "add"},
]


def rewardsmith(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args, "--library", str(tmp_path / "l.db")]
        if args[0] in ("rescore", "compare", "score", "tools")
        else [sys.executable, "-m", "rewardsmith.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", "COLUMNS": "200"},
    )


def said(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stderr.replace("\n", "")


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    out = tmp_path / "scored.jsonl"
    proc = rewardsmith(tmp_path, "score", str(src), "-o", str(out), "-t", "gsm8k", "-q")
    assert proc.returncode == 0, proc.stderr
    return out


def test_rescore_keeps_the_stored_reward_beside_the_new_one(tmp_path: Path, scored: Path) -> None:
    out = tmp_path / "rescored.jsonl"
    proc = rewardsmith(
        tmp_path, "rescore", str(scored), "--tool", "gsm8k_with_format", "-o", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [line["id"] for line in LINES]
    assert [r["reward"] for r in rows] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert [r["previous"]["reward"] for r in rows] == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert rows[0]["tool"] == "gsm8k_with_format@1" and rows[0]["previous"]["tool"] == "gsm8k@1"
    assert "rescored with gsm8k_with_format@1" in proc.stdout
    # rescoring the output again keeps one `previous`: the line it read
    again = rewardsmith(
        tmp_path, "rescore", str(out), "-t", "gsm8k@1", "-o", str(tmp_path / "2.jsonl")
    )
    assert again.returncode == 0, again.stderr
    first = json.loads((tmp_path / "2.jsonl").read_text().splitlines()[0])
    assert first["reward"] == 1.0 and first["previous"]["tool"] == "gsm8k_with_format@1"


def test_compare_lists_flips_mcnemar_and_records_an_event(tmp_path: Path, scored: Path) -> None:
    report_path, plot = tmp_path / "cmp.json", tmp_path / "cmp.png"
    proc = rewardsmith(
        tmp_path, "compare", str(scored), "--tool", "gsm8k@1", "--against", "gsm8k_with_format",
        "--json", str(report_path), "--plot", str(plot),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    assert report["tool"] == "gsm8k@1" and report["against"] == "gsm8k_with_format@1"
    assert [f["id"] for f in report["flips"]] == ["a", "b"]
    assert report["mcnemar"]["only_a"] == 2 and report["mcnemar"]["only_b"] == 0
    assert report["mcnemar"]["p_value"] == pytest.approx(0.5)
    assert report["confusion"]["pass"]["fail"] == 2 and plot.stat().st_size > 0
    assert "flips: 2 rollout(s)" in proc.stdout and "p = 0.5" in proc.stdout
    history = rewardsmith(tmp_path, "tools", "history", "gsm8k")
    assert history.returncode == 0 and "compare" in history.stdout
    assert "gsm8k_with_format@1" in history.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # the same tool on both sides compares nothing
        (["--tool", "gsm8k", "--against", "gsm8k@1"], "are the same tool (gsm8k@1)"),
        # an unknown tool names the known ones
        (["--tool", "gsm8k", "--against", "nope"], "unknown tool 'nope'"),
        (["--tool", "gsm8k@9", "--against", "math"], "tool 'gsm8k' has no version 9"),
    ],
)
def test_compare_bad_tools_exit_2(
    tmp_path: Path, scored: Path, args: list[str], message: str
) -> None:
    proc = rewardsmith(tmp_path, "compare", str(scored), *args)
    assert proc.returncode == 2 and message in said(proc) and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["rescore", "compare", "profile"])
def test_a_file_that_is_not_rollouts_exits_2_naming_the_lines(tmp_path: Path, command: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"completion": "ok", "reward": 1.0}\n{"prompt": "no completion"}\nnot json\n')
    args = {"rescore": ["-t", "gsm8k", "-o", str(tmp_path / "o.jsonl")],
            "compare": ["-t", "gsm8k", "--against", "math"], "profile": []}[command]  # fmt: skip
    proc = rewardsmith(tmp_path, command, str(bad), *args)
    assert proc.returncode == 2, proc.stderr
    assert "bad.jsonl:3: not valid JSON" in said(proc) and "Traceback" not in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_profile_finds_the_dead_group(tmp_path: Path, scored: Path) -> None:
    report_path, plot = tmp_path / "p.json", tmp_path / "p.png"
    proc = rewardsmith(
        tmp_path, "profile", str(scored), "--json", str(report_path), "--plot", str(plot)
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(report_path.read_text())
    add = report["keys"]["add"]
    assert (add["groups"], add["dead_groups"], add["dead_all_fail"]) == (2, 1, 1)
    assert add["pass_rate"] == pytest.approx(3 / 6)
    assert [f["prompt"] for f in report["flagged_prompts"]] == ["3+3?"]
    assert "1 prompt(s) give GRPO no signal" in proc.stdout and plot.stat().st_size > 0


def test_profile_of_a_file_without_rewards_says_to_score_it(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(LINES[0]) + "\n")
    proc = rewardsmith(tmp_path, "profile", str(plain))
    assert proc.returncode == 2 and "rewardsmith rescore" in said(proc)


def test_markup_and_escapes_in_rollouts_print_as_data(tmp_path: Path) -> None:
    # a completion is untrusted: rich markup or a terminal escape in it must not be obeyed
    hostile = tmp_path / "hostile.jsonl"
    lines = [
        {"prompt": "[bold]q[/]", "completion": "#### 4 [/] \x1b[31mred", "reference": "4",
         "task": "[red]t", "reward": 1.0},
        {"prompt": "[bold]q[/]", "completion": "#### 5 [link=x]", "reference": "4",
         "task": "[red]t", "reward": 0.0},
    ]  # fmt: skip
    hostile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    for args in (["profile", str(hostile)], ["compare", str(hostile), "-t", "gsm8k", "--against", "math"]):  # fmt: skip
        proc = rewardsmith(tmp_path, *args)
        assert proc.returncode == 0, proc.stderr
        assert "[red]t" in proc.stdout and "\x1b[31m" not in proc.stdout
