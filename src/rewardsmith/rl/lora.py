"""LoRA adapters for GRPO (through peft), the same for the embedded and the TRL backend."""

from __future__ import annotations

from typing import Any

from rewardsmith.errors import MissingDependencyError

#: Linear layers of Llama-style models (LoRA targets): attention and MLP projections.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _peft() -> Any:
    # peft is optional (the `rl` extra): full fine-tuning (`lora_rank=0`) runs without it.
    try:
        import peft
    except ImportError as exc:
        raise MissingDependencyError("peft", "rl") from exc
    return peft


def lora_config(model: Any, rank: int, alpha: int, dropout: float = 0.0) -> Any:
    """peft's `LoraConfig` on `LORA_TARGETS` that `model` has (every linear layer when it has
    none of them, e.g. a GPT-2-style model)."""
    peft = _peft()
    names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
    targets: list[str] | str = [t for t in LORA_TARGETS if t in names] or "all-linear"
    return peft.LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=targets,
        bias="none",
        task_type="CAUSAL_LM",
    )


def add_lora(model: Any, rank: int, alpha: int, dropout: float = 0.0) -> Any:
    """`model` wrapped with fresh LoRA adapters (`lora_config`); only they are trainable."""
    return _peft().get_peft_model(model, lora_config(model, rank, alpha, dropout))
