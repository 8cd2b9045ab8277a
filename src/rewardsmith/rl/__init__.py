"""Policies trained with rewardsmith rewards: GRPO, testbed policies, evaluation.

Modules (torch and transformers are imported only inside those that need them):

- `grpo`: the embedded GRPO trainer (`rewardsmith grpo train`);
- `grpo_math`: advantages, the clipped objective and each step's prompts, as pure functions;
- `prompts`: training prompts (testbed or JSONL) and the testbed's held-out set (pure Python);
- `lora`: the LoRA config both backends use (peft);
- `trl_backend`: the same run through TRL's `GRPOTrainer` (`--backend trl`);
- `policies`: the CPU testbed that rewardsmith builds itself, SmolLM2, local models (loaded
  through `rewardsmith.models`);
- `problems`: procedural arithmetic word problems with worked solutions (pure Python);
- `generation`: batched sampling and per-token log-probabilities;
- `answers`: what counts as an answer, for accuracy and F1 (pure Python);
- `evaluate` and `stats`: held-out accuracy and F1 with bootstrap CIs, exact McNemar.

This package's `__init__` imports nothing heavy.
"""
