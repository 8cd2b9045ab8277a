"""The one JSONL reader: what it reads transparently and how it names what it cannot read."""

from __future__ import annotations

import gzip
import os
import threading
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.jsonl import iter_jsonl, read_jsonl, read_records

LINES = '{"completion": "a"}\n\n{"completion": "b", "reference": 3}\n'


@pytest.mark.parametrize(
    "name, data",
    [
        # plain UTF-8, a blank line in the middle
        ("plain.jsonl", LINES.encode()),
        # Windows line ends
        ("crlf.jsonl", LINES.replace("\n", "\r\n").encode()),
        # a byte-order mark, as Notepad and Excel write
        ("bom.jsonl", b"\xef\xbb\xbf" + LINES.encode()),
        # gzip, recognized by its bytes whatever the name says
        ("gzipped.jsonl.gz", gzip.compress(LINES.encode())),
        ("gzipped-no-suffix.jsonl", gzip.compress(LINES.encode())),
    ],
)
def test_reads_the_same_records_however_the_file_is_encoded(
    tmp_path: Path, name: str, data: bytes
) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    assert [n for n, _ in iter_jsonl(path)] == [1, 3]
    records = read_records(path)
    assert [r["completion"] for r in records] == ["a", "b"]
    assert records[1]["reference"] == 3


@pytest.mark.parametrize(
    "data, expected",
    [
        # a Latin-1 byte on line 2: the error names the line, the byte and its column
        (
            b'{"completion": "a"}\n{"completion": "caf\xe9"}\n',
            ":2: not UTF-8 (byte 0xe9 at column 20)",
        ),
        # not JSON on line 2
        (b'{"completion": "a"}\n{"completion": \n', ":2: not valid JSON"),
        # one JSON array across lines: a hint on converting it, not "N bad lines"
        (
            b'[\n  {"completion": "a"},\n  {"completion": "b"}\n]\n',
            "one JSON array, not JSON Lines",
        ),
        # a truncated gzip file
        (gzip.compress(LINES.encode())[:-12], "cannot read the file"),
    ],
)
def test_unreadable_files_name_path_line_and_a_fix(
    tmp_path: Path, data: bytes, expected: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    with pytest.raises(InputError) as err:
        list(iter_jsonl(path))
    assert str(path) in str(err.value)
    assert expected in str(err.value)
    with pytest.raises(InputError) as err:
        read_records(path)
    assert expected.split(" (")[0].lstrip(":0123456789 ") in str(err.value)


def test_arrays_are_read_where_the_caller_allows_them(tmp_path: Path) -> None:
    path = tmp_path / "mbpp.json"
    path.write_text('[\n  {"task_id": 1},\n  {"task_id": 2}\n]\n')
    assert read_jsonl(path, allow_array=True) == [{"task_id": 1}, {"task_id": 2}]


def test_a_line_that_is_not_an_object_is_named(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text('{"a": 1}\n"just a string"\n')
    with pytest.raises(InputError, match=r"mixed.jsonl:2: expected a JSON object, got a string"):
        read_jsonl(path)
    assert read_jsonl(path, objects=False) == [{"a": 1}, "just a string"]


def test_sample_files_list_every_bad_line_and_keep_nothing(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_text('{"completion": "a"}\n{"prompt": "no completion"}\n{"completion": 5}\n')
    with pytest.raises(InputError) as err:
        read_records(path)
    message = str(err.value)
    assert "2 bad line(s)" in message
    assert "line 2: missing required field 'completion'" in message
    assert "line 3: 'completion' must be a string" in message


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_path_that_is_not_a_file_is_an_input_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "nothing.jsonl"
    if kind == "folder":
        path.mkdir()
    with pytest.raises(InputError, match="nothing.jsonl"):
        read_records(path)


def test_an_empty_file_has_no_records(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    assert read_records(path) == []


@pytest.mark.parametrize("compressed", [False, True])
def test_a_pipe_is_read_like_a_file(compressed: bool) -> None:
    # `rewardsmith score <(zcat big.jsonl.gz) ...` hands over a pipe, which cannot seek.
    data = b'{"completion": "4"}\n{"completion": "5"}\n'
    read_fd, write_fd = os.pipe()
    writer = threading.Thread(
        target=lambda: (
            os.write(write_fd, gzip.compress(data) if compressed else data),
            os.close(write_fd),
        )
    )
    writer.start()
    try:
        records = read_records(Path(f"/dev/fd/{read_fd}"))
    finally:
        writer.join()
        os.close(read_fd)
    assert [r["completion"] for r in records] == ["4", "5"]
