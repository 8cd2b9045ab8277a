"""Testbed builds that ship inside the package, so a first run loads a policy instead of
training one for minutes.

`src/rewardsmith/rl/shipped/<preset>/` holds a finished build (`model.safetensors`, the
tokenizer files, `config.json`, `rewardsmith_policy.json`, `testbed.json`) and `MANIFEST.json`:
the preset's config key (the hash of its whole config and the recipe version,
`TestbedConfig.key`), the SHA-256 of every file, and the torch version and thread count the
build ran with.

`shipped_build(config)` returns that folder only when the manifest's key is the config's key
(a changed recipe or config falls back to building, as before) and every file's hash matches
(a damaged install is reported and rebuilt, never loaded). `check_rebuild` rebuilds a preset
from its recipe and compares the result with the shipped files: the weights are
reproducible byte for byte with the same torch version and thread count on the same kind of
CPU; elsewhere the report gives the largest weight difference and both held-out accuracies.
`ship` writes a build into the package (maintainers, after changing a recipe).
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.rl.testbed import TESTBED_FILE, TestbedConfig, file_sha256

log = logging.getLogger(__name__)

SHIPPED_DIR = Path(__file__).resolve().parent / "shipped"
MANIFEST = "MANIFEST.json"
#: The files of a build that must match the recipe's output (the rest describe the build).
REPRODUCED = ("model.safetensors", "tokenizer.json")


def shipped_dir(config: TestbedConfig) -> Path:
    return SHIPPED_DIR / config.preset


def read_manifest(folder: Path) -> dict[str, Any] | None:
    path = folder / MANIFEST
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else None


def damaged_files(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """Files of the manifest that are missing or whose SHA-256 differs."""
    bad = []
    for name, digest in sorted(dict(manifest.get("files", {})).items()):
        path = folder / name
        if not path.is_file() or file_sha256(path) != digest:
            bad.append(name)
    return bad


def shipped_build(config: TestbedConfig) -> Path | None:
    """The shipped build of `config`'s preset when it is exactly this config's build and
    intact; None otherwise (the caller builds)."""
    folder = shipped_dir(config)
    manifest = read_manifest(folder)
    if manifest is None:
        return None
    if manifest.get("key") != config.key():
        log.info(
            "the shipped %s build is %s, not %s (another recipe): building instead",
            config.preset,
            manifest.get("key"),
            config.key(),
        )
        return None
    bad = damaged_files(folder, manifest)
    if bad:
        log.warning(
            "the shipped %s build is damaged (%s differ from MANIFEST.json): building instead; "
            "reinstall rewardsmith to restore it",
            config.preset,
            ", ".join(bad),
        )
        return None
    return folder


def ship(build: Path, config: TestbedConfig, dest: Path | None = None) -> Path:
    """Copy a finished build into the package (`dest`, default `shipped/<preset>/`) with
    its manifest; returns the folder."""
    dest = dest or shipped_dir(config)
    record = json.loads((build / TESTBED_FILE).read_text(encoding="utf-8"))
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = {}
    for path in sorted(build.iterdir()):
        if path.is_file():
            shutil.copy2(path, dest / path.name)
            files[path.name] = file_sha256(dest / path.name)
    manifest = {
        "preset": config.preset,
        "key": config.key(),
        "recipe": record.get("recipe"),
        "torch_version": record.get("torch_version"),
        "torch_threads": record.get("torch_threads"),
        "files": files,
    }
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return dest


@dataclass
class RebuildCheck:
    """How a rebuild from the recipe compares with the shipped build."""

    preset: str
    identical: dict[str, bool]
    max_weight_diff: float
    shipped_accuracy: float | None
    rebuilt_accuracy: float | None
    rebuilt: Path

    @property
    def reproduced(self) -> bool:
        return all(self.identical.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "preset": self.preset,
            "reproduced": self.reproduced,
            "identical": self.identical,
            "max_weight_diff": self.max_weight_diff,
            "shipped_accuracy": self.shipped_accuracy,
            "rebuilt_accuracy": self.rebuilt_accuracy,
            "rebuilt": str(self.rebuilt),
        }


def _accuracy(folder: Path) -> float | None:
    record = json.loads((folder / TESTBED_FILE).read_text(encoding="utf-8"))
    value = record.get("eval", {}).get("accuracy", {}).get("value")
    return None if value is None else float(value)


def compare_builds(shipped: Path, rebuilt: Path, preset: str) -> RebuildCheck:
    """File hashes of the reproduced files, the largest weight difference, both accuracies."""
    from safetensors.torch import load_file

    identical = {
        name: file_sha256(shipped / name) == file_sha256(rebuilt / name) for name in REPRODUCED
    }
    a, b = load_file(shipped / REPRODUCED[0]), load_file(rebuilt / REPRODUCED[0])
    diff = (
        max(float((a[k] - b[k]).abs().max()) for k in a)
        if a.keys() == b.keys() and all(a[k].shape == b[k].shape for k in a)
        else float("inf")
    )
    return RebuildCheck(preset, identical, diff, _accuracy(shipped), _accuracy(rebuilt), rebuilt)
