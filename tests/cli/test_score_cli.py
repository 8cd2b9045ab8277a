"""`rewardsmith score` and `rewardsmith tools` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app

runner = CliRunner()

GOOD_LINES = [
    {"id": 1, "task": "fmt", "completion": "<thinking>2+2</thinking><solution>4</solution>"},
    {"id": 2, "task": "fmt", "completion": "4"},
    {"id": 3, "task": "num", "completion": "so #### 72", "reference": "72"},
    {"id": 4, "task": "num", "completion": "I think 71", "reference": 72},
    {"id": 5, "task": "num", "completion": "72", "reference": None},
]


def write_jsonl(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_with_task_map_writes_one_line_per_input_and_a_table(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD_LINES)
    out = tmp_path / "out.jsonl"
    lib = tmp_path / "lib.db"
    result = runner.invoke(
        app,
        [
            "score",
            str(src),
            "-o",
            str(out),
            "--task-map",
            "fmt=format_tags,num=gsm8k",
            "--library",
            str(lib),
        ],
    )
    assert result.exit_code == 0, result.output
    rows = read_jsonl(out)
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["reward"] for r in rows] == [1.0, 0.0, 1.0, 0.0, None]
    assert rows[4]["status"] == "invalid_reference"
    assert rows[0]["tool"] == "format_tags@1" and rows[2]["tool"] == "gsm8k@1"
    assert all({"reward", "status", "tool", "components", "reason"} <= set(r) for r in rows)
    # the table: one row per task/tool with counts and statuses
    assert "rewards by task and tool" in result.output
    assert "bad ref" in result.output


def test_bad_lines_are_reported_by_number_and_nothing_is_written(tmp_path: Path) -> None:
    src = write_jsonl(
        tmp_path / "in.jsonl",
        [GOOD_LINES[0], "{not json", {"prompt": "no completion"}, GOOD_LINES[1]],
    )
    out = tmp_path / "out.jsonl"
    result = runner.invoke(
        app,
        [
            "score",
            str(src),
            "-o",
            str(out),
            "--tool",
            "format_tags",
            "--library",
            str(tmp_path / "l.db"),
        ],
    )
    assert result.exit_code != 0
    message = str(result.exception) if result.exception else result.output
    assert "line 2: not valid JSON" in message
    assert "line 3: missing required field 'completion'" in message
    assert not out.exists()


def test_unknown_tool_lists_known_tools_and_exits_2(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "in.jsonl", GOOD_LINES)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rewardsmith.cli.main",
            "score",
            str(src),
            "-o",
            str(tmp_path / "o.jsonl"),
            "--tool",
            "nope",
            "--library",
            str(tmp_path / "l.db"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "unknown tool 'nope'" in proc.stderr and "gsm8k" in proc.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_score_without_a_tool_or_task_map_routes(tmp_path: Path) -> None:
    # No --tool, no --task-map: the router decides. These lines have no prompt, so nothing
    # says which tool applies: each is not_applicable with the router's reason, none guessed.
    src = write_jsonl(tmp_path / "in.jsonl", GOOD_LINES)
    out = tmp_path / "o.jsonl"
    lib = str(tmp_path / "lib.db")
    result = runner.invoke(app, ["score", str(src), "-o", str(out), "--library", lib])
    assert result.exit_code == 0, result.output
    lines = read_jsonl(out)
    assert len(lines) == len(GOOD_LINES)
    assert all(line["status"] == "not_applicable" for line in lines)
    assert all(line["reason"].startswith("router: no library tool fits") for line in lines)


def test_tools_list_show_history(tmp_path: Path) -> None:
    lib = str(tmp_path / "lib.db")
    listed = runner.invoke(app, ["tools", "list", "--library", lib])
    assert listed.exit_code == 0 and "gsm8k@1" in listed.output and "math@1" in listed.output
    shown = runner.invoke(app, ["tools", "show", "gsm8k", "--library", lib])
    assert shown.exit_code == 0
    assert json.loads(shown.output)["config"]["factory"] == "rewardsmith.tools.gsm8k:GSM8KTool"
    history = runner.invoke(app, ["tools", "history", "gsm8k", "--library", lib])
    assert history.exit_code == 0 and "register" in history.output


def test_tools_add_and_retire(tmp_path: Path) -> None:
    lib = str(tmp_path / "lib.db")
    tool_file = tmp_path / "tool.json"
    tool_file.write_text(
        json.dumps(
            {
                "spec": {
                    "name": "answer_tags",
                    "description": "one <answer> block",
                    "needs_reference": False,
                },
                "config": {
                    "factory": "rewardsmith.tools.format:FormatTagsTool",
                    "params": {"mode": "exact", "tags": ["answer"]},
                },
            }
        )
    )
    added = runner.invoke(
        app, ["tools", "add", str(tool_file), "--note", "for the demo", "--library", lib]
    )
    assert added.exit_code == 0 and "answer_tags@1" in added.output
    src = write_jsonl(tmp_path / "in.jsonl", [{"completion": "<answer>7</answer>"}])
    out = tmp_path / "o.jsonl"
    scored = runner.invoke(
        app, ["score", str(src), "-o", str(out), "--tool", "answer_tags", "--library", lib]
    )
    assert scored.exit_code == 0 and read_jsonl(out)[0]["reward"] == 1.0
    retired = runner.invoke(
        app, ["tools", "retire", "answer_tags", "--reason", "demo over", "--library", lib]
    )
    assert retired.exit_code == 0
    listed = runner.invoke(app, ["tools", "list", "--library", lib])
    assert "answer_tags" not in listed.output


@pytest.mark.parametrize(
    "content",
    [
        '{"spec": {"name": "x"}}',  # no config
        "not json",  # unreadable
    ],
)
def test_tools_add_rejects_bad_files(tmp_path: Path, content: str) -> None:
    tool_file = tmp_path / "tool.json"
    tool_file.write_text(content)
    result = runner.invoke(
        app, ["tools", "add", str(tool_file), "--library", str(tmp_path / "l.db")]
    )
    assert result.exit_code != 0


def test_an_error_message_with_markup_characters_prints_as_written(tmp_path: Path) -> None:
    """A message holding `[/]` (a task map, a reference) must not crash the error printer."""
    data = tmp_path / "in.jsonl"
    data.write_text('{"completion": "1"}\n')
    command = [sys.executable, "-m", "rewardsmith.cli.main", "score", str(data)]
    proc = subprocess.run(
        [*command, "-o", str(tmp_path / "o.jsonl"), "--task-map", "[/]"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "bad task map entry '[/]'" in proc.stderr and "Traceback" not in proc.stderr


def test_the_table_says_which_samples_were_not_scored_and_why(tmp_path: Path) -> None:
    lines = [*GOOD_LINES, {"id": 6, "task": "other", "completion": "x"}]
    src = write_jsonl(tmp_path / "in.jsonl", lines)
    result = runner.invoke(
        app,
        ["score", str(src), "-o", str(tmp_path / "o.jsonl"), "--task-map",
         "fmt=format_tags,num=gsm8k", "--library", str(tmp_path / "lib.db")],
        env={"COLUMNS": "300"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 sample(s) got no score" in result.output
    # the unmapped task: no tool, and the note names the map and what to pass
    assert "(no tool)" in result.output and "not scored" in result.output
    assert (
        "not scored: 1 sample(s) of task other (not_applicable): task 'other' is not in the "
        "task map (fmt, num)" in result.output
    )
    assert "-> add the task to --task-map, or pass --tool for the rest" in result.output
    assert "not scored: 1 sample(s) of task num (invalid_reference)" in result.output


@pytest.mark.parametrize("args", [["-h"], ["tools", "-h"], ["compare", "-h"], ["route", "-h"]])
def test_dash_h_is_help_everywhere(args: list[str]) -> None:
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "Usage: rewardsmith" in result.output


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("rewardsmith ")


def test_a_warmup_longer_than_the_run_is_warned(capsys: pytest.CaptureFixture[str]) -> None:
    from rewardsmith.cli.common import warn_long_warmup

    warn_long_warmup(20, 5)
    said = " ".join(capsys.readouterr().err.split())
    assert "--warmup-steps 20 >= the run's 5 steps" in said and "reaches 25% of --lr" in said
    warn_long_warmup(2, 20)
    assert capsys.readouterr().err == ""
