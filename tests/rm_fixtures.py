"""Helpers for the reward-model tests (tests/rm and tests/tools/test_model.py)."""

from __future__ import annotations

from pathlib import Path


def make_tiny_backbone(path: Path, seed: int = 0) -> Path:
    """Save a 2-layer, 32-wide BERT with MiniLM's tokenizer to `path`."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from rewardsmith.models.loading import minilm_dir

    tokenizer = AutoTokenizer.from_pretrained(minilm_dir())
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
