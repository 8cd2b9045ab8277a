"""Input files past the reader's limits end in one clear error (exit 2 from the CLI) that
names the file and every bad line: never a MemoryError, a RecursionError or a hang."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith import jsonl
from rewardsmith.errors import InputError
from rewardsmith.jsonl import iter_jsonl, read_records

GOOD = '{"completion": "#### 3", "reference": "3"}\n'


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The limits scaled down, so a test file need not be hundreds of megabytes."""
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 100_000)
    monkeypatch.setattr(jsonl, "_ENDLESS_BYTES", 400_000)
    monkeypatch.setattr(jsonl, "GZIP_FLOOR_BYTES", 1_000_000)


def _nested(depth: int) -> str:
    return json.dumps({"completion": "x", "meta": {}}).replace("{}", "[" * depth + "]" * depth)


# (file content, the lines the error must name, what it says about them)
BAD_FILES = [
    # one line of 200 kB between good ones: named, and the line after it still read
    pytest.param(
        GOOD + '{"completion": "' + "a" * 200_000 + '"}\n' + GOOD + "not json\n",
        ["line 2: longer than", "line 4: not valid JSON"],
        id="long-line",
    ),
    # nested past the depth limit, and nested past the parser's own recursion limit
    pytest.param(
        GOOD + _nested(150) + "\n" + _nested(40_000) + "\n" + GOOD + "{bad\n",
        ["line 2: JSON nested deeper than 100", "line 3: JSON nested deeper", "line 5:"],
        id="deep-nesting",
    ),
]


@pytest.mark.usefixtures("small_limits")
@pytest.mark.parametrize(("content", "named"), BAD_FILES)
def test_every_bad_line_is_named_and_nothing_is_scored(
    tmp_path: Path, content: str, named: list[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        read_records(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    for line in named:
        assert line in message


def _rewardsmith(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The installed command: its exit code and the absence of a traceback are what count."""
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={"REWARDSMITH_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )


# Inputs past the real limits, through the command: exit 2, file and line named.
COMMAND_CASES = [
    pytest.param(
        lambda p: p.write_text(GOOD + _nested(100_000) + "\n"), "in.jsonl:2: JSON nested", id="deep"
    ),
    pytest.param(lambda p: None, "/dev/zero:1: no line break", id="dev-zero"),
]


@pytest.mark.parametrize(("write", "said"), COMMAND_CASES)
def test_score_exits_2_naming_the_line(tmp_path: Path, write: object, said: str) -> None:
    src = tmp_path / "in.jsonl"
    write(src)  # type: ignore[operator]
    path = src if src.exists() else Path("/dev/zero")
    out = tmp_path / "out.jsonl"
    proc = _rewardsmith(tmp_path, "score", str(path), "-o", str(out), "-t", "gsm8k", "-q")
    assert proc.returncode == 2, proc.stderr
    assert said in proc.stderr.replace("\n", "") and "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.usefixtures("small_limits")
def test_a_gzip_bomb_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(gzip.compress((GOOD * 200_000).encode(), 9))  # ~9 MB in ~30 kB
    assert path.stat().st_size < 100_000
    with pytest.raises(InputError, match=r"bomb.jsonl.gz:\d+: the gzip file decompresses to more"):
        read_records(path)
    with pytest.raises(InputError, match="gzip bomb"):
        list(iter_jsonl(path))


@pytest.mark.usefixtures("small_limits")
def test_a_real_gzip_file_under_the_ratio_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl.gz"
    lines = "".join(json.dumps({"completion": f"answer {i} " * 20}) + "\n" for i in range(2_000))
    path.write_bytes(gzip.compress(lines.encode()))
    assert len(read_records(path)) == 2_000


def test_a_file_without_line_breaks_ends_at_the_limit_not_at_the_end() -> None:
    # /dev/zero: endless, no line break; with the real limits
    with pytest.raises(InputError, match="/dev/zero:1: no line break"):
        read_records(Path("/dev/zero"))


@pytest.mark.usefixtures("small_limits")
def test_readers_that_stop_at_the_first_bad_line_name_it(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(GOOD + _nested(500) + "\n")
    with pytest.raises(InputError, match=r"deep.jsonl:2: JSON nested deeper"):
        list(iter_jsonl(path))
