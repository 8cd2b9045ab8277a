"""Reading and writing files in folders rewardsmith does not control: run folders, model
folders, output folders that someone else could have prepared.

What a folder may hold that a plain `open` would trust: a symlink where an output will be
written (`report.md -> ~/.bashrc`: the write would go through it), a FIFO where an input is
read (the read blocks forever), a device (`/dev/zero`: endless), a file far larger than its
kind ever is. So:

- `atomic_write(path, data)` writes a fresh temporary file beside `path` (created with
  `O_EXCL | O_NOFOLLOW`, so nothing planted under its name is followed) and renames it over
  `path`: a symlink at `path` is replaced, never written through, and a reader sees the old
  file or the new one. With `root`, every folder between `root` and `path` is opened without
  following symlinks too (a `plots -> /etc` inside a run folder is refused).
- `append_line(path, text)` appends without following a symlink at `path`.
- `written_aside(folder)` gives a fresh folder to save into (a library's `save_pretrained`
  opens its files itself) and moves what was saved into `folder` by rename: a symlink
  planted there under a saved file's name is replaced, not written through.
- `read_bytes` / `read_text` / `read_json` read only a regular file (opened non-blocking, then
  checked with `fstat`, so a FIFO neither blocks nor is read), at most `max_bytes` of it; a
  file that is not regular or too large is an `InputError` naming it. `is_regular(path)` is
  the same check for code that only needs to know.

Symlinks in the *path the user gave* (a home folder on another disk) are followed as usual:
what is refused is what a folder's content can redirect.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError

# Sizes no file of these kinds reaches: configs, metrics, reports, candidate sources.
MAX_JSON_BYTES = 64 * 2**20
MAX_TEXT_BYTES = 64 * 2**20

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def is_regular(path: str | Path) -> bool:
    """Is `path` a regular file (after following symlinks)? False for folders, FIFOs,
    sockets, devices and missing paths."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: str | Path, max_bytes: int | None = None) -> io.BufferedReader:
    """`path` opened for reading if it is a regular file of at most `max_bytes`; else an
    `InputError` naming it (a FIFO is opened non-blocking, so the check itself cannot hang)."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path} is not a regular file ({_kind(info.st_mode)}); not read")
        if max_bytes is not None and info.st_size > max_bytes:
            raise InputError(
                f"{path} is {info.st_size:,} bytes, more than the {max_bytes:,} a file of its "
                "kind may hold; not read"
            )
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def read_bytes(path: str | Path, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes` (see the module docstring)."""
    with open_regular(path, max_bytes) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:  # grew while being read
        raise InputError(f"{path} grew past {max_bytes:,} bytes while read; not read")
    return data


def read_text(path: str | Path, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """A regular file's UTF-8 text (see `read_bytes`)."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 (byte {exc.start})") from None


def read_json(path: str | Path, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """A regular file's JSON value; `InputError` when it is not one (or nested past the
    parser's depth)."""
    text = read_text(path, max_bytes)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not valid JSON ({str(exc)[:120]})") from None


def _parent_fd(path: Path, root: Path | None) -> int:
    """An open descriptor of `path`'s folder; below `root`, reached without following a
    symlink (folders missing there are created)."""
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path.parent, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        # lexically: resolving would follow the very symlinks this walk refuses
        parts = Path(os.path.abspath(path.parent)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        raise InputError(f"{path} is not inside {root}") from None
    fd = os.open(Path(root), os.O_RDONLY | _DIRECTORY | _CLOEXEC)
    try:
        for part in parts:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            try:
                nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
            except OSError:
                raise InputError(
                    f"{Path(root) / part}: not a plain folder (a symlink or a file); refused "
                    "to write through it"
                ) from None
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def atomic_write(path: str | Path, data: str | bytes, *, root: str | Path | None = None) -> Path:
    """Write `data` to `path` atomically, never through a symlink (see the module docstring).
    Returns `path`."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        dir_fd = _parent_fd(path, Path(root) if root is not None else None)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    tmp = f".{path.name}.{secrets.token_hex(6)}.tmp"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
        fd = os.open(tmp, flags, 0o666, dir_fd=dir_fd)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)
    return path


def write_verified(path: str | Path, data: bytes) -> None:
    """Write `data` to `path`, then its SHA-256 beside it (`PATH.sha256`), both atomically: a
    reader (`read_verified`) trusts the file only once both exist and agree (caches of derived
    files: a model export, an inflated model)."""
    path = Path(path)
    atomic_write(path, data)
    atomic_write(_digest_path(path), hashlib.sha256(data).hexdigest())


def read_verified(path: str | Path, max_bytes: int) -> bytes:
    """The bytes `write_verified` wrote to `path` (a regular file of at most `max_bytes`).
    Raises `InputError` (or `OSError`) when it or its digest cannot be read, and `InputError`
    when they do not agree: a damaged, truncated or swapped file is never used."""
    path = Path(path)
    data = read_bytes(path, max_bytes)
    expected = read_text(_digest_path(path)).strip()
    if hashlib.sha256(data).hexdigest() != expected:
        raise InputError(f"{path} does not match its digest")
    return data


def _digest_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def open_append(path: str | Path) -> int:
    """An `O_APPEND` descriptor on the regular file `path` (created with its folder); a
    symlink or anything but a regular file at `path` is refused with `InputError`."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC | _NONBLOCK
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise InputError(f"cannot append to {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{path} is not a regular file; not written")
    return fd


def append_line(path: str | Path, text: str) -> None:
    """Append `text` (and a newline) to `path`, creating it; a symlink at `path` is refused."""
    fd = open_append(path)
    try:
        view = memoryview((text + "\n").encode("utf-8"))
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


@contextlib.contextmanager
def written_aside(folder: str | Path) -> Iterator[Path]:
    """A fresh hidden folder inside `folder` to save into; on leaving the block without an
    error, each entry saved there replaces the one of its name in `folder` (a symlink or a
    folder there is removed first, never followed). The aside folder is removed either way."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    aside = Path(tempfile.mkdtemp(prefix=".saving-", dir=folder))
    try:
        yield aside
        for entry in sorted(aside.iterdir()):
            dest = folder / entry.name
            if dest.is_symlink():
                dest.unlink()
            elif dest.is_dir():
                shutil.rmtree(dest)
            os.replace(entry, dest)
    finally:
        shutil.rmtree(aside, ignore_errors=True)
