"""Reading JSON Lines (one reader for every file rewardsmith reads) and writing scored lines.

Every JSONL file rewardsmith reads (samples, examples, training prompts, evaluation sets,
metrics) goes through `iter_jsonl`: gzip files (by their magic bytes, whatever the name),
a UTF-8 byte-order mark and CRLF line ends are read transparently; blank lines are skipped;
a byte that is not UTF-8, a line that is not JSON, or a file that is one JSON array raises
`InputError` naming the path, the line and what to do about it.

Sample lines (DESIGN.md, "JSONL in/out"): `{"id", "prompt", "completion", "reference",
"task", "meta"}`; only `completion` is required. A reference that is not a string (a
number, a JSON object such as a reasoning-gym entry) is kept as its JSON text.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO

from rewardsmith.errors import InputError
from rewardsmith.types import Reward, Sample

# How many bad lines one error message lists before it says "and N more".
MAX_REPORTED_ERRORS = 20
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
ARRAY_HINT = (
    "the file is one JSON array, not JSON Lines (one object per line); convert it with "
    "`jq -c '.[]' FILE > FILE.jsonl`"
)


def _open_binary(path: Path) -> BinaryIO:
    try:
        handle = open(path, "rb")  # noqa: SIM115 - returned to the caller
        # peek, not read + seek: a pipe (`<(zcat ...)`, /dev/stdin) cannot seek.
        magic = handle.peek(2)[:2]
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a JSONL file") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if magic == _GZIP_MAGIC:
        return gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[return-value]
    return handle


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """`(line_number, text)` for every non-blank line of a text file (gzip, BOM and CRLF
    handled); a byte that is not UTF-8 raises `InputError` naming its line and column."""
    path = Path(path)
    with _open_binary(path) as handle:
        try:
            for line_no, raw in enumerate(handle, start=1):
                if line_no == 1 and raw.startswith(_BOM):
                    raw = raw[len(_BOM) :]
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"{path}:{line_no}: not UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                        f"{exc.start + 1}); re-encode the file as UTF-8, e.g. "
                        "`iconv -f latin1 -t utf-8 FILE > FILE.utf8`"
                    ) from None
                if text.strip():
                    yield line_no, text
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise InputError(f"{path}: cannot read the file: {exc}") from None


def iter_jsonl(path: str | Path, *, allow_array: bool = False) -> Iterator[tuple[int, Any]]:
    """`(line_number, value)` for every line of a JSONL file; see the module docstring.

    `allow_array=True` also reads a file that is one JSON array (MBPP's sanitized file, some
    preference sets), yielding `(element_number, value)` from 1. Without it, such a file
    raises `InputError` with a hint on converting it.
    """
    path = Path(path)
    lines = iter_lines(path)
    first = True
    for line_no, text in lines:
        if first and text.lstrip().startswith("["):
            first = False
            if allow_array:
                rest = "".join(t for _, t in lines)
                yield from _array_items(path, text + rest)
                return
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise InputError(f"{path}:{line_no}: {ARRAY_HINT}") from None
            yield line_no, value
            continue
        first = False
        yield line_no, _decode(path, line_no, text)


def _decode(path: Path, line_no: int, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}:{line_no}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None


def _array_items(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: not a valid JSON array ({exc.msg}, line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON array or JSON Lines")
    yield from enumerate(data, start=1)


def read_jsonl(path: str | Path, *, allow_array: bool = False, objects: bool = True) -> list[Any]:
    """Every value of a JSONL file (see `iter_jsonl`); with `objects` (default) each must be
    a JSON object, else `InputError` names the first line that is not."""
    out = []
    for line_no, value in iter_jsonl(path, allow_array=allow_array):
        if objects and not isinstance(value, dict):
            raise InputError(f"{path}:{line_no}: expected a JSON object, got {_json_type(value)}")
        out.append(value)
    return out


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "true/false"}.get(
        type(value), "a number" if isinstance(value, int | float) else "null"
    )


def sample_from_dict(data: Mapping[str, Any]) -> Sample:
    """Build a `Sample` from one input record; raise `InputError` saying what is wrong."""
    if not isinstance(data, Mapping):
        raise InputError(f"expected a JSON object, got {_json_type(data)}")
    if "completion" not in data:
        raise InputError("missing required field 'completion'")
    completion = data["completion"]
    if not isinstance(completion, str):
        raise InputError(f"'completion' must be a string, got {type(completion).__name__}")
    prompt = data.get("prompt")
    is_chat = isinstance(prompt, list) and all(isinstance(m, Mapping) for m in prompt)
    if prompt is not None and not isinstance(prompt, str) and not is_chat:
        raise InputError("'prompt' must be a string or a list of chat messages")
    reference = data.get("reference")
    if reference is not None and not isinstance(reference, str):
        reference = json.dumps(reference, ensure_ascii=False)
    task = data.get("task")
    if task is not None and not isinstance(task, str):
        raise InputError(f"'task' must be a string, got {type(task).__name__}")
    meta = data.get("meta") or {}
    if not isinstance(meta, Mapping):
        raise InputError(f"'meta' must be an object, got {type(meta).__name__}")
    raw_id = data.get("id")
    return Sample(
        completion=completion,
        prompt=prompt,
        reference=reference,
        task=task,
        meta=dict(meta),
        id=None if raw_id is None else str(raw_id),
    )


def as_samples(items: Iterable[Sample | Mapping[str, Any]]) -> list[Sample]:
    """Accept `Sample`s or dicts in the JSONL format."""
    out = []
    for i, item in enumerate(items):
        if isinstance(item, Sample):
            out.append(item)
            continue
        try:
            out.append(sample_from_dict(item))
        except InputError as exc:
            raise InputError(f"sample {i}: {exc}") from None
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read and validate every sample line of a JSONL file before anything is scored.

    Any bad line raises `InputError` listing each bad line number, so nothing is scored (and
    no output written) from a file that would lose lines. An empty file gives `[]`.
    """
    records: list[dict[str, Any]] = []
    errors: list[str] = []
    for line_no, text in iter_lines(path):
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
