"""Resuming (`rm train --resume`, `grpo train --resume`) never unpickles code: a trainer
state loads with `weights_only=True`, so a crafted checkpoint is refused before anything in
it runs, while every state the trainers save loads as before."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.models.checkpoints import load_trainer_state

torch = pytest.importorskip("torch")


class _Payload:
    """Unpickling this runs a command: what a crafted checkpoint carries."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def test_a_crafted_checkpoint_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    state = tmp_path / "trainer_state.pt"
    torch.save({"step": 3, "weights": {}, "hook": _Payload(marker)}, state)
    with pytest.raises(ConfigError, match="cannot be loaded as plain tensors"):
        load_trainer_state(state)
    assert not marker.exists()
    # the plain pickle form too (a file need not come from torch.save)
    state.write_bytes(pickle.dumps(_Payload(marker)))
    with pytest.raises(ConfigError, match="nothing from the file was run"):
        load_trainer_state(state)
    assert not marker.exists()


def test_what_the_trainers_save_loads(tmp_path: Path) -> None:
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (step + 1))
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()
    scheduler.step()
    saved = {
        "step": 7,
        "micro": 14,
        "seconds": 1.5,
        "weights": {k: v.detach().clone() for k, v in model.named_parameters()},
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "generator": torch.Generator().manual_seed(0).get_state(),
        "torch_rng": torch.get_rng_state(),
        "config": {"lr": 1e-3, "windows": [256, 128], "name": "x", "lora": None},
    }
    torch.save(saved, tmp_path / "trainer_state.pt")
    state = load_trainer_state(tmp_path / "trainer_state.pt")
    assert state["step"] == 7 and state["config"] == saved["config"]
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])


def test_a_checkpoint_state_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "trainer_state.pt")
    with pytest.raises(ConfigError, match="not a regular file"):
        load_trainer_state(tmp_path / "trainer_state.pt")
