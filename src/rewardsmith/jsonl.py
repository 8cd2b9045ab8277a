"""Reading JSON Lines (one reader for every file rewardsmith reads) and writing scored lines.

Every JSONL file rewardsmith reads (samples, examples, training prompts, evaluation sets,
metrics) goes through `iter_jsonl`: gzip files (by their magic bytes, whatever the name),
a UTF-8 byte-order mark and CRLF line ends are read transparently; blank lines are skipped;
a byte that is not UTF-8, a line that is not JSON, or a file that is one JSON array raises
`InputError` naming the path, the line and what to do about it. So does a file past the
limits that keep a hostile one from exhausting memory or the stack: a line longer than
`MAX_LINE_BYTES`, JSON nested deeper than `MAX_JSON_DEPTH`, a gzip file that decompresses to
more than `MAX_GZIP_RATIO` times its size. `read_records` reads on past a bad line and lists
every bad line at once.

Sample lines (docs/architecture.md, Design, "JSONL in/out") are read by the one sample reader,
`rewardsmith.samples.sample_from_dict`, which the server's request bodies and the client use
too.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from rewardsmith.errors import InputError
from rewardsmith.files import open_regular
from rewardsmith.samples import json_type, sample_from_dict
from rewardsmith.types import Reward

# How many bad lines one error message lists before it says "and N more".
MAX_REPORTED_ERRORS = 20
# Limits on what a file may hold, so that a hostile one (a gzip bomb, one endless line, a
# line of nested brackets) ends in a clear error naming its line, never in a MemoryError or
# RecursionError. A sample is a flat object of strings: real ones are far inside these.
MAX_LINE_BYTES = 32 * 2**20
MAX_JSON_DEPTH = 100
# A gzip file may decompress to `MAX_GZIP_RATIO` times its compressed size, and to at least
# `GZIP_FLOOR_BYTES` whatever its size (text compresses 3-20x; a bomb over 1,000x).
MAX_GZIP_RATIO = 100
GZIP_FLOOR_BYTES = 64 * 2**20
# A line still without a line break after this many bytes ends the file's reading: it is not
# text in lines (/dev/zero, a binary file).
_ENDLESS_BYTES = 4 * MAX_LINE_BYTES
_READ_BLOCK = 2**20
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
ARRAY_HINT = (
    "the file is one JSON array, not JSON Lines (one object per line); convert it with "
    "`jq -c '.[]' FILE > FILE.jsonl`"
)


class _Counted:
    """A binary file that counts the bytes read from it (a gzip file's compressed size,
    pipes included)."""

    def __init__(self, raw: BinaryIO) -> None:
        self.raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self.raw.read(size)
        self.count += len(data)
        return data

    def close(self) -> None:
        self.raw.close()


class _Source:
    """An input file's bytes, decompressed when it is gzip, with the gzip size limit."""

    def __init__(self, path: Path, regular_only: bool = False) -> None:
        self.path = path
        try:
            # a run folder's file must be a regular one (a FIFO there would block the read)
            raw = open_regular(path) if regular_only else open(path, "rb")  # noqa: SIM115
            # peek, not read + seek: a pipe (`<(zcat ...)`, /dev/stdin) cannot seek.
            magic = raw.peek(2)[:2]
        except IsADirectoryError:
            raise InputError(f"{path} is a folder, not a JSONL file") from None
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
        self.compressed: _Counted | None = None
        self.handle: Any = raw
        if magic == _GZIP_MAGIC:
            self.compressed = _Counted(raw)
            self.handle = gzip.GzipFile(fileobj=self.compressed, mode="rb")  # type: ignore[call-overload]
        self.total = 0

    def readline(self, line_no: int) -> tuple[bytes, bool]:
        """(the next line, whether it was longer than `MAX_LINE_BYTES`); a too-long line is
        read past (and dropped) up to its end."""
        raw: bytes = self.handle.readline(MAX_LINE_BYTES + 1)
        self._count(len(raw), line_no)
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            return raw, False
        skipped = len(raw)
        while True:
            block: bytes = self.handle.readline(_READ_BLOCK)
            self._count(len(block), line_no)
            skipped += len(block)
            if not block or block.endswith(b"\n"):
                return b"", True
            if skipped > _ENDLESS_BYTES:
                raise InputError(
                    f"{self.path}:{line_no}: no line break in {skipped // 2**20} MiB: not a "
                    "JSON Lines file (one object per line)"
                )

    def _count(self, n: int, line_no: int) -> None:
        self.total += n
        if self.compressed is None:
            return
        allowed = max(GZIP_FLOOR_BYTES, MAX_GZIP_RATIO * self.compressed.count)
        if self.total > allowed:
            raise InputError(
                f"{self.path}:{line_no}: the gzip file decompresses to more than "
                f"{allowed // 2**20} MiB ({MAX_GZIP_RATIO}x its compressed size, at least "
                f"{GZIP_FLOOR_BYTES // 2**20} MiB): refused as a likely gzip bomb; decompress "
                "it yourself if the data is real"
            )

    def close(self) -> None:
        self.handle.close()
        if self.compressed is not None:
            self.compressed.close()


