"""WrapLLM's scan of model folders someone else prepared: FIFOs and devices are skipped, not
waited on; a safetensors header claiming a terabyte is refused, not allocated; a weight file
no <= 10B model needs is refused, not hashed for hours. The scan finishes and says why."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.errors import InputError, LibraryError
from rewardsmith.rm.registry import count_parameters, list_models
from rewardsmith.synth.wrapllm import folder_models

CONFIG = {"architectures": ["BertForSequenceClassification"], "num_labels": 1}


def _model(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    return folder


def _header(claimed: int) -> bytes:
    return (
        claimed.to_bytes(8, "little")
        + b'{"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}'
    )


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _huge_header(path: Path) -> None:
    path.write_bytes(_header(10**12))  # claims a terabyte of header


# What a model folder's weight file may be instead of weights.
WEIGHTS = [
    pytest.param(_fifo, id="fifo"),
    pytest.param(_dev_zero, id="dev-zero"),
    pytest.param(_huge_header, id="terabyte-header"),
]


def _finishes(work: Callable[[], Any]) -> Any:
    """Run `work`; a hang (a FIFO read) fails the test instead of the suite."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = work()
        except Exception as exc:  # handed to the test's thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the scan hung on a file"
    if "error" in box:
        raise box["error"]
    return box["result"]


@pytest.mark.parametrize("make", WEIGHTS)
def test_a_hostile_weight_file_is_skipped_and_the_scan_finishes(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    folder = _model(tmp_path, "rm")
    make(folder / "model.safetensors")
    (folder / "README.md").symlink_to("/dev/zero")  # the model card too
    found = _finishes(lambda: folder_models([tmp_path]))
    assert [c.model_id for c in found] == ["rm"] and found[0].parameters == 0


@pytest.mark.parametrize("make", WEIGHTS)
def test_count_parameters_refuses_it_with_a_reason(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    make(tmp_path / "model.safetensors")
    with pytest.raises(InputError, match="not a regular file|safetensors header of"):
        _finishes(lambda: count_parameters(tmp_path))


def test_a_config_that_is_a_fifo_is_not_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "rm"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    assert _finishes(lambda: folder_models([tmp_path])) == []


def test_a_weight_file_no_small_model_needs_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _model(tmp_path, "rm")
    with (folder / "model.safetensors").open("wb") as fh:  # sparse: 60 GB on paper
        fh.truncate(60 * 2**30)
    with caplog.at_level(logging.WARNING):
        assert _finishes(lambda: folder_models([tmp_path])) == []
    assert any("more than the" in r.getMessage() for r in caplog.records)


def test_a_real_header_is_still_read(tmp_path: Path) -> None:
    body = _header(0)[8:]
    (tmp_path / "model.safetensors").write_bytes(len(body).to_bytes(8, "little") + body + bytes(8))
    assert count_parameters(tmp_path) == 2


def test_a_model_registry_that_is_a_fifo_or_too_big_is_a_clear_error(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(LibraryError, match="model registry"):
        list_models(fifo)  # refused at once, never blocks waiting for a writer
    big = tmp_path / "big.json"
    big.write_text('{"models": [' + " " * (80 * 1024 * 1024) + "]}")
    with pytest.raises(LibraryError, match="model registry"):
        list_models(big)
