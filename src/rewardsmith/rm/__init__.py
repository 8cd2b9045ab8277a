"""Reward models without human labels (RBS): train from plain text, evaluate, register.

Modules (heavy dependencies, torch and transformers, are imported only inside them):

- `data`: documents from text / JSONL / parquet / `datasets`, split into (prefix, suffix);
- `loss`: the in-batch Bradley-Terry objective with score centering;
- `model`: cross-encoder (default) and bi-encoder scorers on any Hugging Face backbone;
- `train`: the training loop (`rewardsmith rm train`);
- `evaluate`: pairwise accuracy, best-of-4 (RewardBench rows) and best-of-N (`rm eval`);
- `backbones`: backbone names (MiniLM-L6, SmolLM2 dequantized once, local folders); loading
  itself is `rewardsmith.models.loading`;
- `registry`: the local model registry (a JSON file) that WrapLLM searches.

This package's `__init__` imports nothing heavy, so `rewardsmith.rm.registry` is cheap.
"""
