"""The RBS objective: in-batch Bradley-Terry with score centering.

For B (prefix, suffix) pairs with scores s(p_i, r_j) (the true suffix r_i is "chosen", every
other r_j "rejected"), over the set of (i, j) pairs used, all i != j (B(B-1) pairs) or k
sampled negatives per prefix:

    L = -mean log sigmoid(s(p_i, r_i) - s(p_i, r_j)) + c * mean(s(p_i, r_i)^2 + s(p_i, r_j)^2)

The first term is the Bradley-Terry loss of a reward model (Ouyang et al. 2022, eq. 1) with
in-batch negatives; the second keeps scores centred at 0, since Bradley-Terry only sees
differences and would otherwise let them drift (RBS; the same regularizer as "reward
centering" in Eisenstein et al. 2023).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class LossParts:
    """The loss and what is logged beside it (floats are detached)."""

    loss: torch.Tensor
    bradley_terry: float
    centering: float
    accuracy: float  # share of (i, j) pairs with s(p_i, r_i) > s(p_i, r_j)
    margin: float  # mean s(p_i, r_i) - s(p_i, r_j)


def rbs_loss(pos: torch.Tensor, neg: torch.Tensor, centering: float) -> LossParts:
    """The RBS loss for chosen scores `pos` (B,) and rejected scores `neg` (B, K).

    Row i of `neg` holds s(p_i, r_j) for the K negatives of prefix i; every (i, j) pair
    counts once, and the centering term averages over the same pairs.
    """
    if pos.dim() != 1 or neg.dim() != 2 or neg.shape[0] != pos.shape[0] or neg.shape[1] == 0:
        raise ValueError(
            f"expected pos (B,) and neg (B, K>0), got {tuple(pos.shape)}, {tuple(neg.shape)}"
        )
    diff = pos[:, None] - neg
    bt = -F.logsigmoid(diff).mean()
    center = (pos[:, None].pow(2) + neg.pow(2)).mean()
    loss = bt + centering * center
    return LossParts(
        loss=loss,
        bradley_terry=float(bt.detach()),
        centering=float(center.detach()),
        accuracy=float((diff.detach() > 0).float().mean()),
        margin=float(diff.detach().mean()),
    )


def split_matrix(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A (B, B) matrix s(p_i, r_j) -> chosen scores (B,) and all B-1 negatives per row (B, B-1)."""
    b = scores.shape[0]
    if scores.shape != (b, b) or b < 2:
        raise ValueError(f"expected a square score matrix with B >= 2, got {tuple(scores.shape)}")
    off = ~torch.eye(b, dtype=torch.bool, device=scores.device)
    return scores.diagonal(), scores[off].view(b, b - 1)


def sample_negatives(batch_size: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """For each i, k distinct indices j != i drawn uniformly: a (B, k) long tensor."""
    if not 1 <= k <= batch_size - 1:
        raise ValueError(f"negatives per prefix must be in [1, {batch_size - 1}], got {k}")
    # Ranks of random keys give a uniform permutation; shifting past i skips the diagonal.
    keys = torch.rand(batch_size, batch_size - 1, generator=generator)
    picks = keys.argsort(dim=1)[:, :k]
    rows = torch.arange(batch_size)[:, None]
    return picks + (picks >= rows).long()
