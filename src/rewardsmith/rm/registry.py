"""The local model registry: reward models on this machine that WrapLLM can wrap offline.

One JSON file, `$REWARDSMITH_HOME/models/registry.json`:

    {"version": 1, "models": [{"name", "path", "encoder", "backbone", "parameters",
      "domains", "description", "source", "created_at", "metrics"}, ...]}

`rm train` adds every model it produces; `add_model` adds any local Hugging Face reward-model
directory. Names are unique (a new entry replaces the old one of that name). Writes go to a
temporary file renamed over the old one, so a crash never leaves half a file. This module
imports nothing heavy: WrapLLM reads it without torch.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rewardsmith.config import home_dir
from rewardsmith.errors import ConfigError, InputError, LibraryError
from rewardsmith.files import open_regular, read_json
from rewardsmith.types import ToolSpec

REGISTRY_VERSION = 1
MODEL_TOOL_FACTORY = "rewardsmith.tools.model:ModelTool"


@dataclass(frozen=True)
class ModelEntry:
    """One local reward model."""

    name: str
    path: str
    encoder: str = "cross"
    backbone: str = ""
    parameters: int = 0
    domains: tuple[str, ...] = ()
    description: str = ""
    source: str = "user"  # "rm train" for models rewardsmith trained
    created_at: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["domains"] = list(self.domains)
        d["metrics"] = dict(self.metrics)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelEntry:
        known = {f for f in cls.__dataclass_fields__}
        kw = {k: v for k, v in data.items() if k in known}
        kw["domains"] = tuple(kw.get("domains", ()))
        return cls(**kw)


def registry_path() -> Path:
    """`$REWARDSMITH_HOME/models/registry.json`."""
    return home_dir() / "models" / "registry.json"


def list_models(path: Path | None = None) -> list[ModelEntry]:
    """Every registered model, sorted by name ([] when the file does not exist yet)."""
    path = path or registry_path()
    if not os.path.lexists(path):
        return []
    try:  # a regular file of bounded size: never a FIFO, a device or gigabytes
        data = read_json(path)
        return sorted((ModelEntry.from_dict(m) for m in data["models"]), key=lambda m: m.name)
    except (InputError, OSError, ValueError, KeyError, TypeError) as exc:
        raise LibraryError(f"cannot read the model registry {path}: {exc}") from exc


def add_model(entry: ModelEntry, path: Path | None = None) -> None:
    """Add `entry` (replacing an entry of the same name)."""
    path = path or registry_path()
    if not entry.name:
        raise ConfigError("a registered model needs a name")
    models = [m for m in list_models(path) if m.name != entry.name] + [entry]
    data = {
        "version": REGISTRY_VERSION,
        "models": [m.to_dict() for m in sorted(models, key=lambda m: m.name)],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".registry.", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)


def search_models(
    query: str = "", domains: Sequence[str] = (), path: Path | None = None
) -> list[ModelEntry]:
    """Models whose name or description contains every word of `query` and that cover one of
    `domains` (any when empty); what WrapLLM asks before looking at a hub."""
    words = query.lower().split()
    out = []
    for m in list_models(path):
        text = f"{m.name} {m.description} {' '.join(m.domains)}".lower()
        if all(w in text for w in words) and (not domains or set(domains) & set(m.domains)):
            out.append(m)
    return out


def model_tool_spec(entry: ModelEntry) -> ToolSpec:
    """The library spec of a registered reward model: kind `model`, no reference needed."""
    return ToolSpec(
        name=entry.name,
        kind="model",
        domains=entry.domains,
        description=entry.description
        or f"Reward model ({entry.encoder}-encoder on {entry.backbone or 'a local backbone'}) "
        "scoring (prompt, completion) pairs; higher is better. Needs no reference.",
        needs_reference=False,
        reference_format="none",
        cost="moderate",
        provenance="user",
        validation={"metrics": dict(entry.metrics)} if entry.metrics else {},
    )


def model_tool_config(path: str | Path, **params: Any) -> dict[str, Any]:
    """The library config of a `model` tool reading the directory `path`."""
    return {"factory": MODEL_TOOL_FACTORY, "params": {"path": str(Path(path).resolve()), **params}}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# The safetensors format's own limit on a header (the library refuses larger ones).
MAX_SAFETENSORS_HEADER = 100_000_000


def count_parameters(model_dir: str | Path) -> int:
    """Parameters in a directory's `*.safetensors` files, read from their headers (no torch).
    Only regular files are opened (a FIFO would block), and a header must fit the format's
    limit and the file: a crafted one claiming a terabyte is an `InputError`, never read."""
    total = 0
    for file in Path(model_dir).glob("*.safetensors"):
        with open_regular(file) as fh:
            size = int.from_bytes(fh.read(8), "little")
            room = os.fstat(fh.fileno()).st_size - 8
            if not 2 <= size <= min(MAX_SAFETENSORS_HEADER, room):
                raise InputError(f"{file}: a safetensors header of {size:,} bytes; not read")
            header = json.loads(fh.read(size))
        if not isinstance(header, dict):
            raise InputError(f"{file}: not a safetensors header")
        for key, info in header.items():
            if key != "__metadata__":
                n = 1
                for d in info["shape"]:
                    n *= int(d)
                total += n
    return total


def register_trained(
    model_dir: str | Path,
    library: Any,
    name: str,
    domains: tuple[str, ...] = (),
    description: str = "",
    metrics: Mapping[str, Any] | None = None,
) -> ToolSpec:
    """Add a trained model directory to the tool library (a `model` tool) and to the local
    model registry; returns the stored spec (a new version when the name exists)."""
    model_dir = Path(model_dir).resolve()
    rbs_file = model_dir / "rbs_config.json"
    rbs = json.loads(rbs_file.read_text(encoding="utf-8")) if rbs_file.is_file() else {}
    train = rbs.get("train", {})
    result = rbs.get("result", {})
    entry = ModelEntry(
        name=name,
        path=str(model_dir),
        encoder=rbs.get("kind", "cross"),
        backbone=str(train.get("backbone", "")),
        parameters=count_parameters(model_dir),
        domains=domains,
        description=description,
        source="rm train" if train else "user",
        created_at=now(),
        metrics=dict(metrics or {"train_final": result.get("final", {})}),
    )
    stored: ToolSpec = library.add(
        model_tool_spec(entry), model_tool_config(model_dir), note=f"rm train -> {model_dir}"
    )
    add_model(entry)
    return stored
