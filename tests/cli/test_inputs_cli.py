"""What `score` and `route` do with the inputs a new user actually has: gzip files, a BOM,
CRLF, a JSON array, a stray Latin-1 byte, an empty file, and an `-o` that cannot be written.
Each runs the installed command in a subprocess, because the exit code and the absence of a
traceback are what the user sees."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

LINE = {"prompt": "2+2?", "completion": "#### 4", "reference": "4"}


def rewardsmith(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )


def said(proc: subprocess.CompletedProcess[str]) -> str:
    """stderr as one line (rich wraps long messages at the terminal width)."""
    return proc.stderr.replace("\n", "")


def score(tmp_path: Path, src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return rewardsmith(tmp_path, "score", str(src), "-o", str(out), "-t", "gsm8k", "-q")


# How each input format is written to disk; every one must score like the plain file.
READABLE = {
    "gzip": lambda p, text: p.write_bytes(gzip.compress(text.encode())),
    "bom": lambda p, text: p.write_bytes(b"\xef\xbb\xbf" + text.encode()),
    "crlf": lambda p, text: p.write_bytes(text.replace("\n", "\r\n").encode()),
}


@pytest.mark.parametrize("kind", sorted(READABLE))
def test_gzip_bom_and_crlf_inputs_score_like_plain_jsonl(tmp_path: Path, kind: str) -> None:
    src = tmp_path / "in.jsonl.gz" if kind == "gzip" else tmp_path / "in.jsonl"
    READABLE[kind](src, json.dumps(LINE) + "\n" + json.dumps({**LINE, "completion": "5"}) + "\n")
    out = tmp_path / "out.jsonl"
    proc = score(tmp_path, src, out)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["reward"] for r in rows] == [1.0, 0.0]


def test_a_json_array_is_refused_with_the_conversion_hint(tmp_path: Path) -> None:
    src = tmp_path / "in.json"
    src.write_text(json.dumps([LINE, LINE], indent=1))
    proc = score(tmp_path, src, tmp_path / "out.jsonl")
    assert proc.returncode == 2
    assert "one JSON array" in said(proc) and "jq -c" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "out.jsonl").exists()


def test_a_latin1_byte_is_named_with_its_line_and_column(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_bytes(json.dumps(LINE).encode() + b"\n" + b'{"completion": "caf\xe9"}\n')
    proc = score(tmp_path, src, tmp_path / "out.jsonl")
    assert proc.returncode == 2
    assert f"{src}:2: not UTF-8 (byte 0xe9 at column 20)" in said(proc)
    assert "iconv" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["score", "route"])
def test_an_empty_input_warns_exits_0_and_writes_nothing(tmp_path: Path, command: str) -> None:
    src = tmp_path / "empty.jsonl"
    src.write_text("\n \n")
    out = tmp_path / "out.jsonl"
    proc = rewardsmith(tmp_path, command, str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "has no samples" in said(proc)
    assert not out.exists()


def test_an_output_folder_blocked_by_a_file_is_exit_2_before_scoring(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(LINE) + "\n")
    (tmp_path / "afile").write_text("not a folder")
    proc = score(tmp_path, src, tmp_path / "afile" / "sub" / "out.jsonl")
    assert proc.returncode == 2
    assert "cannot create the folder" in said(proc) and "Traceback" not in proc.stderr


def test_an_output_that_is_a_folder_is_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(LINE) + "\n")
    proc = rewardsmith(tmp_path, "route", str(src), "-o", str(tmp_path), "-b", "rules")
    assert proc.returncode == 2
    assert "is a folder" in said(proc) and "Traceback" not in proc.stderr


def test_missing_output_folders_are_created(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps(LINE) + "\n")
    out = tmp_path / "new" / "deeper" / "out.jsonl"
    proc = score(tmp_path, src, out)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["reward"] == 1.0
