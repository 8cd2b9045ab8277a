"""`GRPOConfig`: everything that decides a GRPO run, shared by the embedded trainer
(`rl.grpo`) and the TRL backend (`rl.trl_backend`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.rl.answers import ANSWER_FORMATS, AnswerFormat
from rewardsmith.rl.grpo_math import LOSS_TYPES, LossType


@dataclass(frozen=True)
class GRPOConfig:
    """Everything that decides a GRPO run (written to `OUT/grpo_config.json`)."""

    steps: int = 200
    prompts_per_step: int = 8
    group_size: int = 8
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    lr: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 0
    epsilon: float = 0.2
    epsilon_high: float | None = None
    beta: float = 0.0
    scale_rewards: bool = True
    loss_type: LossType = "dapo"
    num_iterations: int = 1
    grad_accum: int = 1
    max_grad_norm: float = 1.0
    lora_rank: int = 32
    lora_alpha: int = 64
    lora_dropout: float = 0.0
    reward_weights: tuple[float, ...] | None = None
    answer_format: AnswerFormat | None = None
    seed: int = 0
    save_every: int = 0
    keep_checkpoints: int = 2
    time_limit_s: float | None = None
    #: Every N steps, write that step's completions with their rewards to completions.jsonl
    #: (0: never): what a reward-hacking audit reads.
    log_completions_every: int = 0
    #: Completions no reward scores (a task waiting for its synthesized tool) are left out of
    #: the update (advantages over the scored members of each group) instead of counting 0.
    skip_unscored: bool = False

    def __post_init__(self) -> None:
        for name in ("steps", "prompts_per_step", "group_size", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.group_size < 2:
            raise ConfigError("group_size must be >= 2: advantages compare completions in a group")
        if self.loss_type not in LOSS_TYPES:
            raise ConfigError(f"loss_type must be one of {LOSS_TYPES}, got {self.loss_type!r}")
        if self.answer_format is not None and self.answer_format not in ANSWER_FORMATS:
            raise ConfigError(f"answer_format must be one of {ANSWER_FORMATS}")
        if self.num_iterations < 1 or self.grad_accum < 1:
            raise ConfigError("num_iterations and grad_accum must be >= 1")
        if self.grad_accum > self.prompts_per_step * self.group_size:
            raise ConfigError("grad_accum cannot exceed the completions per step")
        if self.lora_rank < 0 or self.beta < 0 or self.epsilon <= 0 or self.temperature <= 0:
            raise ConfigError("lora_rank and beta must be >= 0; epsilon, temperature > 0")
        if self.log_completions_every < 0:
            raise ConfigError("log_completions_every must be >= 0")

    @property
    def clip_high(self) -> float:
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
