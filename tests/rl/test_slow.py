"""Slow checks (`pytest -m slow`): SmolLM2 end to end with exact resume, and the real testbed
build lands in its intended accuracy band (set `REWARDSMITH_TESTBED_CACHE` to reuse a build
instead of spending its ~10 minutes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support import EchoLengthTool

torch = pytest.importorskip("torch")

from rewardsmith.models.checkpoints import METRICS_FILE, checkpoint_dir  # noqa: E402
from rewardsmith.rl.grpo import GRPOConfig, GRPOTrainer  # noqa: E402
from rewardsmith.rl.policies import TESTBED, TESTBED_FILE  # noqa: E402
from rewardsmith.rl.prompts import load_items  # noqa: E402

pytestmark = pytest.mark.slow


def _smollm2_trainer(out: Path, library: Path, steps: int) -> GRPOTrainer:
    pytest.importorskip("gguf")
    pytest.importorskip("peft")
    from rewardsmith.rl.policies import load_smollm2

    try:
        policy = load_smollm2()
    except Exception as exc:  # the wheel is optional
        pytest.skip(f"SmolLM2 unavailable: {exc}")
    config = GRPOConfig(
        steps=steps,
        prompts_per_step=1,
        group_size=2,
        max_new_tokens=12,
        lora_rank=8,
        lr=1e-4,
        save_every=2,
        seed=0,
    )
    # a length reward varies within every group, so every step has a non-zero loss
    tools = [EchoLengthTool(), "format_tags_approx"]
    return GRPOTrainer(policy, tools, load_items("testbed", 4), config, out, library=library)


def test_smollm2_three_steps_and_exact_resume(tmp_path: Path) -> None:
    library = tmp_path / "lib.db"
    straight = _smollm2_trainer(tmp_path / "run", library, steps=3)
    straight.train(save_model=False)
    rows = [json.loads(x) for x in (tmp_path / "run" / METRICS_FILE).read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3]
    # every step had a learning signal (at ratio 1 the loss value itself can be 0 when the
    # completions of a group are equally long, so the gradient norm is the check)
    assert all(r["grad_norm"] > 0 for r in rows)
    assert "reward/format_tags_approx/thinking" in rows[-1]

    resumed = _smollm2_trainer(tmp_path / "run", library, steps=3)
    resumed.resume(checkpoint_dir(tmp_path / "run", 2))
    again = resumed.train_step()
    assert again["step"] == 3
    assert again["loss"] == rows[2]["loss"]  # bit-identical
    assert again["grad_norm"] == rows[2]["grad_norm"]
    assert again["reward"] == rows[2]["reward"]

    # The trained policy saves as a plain Hugging Face model (GGUF-loaded weights used to
    # refuse: "quantized with gguf and is not serializable") and loads back the same.
    from rewardsmith.rl.policies import load_pretrained

    saved = resumed.save_model(tmp_path / "model")
    assert "quantization_config" not in json.loads((saved / "config.json").read_text())
    back = load_pretrained(saved)
    model = resumed.model
    merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    want, got = merged.state_dict(), back.model.state_dict()
    assert any("q_proj" in k for k in want.keys() & got.keys())  # LoRA-trained weights too
    assert all(torch.equal(got[k], want[k]) for k in want.keys() & got.keys())


def test_testbed_build_is_cached_and_leaves_room_to_improve() -> None:
    from rewardsmith.rl.policies import build_testbed

    path = build_testbed(TESTBED)
    record = json.loads((path / TESTBED_FILE).read_text())
    # the format is learned; the arithmetic only partly (measured: 0.350 on 200 problems,
    # inside the 20-60% band the design asks for; see rl/policies.py)
    assert record["eval"]["parseable"] >= 0.95 * record["eval"]["n"]
    assert 0.2 <= record["eval"]["accuracy"]["value"] <= 0.6
    assert build_testbed(TESTBED) == path  # second call: the cache
