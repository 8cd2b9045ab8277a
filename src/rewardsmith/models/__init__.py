"""Model plumbing shared by `rm`, `rl`, the `model` tool and the router: loading Hugging Face
models from local files (`models.loading`) and a training run's checkpoints and metrics log
(`models.checkpoints`).

This package sits below every package that touches a model and imports none of them; it
imports torch and transformers only inside the functions that need them.
"""

from rewardsmith.models.checkpoints import latest_checkpoint, writing_checkpoint
from rewardsmith.models.loading import (
    forget_gguf,
    load_model,
    load_tokenizer,
    local_source,
    minilm_dir,
    pick_device,
    smollm2_dir,
    torch_threads,
)

__all__ = [
    "forget_gguf",
    "latest_checkpoint",
    "load_model",
    "load_tokenizer",
    "local_source",
    "minilm_dir",
    "pick_device",
    "smollm2_dir",
    "torch_threads",
    "writing_checkpoint",
]
