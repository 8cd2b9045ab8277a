"""Files in folders someone else prepared: writes never go through a planted symlink, reads
take only regular files of bounded size (a FIFO or a device neither hangs nor floods)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.files import (
    append_line,
    atomic_write,
    is_regular,
    read_json,
    read_text,
    read_verified,
    write_verified,
)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the folder that a planted symlink points at."""
    target = tmp_path / "outside" / "precious.txt"
    target.parent.mkdir()
    target.write_text("keep me")
    return target


def test_a_symlink_where_the_output_goes_is_replaced_not_written_through(
    tmp_path: Path, outside: Path
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "report.md").symlink_to(outside)
    atomic_write(folder / "report.md", "new page")
    assert outside.read_text() == "keep me"
    assert (
        not (folder / "report.md").is_symlink() and (folder / "report.md").read_text() == "new page"
    )
    assert [p.name for p in folder.iterdir()] == ["report.md"]  # no temporary file left


def test_a_symlinked_subfolder_below_the_root_is_refused(tmp_path: Path, outside: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "candidates").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(InputError, match="not a plain folder"):
        atomic_write(folder / "candidates" / "precious.txt", "x", root=folder)
    assert outside.read_text() == "keep me"
    atomic_write(folder / "new" / "deeper" / "f.txt", "ok", root=folder)  # made as plain folders
    assert (folder / "new" / "deeper" / "f.txt").read_text() == "ok"


def test_appending_refuses_a_symlink(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "metrics.jsonl").symlink_to(outside)
    with pytest.raises(InputError, match="cannot append"):
        append_line(tmp_path / "metrics.jsonl", "{}")
    assert outside.read_text() == "keep me"


# What a folder may hold under a file's name, instead of a regular file.
def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _folder(path: Path) -> None:
    path.mkdir()


NOT_REGULAR = [
    pytest.param(_fifo, "a FIFO", id="fifo"),
    pytest.param(_dev_zero, "a character device", id="dev-zero"),
    pytest.param(_folder, "a folder", id="folder"),
]


@pytest.mark.parametrize(("make", "kind"), NOT_REGULAR)
def test_only_regular_files_are_read(tmp_path: Path, make: object, kind: str) -> None:
    path = tmp_path / "summary.json"
    make(path)  # type: ignore[operator]
    assert not is_regular(path)
    with pytest.raises(InputError, match=f"not a regular file \\({kind}\\)"):
        read_json(path)  # returns at once: a FIFO is opened without waiting for a writer


def test_a_file_over_its_size_limit_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with path.open("wb") as fh:  # sparse: claims 2 GB, costs nothing
        fh.truncate(2 * 2**30)
    with pytest.raises(InputError, match="more than the 1,000"):
        read_text(path, 1_000)


def test_nested_json_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="not valid JSON"):
        read_json(path)


def test_saving_aside_replaces_planted_symlinks(tmp_path: Path, outside: Path) -> None:
    from rewardsmith.files import written_aside

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").symlink_to(outside)  # what `save_pretrained` would open
    (folder / "keep.txt").write_text("untouched")
    with written_aside(folder) as aside:
        (aside / "config.json").write_text("{}")  # as a library's save would
    assert outside.read_text() == "keep me"
    assert (folder / "config.json").read_text() == "{}" and not (
        folder / "config.json"
    ).is_symlink()
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "keep.txt"]


@pytest.mark.parametrize(
    "damage", ["flip a byte", "truncate", "drop the digest", "swap the digest"]
)
def test_a_verified_file_is_refused_once_damaged(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "model.bin"
    write_verified(path, b"weights" * 100)
    assert read_verified(path, 10_000) == b"weights" * 100
    digest = tmp_path / "model.bin.sha256"
    if damage == "flip a byte":
        path.write_bytes(b"Weights" + b"weights" * 99)
    elif damage == "truncate":
        path.write_bytes(b"weights" * 99)
    elif damage == "drop the digest":
        digest.unlink()
    else:
        write_verified(tmp_path / "other.bin", b"other")
        digest.write_text((tmp_path / "other.bin.sha256").read_text())
    with pytest.raises((InputError, OSError)):
        read_verified(path, 10_000)
