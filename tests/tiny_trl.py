"""What the TRL tests build alike: a one-layer Llama with random weights (nothing is
downloaded) and a `GRPOConfig` for two CPU steps on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_llama(vocab_size: int, max_positions: int, **token_ids: Any) -> Any:
    """A 1-layer, 16-wide `LlamaForCausalLM`; `token_ids`: pad/bos/eos_token_id."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        **token_ids,
    )
    return LlamaForCausalLM(config)


def two_step_grpo_config(out_dir: Path) -> Any:
    """Two GRPO steps of 4 completions of 8 tokens on the CPU, no saving, no reporting."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(out_dir),
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        use_cpu=True,
        bf16=False,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        seed=0,
    )