def _raw_lines(path: Path, regular_only: bool = False) -> Iterator[tuple[int, str | None, str]]:
    """`(line_number, text, "")` for every non-blank line, `(line_number, None, why)` for a
    line that cannot be text (too long, not UTF-8); a file that cannot be read at all raises
    `InputError`."""
    source = _Source(path, regular_only)
    line_no = 0
    try:
        while True:
            line_no += 1
            raw, too_long = source.readline(line_no)
            if too_long:
                yield (
                    line_no,
                    None,
                    (
                        f"longer than {MAX_LINE_BYTES // 2**20} MiB (one line is one sample; a "
                        "line that long is refused so that the file cannot exhaust memory)"
                    ),
                )
                continue
            if not raw:
                return
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield (
                    line_no,
                    None,
                    (
                        f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}); "
                        "re-encode the file as UTF-8, e.g. `iconv -f latin1 -t utf-8 FILE > FILE.utf8`"
                    ),
                )
                continue
            if text.strip():
                yield line_no, text, ""
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"{path}: cannot read the file: {exc}") from None
    finally:
        source.close()


def iter_lines(path: str | Path, *, regular_only: bool = False) -> Iterator[tuple[int, str]]:
    """`(line_number, text)` for every non-blank line of a text file (gzip, BOM and CRLF
    handled); a line that is not UTF-8 or longer than `MAX_LINE_BYTES` raises `InputError`
    naming it. `regular_only`: anything but a regular file (a FIFO, a device) is refused, as
    for files in run folders (a user's own input may be a pipe)."""
    path = Path(path)
    for line_no, text, why in _raw_lines(path, regular_only):
        if text is None:
            raise InputError(f"{path}:{line_no}: {why}")
        yield line_no, text


def iter_jsonl(
    path: str | Path, *, allow_array: bool = False, regular_only: bool = False
) -> Iterator[tuple[int, Any]]:
    """`(line_number, value)` for every line of a JSONL file; see the module docstring.

    `allow_array=True` also reads a file that is one JSON array (MBPP's sanitized file, some
    preference sets), yielding `(element_number, value)` from 1. Without it, such a file
    raises `InputError` with a hint on converting it.
    """
    path = Path(path)
    lines = iter_lines(path, regular_only=regular_only)
    first = True
    for line_no, text in lines:
        if first and text.lstrip().startswith("["):
            first = False
            if allow_array:
                rest = "".join(t for _, t in lines)
                yield from _array_items(path, text + rest)
                return
            try:
                value = _decode(path, line_no, text)
            except InputError as exc:
                if "deeper than" in str(exc):
                    raise
                raise InputError(f"{path}:{line_no}: {ARRAY_HINT}") from None
            yield line_no, value
            continue
        first = False
        yield line_no, _decode(path, line_no, text)


