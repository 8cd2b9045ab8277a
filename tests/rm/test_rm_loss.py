"""The RBS objective against hand computations (value and gradient)."""

from __future__ import annotations

import math

import pytest
import torch

from rewardsmith.rm.loss import rbs_loss, sample_negatives, split_matrix


def softplus(x: float) -> float:
    return math.log1p(math.exp(x))


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_all_pairs_loss_and_gradient_by_hand() -> None:
    # B = 2, all pairs: S[i][j] = s(p_i, r_j); chosen on the diagonal.
    scores = torch.tensor([[1.0, 0.5], [-0.2, 0.3]], requires_grad=True)
    c = 0.1
    pos, neg = split_matrix(scores)
    parts = rbs_loss(pos, neg, c)
    # Pairs (0, 1): 1.0 - 0.5 = 0.5; (1, 0): 0.3 - (-0.2) = 0.5. -log sigmoid(x) = softplus(-x).
    bt = (softplus(-0.5) + softplus(-0.5)) / 2
    center = ((1.0**2 + 0.5**2) + (0.3**2 + 0.2**2)) / 2
    assert parts.loss.item() == pytest.approx(bt + c * center, rel=1e-6)
    assert parts.bradley_terry == pytest.approx(bt, rel=1e-6)
    assert parts.centering == pytest.approx(center, rel=1e-6)
    assert parts.accuracy == 1.0
    parts.loss.backward()
    # d/ds_ii = -(1 - sigmoid(d_i)) / N + 2 c s_ii / N; d/ds_ij = (1 - sigmoid(d_i)) / N + 2 c s_ij / N
    n = 2
    g = 1 - sigmoid(0.5)
    expected = torch.tensor(
        [
            [-g / n + 2 * c * 1.0 / n, g / n + 2 * c * 0.5 / n],
            [g / n + 2 * c * -0.2 / n, -g / n + 2 * c * 0.3 / n],
        ]
    )
    assert scores.grad is not None
    torch.testing.assert_close(scores.grad, expected, rtol=1e-5, atol=1e-7)


def test_sampled_negatives_count_every_pair_once() -> None:
    # B = 3, k = 2 negatives per prefix given as explicit rejected scores.
    pos = torch.tensor([0.0, 1.0, -1.0], requires_grad=True)
    neg = torch.tensor([[1.0, -1.0], [0.0, 2.0], [-3.0, -1.0]], requires_grad=True)
    parts = rbs_loss(pos, neg, centering=0.0)
    diffs = [-1.0, 1.0, 1.0, -1.0, 2.0, 0.0]
    assert parts.loss.item() == pytest.approx(sum(softplus(-d) for d in diffs) / 6, rel=1e-6)
    # A tie (diff 0) is not a win.
    assert parts.accuracy == pytest.approx(3 / 6)
    parts.loss.backward()
    assert pos.grad is not None and neg.grad is not None
    expected_pos = [
        -(1 - sigmoid(-1.0)) / 6 - (1 - sigmoid(1.0)) / 6,
        -(1 - sigmoid(1.0)) / 6 - (1 - sigmoid(-1.0)) / 6,
        -(1 - sigmoid(2.0)) / 6 - (1 - sigmoid(0.0)) / 6,
    ]
    torch.testing.assert_close(pos.grad, torch.tensor(expected_pos), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(neg.grad.sum(1), -pos.grad, rtol=1e-5, atol=1e-7)


def test_centering_pulls_scores_toward_zero() -> None:
    # Equal margins, shifted by +10: Bradley-Terry is unchanged, only the centering term grows.
    pos = torch.tensor([1.0, 1.0])
    neg = torch.tensor([[0.0], [0.0]])
    low = rbs_loss(pos, neg, 0.01)
    high = rbs_loss(pos + 10, neg + 10, 0.01)
    assert low.bradley_terry == pytest.approx(high.bradley_terry)
    assert high.loss.item() > low.loss.item()


def test_sample_negatives_are_distinct_others_and_seeded() -> None:
    gen = torch.Generator().manual_seed(3)
    idx = sample_negatives(8, 5, gen)
    assert idx.shape == (8, 5)
    for i, row in enumerate(idx.tolist()):
        assert i not in row and len(set(row)) == 5 and all(0 <= j < 8 for j in row)
    again = sample_negatives(8, 5, torch.Generator().manual_seed(3))
    assert torch.equal(idx, again)
    with pytest.raises(ValueError):
        sample_negatives(4, 4, gen)


def test_split_matrix_rows_are_the_other_suffixes() -> None:
    s = torch.arange(9.0).view(3, 3)
    pos, neg = split_matrix(s)
    assert pos.tolist() == [0.0, 4.0, 8.0]
    assert neg.tolist() == [[1.0, 2.0], [3.0, 5.0], [6.0, 7.0]]
