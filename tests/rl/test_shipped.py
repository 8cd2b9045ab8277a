"""Testbed builds that ship with the package: a first run loads them without training, only
when they are exactly the preset's build (config key and file hashes), and a damaged or stale
copy is rebuilt instead of loaded."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.rl import policies, shipped  # noqa: E402
from rewardsmith.rl.policies import PRESETS, TESTBED_MULTI_TINY, load_policy  # noqa: E402
from rewardsmith.rl.shipped import (  # noqa: E402
    MANIFEST,
    SHIPPED_DIR,
    compare_builds,
    damaged_files,
    read_manifest,
    ship,
    shipped_build,
)

SHIPPED = sorted(p.name for p in SHIPPED_DIR.iterdir() if (p / MANIFEST).is_file())


def test_the_full_size_presets_ship() -> None:
    # both take minutes to tens of minutes to build on CPU: a first run must not wait for that
    assert {"testbed", "testbed-multi"} <= set(SHIPPED)


def test_the_shipped_multi_task_build_sits_in_its_accuracy_band() -> None:
    # what testbed v2 is for: every family right often enough for GRPO to get a signal and
    # wrong often enough for reward choice to matter (the held-out record of the build)
    import json

    record = json.loads((SHIPPED_DIR / "testbed-multi" / "testbed.json").read_text())
    tasks = record["eval"]["tasks"]
    assert set(tasks) == set(PRESETS["testbed-multi"].families)
    for family, result in tasks.items():
        assert result["n"] >= 200, family
        assert 0.15 <= result["accuracy"]["value"] <= 0.75, (family, result["accuracy"])


@pytest.mark.parametrize("preset", SHIPPED)
def test_every_shipped_build_is_its_presets_current_build_and_intact(preset: str) -> None:
    folder = SHIPPED_DIR / preset
    manifest = read_manifest(folder)
    assert manifest is not None and manifest["key"] == PRESETS[preset].key()
    assert damaged_files(folder, manifest) == []
    assert shipped_build(PRESETS[preset]) == folder
    # a few MB at most: the package carries them
    assert sum(p.stat().st_size for p in folder.iterdir()) < 8_000_000


@pytest.mark.parametrize("preset", SHIPPED)
def test_a_first_run_loads_the_shipped_policy_without_building(
    preset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REWARDSMITH_HOME", str(tmp_path / "fresh_home"))
    monkeypatch.delenv("REWARDSMITH_TESTBED_CACHE", raising=False)

    def no_build(*args: object, **kwargs: object) -> Path:
        raise AssertionError("a shipped preset must not be built")

    monkeypatch.setattr(policies, "build_testbed", no_build)
    policy = load_policy(preset)
    assert Path(policy.source) == SHIPPED_DIR / preset
    assert policy.name == preset and policy.style == "testbed"
    assert not (tmp_path / "fresh_home" / "testbed").exists()


def test_a_damaged_or_stale_copy_is_not_loaded(
    tiny_multi: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(shipped, "SHIPPED_DIR", tmp_path / "shipped")
    folder = ship(tiny_multi, TESTBED_MULTI_TINY)
    assert folder == tmp_path / "shipped" / "testbed-multi-tiny"
    assert shipped_build(TESTBED_MULTI_TINY) == folder
    # the same build compared with itself: every reproduced file identical
    check = compare_builds(folder, tiny_multi, "testbed-multi-tiny")
    assert check.reproduced and check.max_weight_diff == 0.0
    # another config (a changed recipe) does not take the shipped build
    other = policies.with_preset("testbed-multi-tiny", seed=1)
    assert shipped_build(other) is None
    # a changed byte in the weights: reported and not loaded
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="rewardsmith.rl.shipped"):
        assert shipped_build(TESTBED_MULTI_TINY) is None
    assert "damaged" in caplog.text and "model.safetensors" in caplog.text
