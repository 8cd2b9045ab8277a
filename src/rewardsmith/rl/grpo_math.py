"""The math of one GRPO step, as pure functions (tested against hand computations).

- `group_advantages`: A_i = (r_i - mean_g) / (std_g + eps) per group (population std), or
  r_i - mean_g without scaling (Dr. GRPO);
- `clipped_objective`: the clipped-ratio loss with the k3 KL estimator, summed per token
  (DAPO) or per sequence then per group (the GRPO paper), see `rl.grpo`;
- `step_seed`, `batch_indices`: each step's RNG seed and prompts as a function of
  (seed, step) alone, which is what makes a resumed run repeat the uninterrupted one.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

import torch

LossType = Literal["grpo", "dapo"]
LOSS_TYPES: tuple[LossType, ...] = ("grpo", "dapo")
# Keeps a group of identical rewards from dividing by zero; small against any reward scale.
STD_EPS = 1e-4


def group_advantages(
    rewards: torch.Tensor,
    group_size: int,
    scale: bool = True,
    valid: torch.Tensor | None = None,
) -> torch.Tensor:
    """A_i = (r_i - mean_g) / (std_g + eps) per group of `group_size` consecutive rewards
    (population std); `scale=False`: r_i - mean_g. With `valid` (bool per reward), the mean
    and std of each group are over its valid members only, and invalid members get 0."""
    if rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of {group_size}")
    grouped = rewards.view(-1, group_size).float()
    if valid is None:
        centered = grouped - grouped.mean(dim=1, keepdim=True)
        if scale:
            centered = centered / (grouped.std(dim=1, unbiased=False, keepdim=True) + STD_EPS)
        return centered.reshape(-1)
    weight = valid.view(-1, group_size).float()
    count = weight.sum(dim=1, keepdim=True).clamp(min=1)
    mean = (grouped * weight).sum(dim=1, keepdim=True) / count
    centered = (grouped - mean) * weight
    if scale:
        std = ((centered**2).sum(dim=1, keepdim=True) / count).sqrt()
        centered = centered / (std + STD_EPS)
    return centered.reshape(-1)


@dataclass
class LossParts:
    """The loss of a micro-batch and what the logs need."""

    loss: torch.Tensor
    clipped_tokens: float
    kl_sum: float
    tokens: float


def clipped_objective(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    epsilon: float,
    epsilon_high: float,
    loss_type: LossType,
    denominator: float,
    beta: float = 0.0,
    ref_logp: torch.Tensor | None = None,
) -> LossParts:
    """The GRPO loss of a micro-batch: per token
    -min(rho A, clip(rho, 1 - epsilon, 1 + epsilon_high) A) + beta KL_k3, summed as
    `loss_type` says and divided by `denominator` (tokens of the whole batch for "dapo",
    sequences of the whole batch for "grpo"), so micro-batches add up to the batch loss."""
    mask = mask.float()
    ratio = torch.exp(logp - old_logp)
    adv = advantages[:, None]
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + epsilon_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl_sum = 0.0
    if beta > 0:
        if ref_logp is None:
            raise ValueError("beta > 0 needs the reference log-probs")
        delta = ref_logp - logp
        kl = torch.exp(delta) - delta - 1
        per_token = per_token + beta * kl
        kl_sum = float((kl * mask).sum().detach())
    if loss_type == "dapo":
        loss = (per_token * mask).sum() / denominator
    else:
        per_seq = (per_token * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        loss = per_seq.sum() / denominator
    is_clipped = ((unclipped - clipped).abs() > 0) & mask.bool()
    return LossParts(loss, float(is_clipped.sum()), kl_sum, float(mask.sum()))


def step_seed(seed: int, step: int) -> int:
    """The RNG seed of one step: a function of (seed, step) only, so resumes are exact."""
    return (seed * 1_000_003 + step * 7_919 + 17) % (2**63 - 1)


def batch_indices(n_items: int, per_step: int, seed: int, step: int) -> list[int]:
    """Prompt indices of step `step` (1-based): epochs of seeded permutations of the items."""
    out: list[int] = []
    start = (step - 1) * per_step
    for k in range(start, start + per_step):
        epoch, pos = divmod(k, n_items)
        order = list(range(n_items))
        random.Random(seed * 31 + epoch).shuffle(order)
        out.append(order[pos])
    return out
