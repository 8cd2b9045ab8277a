"""A training run's folder: numbered checkpoints and the per-step metrics log.

Both trainers (`rm.train`, `rl.grpo`) keep the same layout under their output folder:

- `checkpoints/step-N/` holds whatever the trainer saves plus `trainer_state.pt`; a
  checkpoint is written under `step-N.tmp` and renamed when complete, so a run killed
  mid-save leaves no half checkpoint that a resume would pick up; only the newest `keep`
  are kept. Steps are compared as numbers (`step-1000` is newer than `step-200`), and
  zero-padded names of older runs (`step-000200`) read the same;
- `metrics.jsonl` gets one JSON line per logged step (`"step"` in each); a resumed run first
  drops the lines after its checkpoint's step, since it logs those steps again.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.files import append_line, is_regular
from rewardsmith.jsonl import atomic_output, iter_jsonl

CHECKPOINTS = "checkpoints"
STATE_FILE = "trainer_state.pt"
METRICS_FILE = "metrics.jsonl"
_PREFIX = "step-"
_PARTIAL = ".tmp"


def checkpoint_step(path: Path) -> int | None:
    """N for a folder named `step-N`, else None (partial `.tmp` folders, other files)."""
    digits = path.name.removeprefix(_PREFIX)
    if digits == path.name or not digits.isdigit():
        return None
    return int(digits)


def checkpoint_dir(out: Path, step: int) -> Path:
    """Where the checkpoint of step `step` lives: `OUT/checkpoints/step-N`."""
    return Path(out) / CHECKPOINTS / f"{_PREFIX}{step}"


def saved_checkpoints(out: Path) -> list[tuple[int, Path]]:
    """Every complete checkpoint of a run (its folder holds `trainer_state.pt`), oldest first."""
    root = Path(out) / CHECKPOINTS
    if not root.is_dir():
        return []
    found = []
    for path in root.iterdir():
        step = checkpoint_step(path)
        if step is not None and (path / STATE_FILE).is_file():
            found.append((step, path))
    return sorted(found)


def latest_checkpoint(out: Path) -> Path | None:
    """The newest complete `OUT/checkpoints/step-N`, or None."""
    found = saved_checkpoints(out)
    return found[-1][1] if found else None


@contextmanager
def writing_checkpoint(out: Path, step: int, keep: int) -> Iterator[Path]:
    """A fresh folder to save step `step` into; on leaving the block it becomes
    `OUT/checkpoints/step-N` and all but the newest `keep` checkpoints are deleted. An error
    inside the block removes the partial folder and keeps the older checkpoints."""
    if keep < 1:
        raise ConfigError(f"keep must be >= 1 checkpoint, got {keep}")
    final = checkpoint_dir(out, step)
    partial = final.with_name(final.name + _PARTIAL)
    _remove(partial)
    partial.mkdir(parents=True)
    try:
        yield partial
        if not (partial / STATE_FILE).is_file():
            raise ConfigError(f"a checkpoint needs {STATE_FILE}; none was written to {partial}")
        _remove(final)
        partial.rename(final)
    finally:
        _remove(partial)
    for _, stale in saved_checkpoints(out)[:-keep]:
        shutil.rmtree(stale, ignore_errors=True)


def load_trainer_state(path: Path, map_location: str | None = None) -> dict[str, Any]:
    """A checkpoint's `trainer_state.pt`, unpickled with `weights_only=True`: tensors, numbers,
    strings and containers of them, never an object whose loading runs code (a crafted
    checkpoint in a copied run folder would otherwise execute on `--resume`). Anything else
    is a `ConfigError` saying so; nothing from the file was run."""
    import pickle

    import torch

    if not is_regular(path):
        raise ConfigError(f"checkpoint state {path} is not a regular file; cannot resume from it")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError) as exc:
        raise ConfigError(
            f"checkpoint state {path} cannot be loaded as plain tensors and values "
            f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); resume only from "
            "checkpoints rewardsmith wrote (nothing from the file was run)"
        ) from None
    if not isinstance(state, dict):
        raise ConfigError(f"checkpoint state {path} is not a trainer state (a dictionary)")
    return state


def _remove(path: Path) -> None:
    """Remove a folder, or whatever else holds its name (a symlink is removed, not followed)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def append_metrics(path: Path, row: Mapping[str, Any]) -> None:
    """Add one step's metrics as a JSON line."""
    append_line(path, json.dumps(row))


def truncate_metrics(path: Path, step: int) -> None:
    """Drop the metric lines logged after `step` (the checkpoint a run resumes from); the
    file is rewritten atomically. A line without a numeric `step` raises `InputError`."""
    if not path.is_file():
        return
    kept = []
    for line_no, row in iter_jsonl(path):
        row_step = row.get("step") if isinstance(row, dict) else None
        if not isinstance(row_step, int):
            raise InputError(f"{path}:{line_no}: a metrics line needs an integer 'step'")
        if row_step <= step:
            kept.append(row)
    with atomic_output(path) as handle:
        for row in kept:
            handle.write(json.dumps(row) + "\n")