def _decode(path: Path, line_no: int, text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{line_no}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    except RecursionError:
        value = None
        deep = True
    else:
        deep = text.count("[") + text.count("{") > MAX_JSON_DEPTH and _too_deep(value)
    if deep:
        raise InputError(
            f"{path}:{line_no}: JSON nested deeper than {MAX_JSON_DEPTH} levels; a sample is "
            "an object of strings (prompt, completion, reference...), not a deep structure"
        )
    return value


def _too_deep(value: Any) -> bool:
    """Is `value` nested deeper than `MAX_JSON_DEPTH` (walked without recursion)?"""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _array_items(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not a valid JSON array ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise InputError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array or JSON Lines")
    if _too_deep(data):
        raise InputError(f"{path}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    yield from enumerate(data, start=1)


def read_jsonl(
    path: str | Path,
    *,
    allow_array: bool = False,
    objects: bool = True,
    regular_only: bool = False,
) -> list[Any]:
    """Every value of a JSONL file (see `iter_jsonl`); with `objects` (default) each must be
    a JSON object, else `InputError` names the first line that is not."""
    out = []
    for line_no, value in iter_jsonl(path, allow_array=allow_array, regular_only=regular_only):
        if objects and not isinstance(value, dict):
            raise InputError(f"{path}:{line_no}: expected a JSON object, got {json_type(value)}")
        out.append(value)
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read and validate every sample line of a JSONL file before anything is scored.

    Any bad line raises `InputError` listing each bad line number, so nothing is scored (and
    no output written) from a file that would lose lines. An empty file gives `[]`.
    """
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for line_no, text, why in _raw_lines(Path(path)):
        if text is None:
            errors.append(f"line {line_no}: {why}")
            continue
        if not records and not errors and text.lstrip().startswith("["):
            raise InputError(f"{path}:{line_no}: {ARRAY_HINT}")
        try:
            data = _decode(path, line_no, text)
            sample_from_dict(data)
        except InputError as exc:
            message = str(exc)
            prefix = f"{path}:{line_no}: "
            errors.append(f"line {line_no}: {message.removeprefix(prefix)}")
            continue
        records.append(data)
    if len(errors) == 1:  # `path:N: why`, as every reader names one bad line
        raise InputError(f"{path}:{errors[0].removeprefix('line ')}; nothing was scored")
    if errors:
        shown = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(shown)
        tail = f"\n  ... and {more} more" if more else ""
        raise InputError(
            f"{path}: {len(errors)} bad line(s), nothing was scored:\n  "
            + "\n  ".join(shown)
            + tail
        )
    return records


def scored_record(record: Mapping[str, Any], reward: Reward) -> dict[str, Any]:
    """The output line: the input record plus `reward, status, tool, components, reason`."""
    return {**record, **reward.to_dict()}


def write_line(handle: IO[str], record: Mapping[str, Any]) -> None:
    handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def check_output_path(path: Path) -> None:
    """Create `path`'s folder, or raise `InputError` saying why the output cannot go there
    (a file where a folder should be, no permission, the path is itself a folder). Called
    before any work starts, so a long run never ends in an unwritable output."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"-o {path}: is a folder; name the output file, e.g. {path}/out.jsonl")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InputError(
            f"-o {path}: cannot create the folder {path.parent}: a file of that name is in the way"
        ) from None
    except OSError as exc:
        raise InputError(
            f"-o {path}: cannot create the folder {path.parent}: {exc.strerror or exc}"
        ) from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise InputError(f"-o {path}: the folder {path.parent} is not writable")


@contextmanager
def atomic_output(path: Path) -> Iterator[IO[str]]:
    """Write to a temporary file beside `path` and rename it into place at the end, so an
    interrupted run never leaves a half-written output file behind. An output that cannot be
    written raises `InputError` before anything is written (see `check_output_path`)."""
    path = Path(path)
    check_output_path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise InputError(f"-o {path}: cannot write there: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
