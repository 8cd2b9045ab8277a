"""The arithmetic of a GRPO step, against hand computations: group advantages, the clipped
ratio objective with and without KL, the two loss normalizations, and the prompt schedule."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.errors import ConfigError  # noqa: E402
from rewardsmith.rl.grpo import GRPOConfig  # noqa: E402
from rewardsmith.rl.grpo_math import (  # noqa: E402
    STD_EPS,
    batch_indices,
    clipped_objective,
    group_advantages,
)

# -- advantages ------------------------------------------------------------------------------


def test_advantages_of_a_hand_made_group() -> None:
    # group 1: rewards 1, 0, 0, 1 -> mean 0.5, population std 0.5 -> +-1
    # group 2: all equal -> no signal at all
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, 2.0])
    adv = group_advantages(rewards, 4)
    expected = [1 / (1 + 2 * STD_EPS)] * 1  # 0.5 / (0.5 + eps)
    assert adv[:4].tolist() == pytest.approx([expected[0], -expected[0], -expected[0], expected[0]])
    assert adv[4:].tolist() == [0.0, 0.0, 0.0, 0.0]


def test_unscaled_advantages_are_centered_rewards() -> None:
    rewards = torch.tensor([3.0, 1.0, 0.0, 0.0])
    assert group_advantages(rewards, 2, scale=False).tolist() == [1.0, -1.0, 0.0, 0.0]


def test_advantages_of_an_uneven_group() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0])  # mean .25, std sqrt(3)/4
    std = math.sqrt(3) / 4
    assert group_advantages(rewards, 4).tolist() == pytest.approx(
        [0.75 / (std + STD_EPS)] + [-0.25 / (std + STD_EPS)] * 3
    )


def test_rewards_must_split_into_groups() -> None:
    with pytest.raises(ValueError, match="groups of 4"):
        group_advantages(torch.zeros(6), 4)


# -- the clipped objective -------------------------------------------------------------------


def _objective(**kw: object) -> float:
    base = {
        "epsilon": 0.2,
        "epsilon_high": 0.2,
        "loss_type": "dapo",
        "denominator": 1.0,
    }
    base.update(kw)
    return float(clipped_objective(**base).loss)  # type: ignore[arg-type]


def test_clipped_loss_matches_a_hand_computation() -> None:
    # one sequence, three tokens; ratios 1.5, 0.5, 1.1; advantage +2 then -1
    old = torch.zeros(2, 3)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.1], [1.5, 0.5, 1.1]]))
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    adv = torch.tensor([2.0, -1.0])
    # A = +2: min(r A, clip(r) A) = min(3, 2.4), min(1, 1.6), min(2.2, 2.2) -> 2.4, 1.0, 2.2
    # A = -1: min(-1.5, -1.2), min(-0.5, -0.8) -> -1.5, -0.8 (third token masked)
    row1, row2 = -(2.4 + 1.0 + 2.2), -(-1.5 - 0.8)
    dapo = _objective(logp=logp, old_logp=old, advantages=adv, mask=mask, denominator=5.0)
    assert dapo == pytest.approx((row1 + row2) / 5)
    grpo = _objective(
        logp=logp, old_logp=old, advantages=adv, mask=mask, loss_type="grpo", denominator=2.0
    )
    assert grpo == pytest.approx((row1 / 3 + row2 / 2) / 2)


def test_clip_counts_and_asymmetric_clip() -> None:
    old = torch.zeros(1, 2)
    logp = torch.log(torch.tensor([[1.5, 1.25]]))
    parts = clipped_objective(
        logp,
        old,
        torch.tensor([1.0]),
        torch.ones(1, 2),
        epsilon=0.2,
        epsilon_high=0.3,
        loss_type="dapo",
        denominator=2.0,
    )
    # clip-higher (DAPO): 1.25 is inside [0.8, 1.3], 1.5 is clipped to 1.3
    assert float(parts.loss) == pytest.approx(-(1.3 + 1.25) / 2)
    assert parts.clipped_tokens == 1


def test_kl_term_is_the_k3_estimator() -> None:
    logp = torch.tensor([[-1.0, -2.0]])
    ref = torch.tensor([[-1.5, -1.0]])
    # k3 = exp(ref - logp) - (ref - logp) - 1
    k3 = [math.exp(-0.5) + 0.5 - 1, math.exp(1.0) - 1.0 - 1]
    loss = _objective(
        logp=logp,
        old_logp=logp.detach(),
        advantages=torch.tensor([0.0]),
        mask=torch.ones(1, 2),
        denominator=2.0,
        beta=0.1,
        ref_logp=ref,
    )
    assert loss == pytest.approx(0.1 * sum(k3) / 2)


def test_gradient_at_ratio_one_is_the_policy_gradient() -> None:
    # with pi_old = pi (one pass per batch), d loss / d logp_t = -A / denominator
    logp = torch.tensor([[-0.7, -0.2, -1.1]], requires_grad=True)
    parts = clipped_objective(
        logp,
        logp.detach(),
        torch.tensor([0.5]),
        torch.tensor([[1, 1, 0]]),
        epsilon=0.2,
        epsilon_high=0.2,
        loss_type="dapo",
        denominator=2.0,
    )
    parts.loss.backward()
    assert logp.grad is not None
    assert logp.grad[0].tolist() == pytest.approx([-0.25, -0.25, 0.0])


def test_micro_batches_add_up_to_the_batch_loss() -> None:
    torch.manual_seed(0)
    logp, old = torch.randn(4, 5), torch.randn(4, 5)
    adv, mask = torch.randn(4), (torch.rand(4, 5) > 0.3).long()
    for loss_type, denominator in (("dapo", float(mask.sum())), ("grpo", 4.0)):
        kw = {
            "epsilon": 0.2,
            "epsilon_high": 0.2,
            "loss_type": loss_type,
            "denominator": denominator,
        }
        whole = clipped_objective(logp, old, adv, mask, **kw).loss  # type: ignore[arg-type]
        halves = sum(
            clipped_objective(logp[s], old[s], adv[s], mask[s], **kw).loss  # type: ignore[arg-type]
            for s in (slice(0, 2), slice(2, 4))
        )
        assert float(halves) == pytest.approx(float(whole), abs=1e-6)


# -- schedule and config ---------------------------------------------------------------------


def test_prompt_schedule_covers_every_item_once_per_epoch() -> None:
    seen = [i for step in range(1, 6) for i in batch_indices(10, 4, seed=3, step=step)]
    assert sorted(seen[:10]) == list(range(10))  # epoch 1: a permutation
    assert sorted(seen[10:20]) == list(range(10))  # epoch 2: another one
    assert batch_indices(10, 4, 3, 2) == batch_indices(10, 4, 3, 2)  # a function of the step
    assert batch_indices(10, 4, 3, 1) != batch_indices(10, 4, 4, 1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"group_size": 1}, "group_size must be >= 2"),
        ({"loss_type": "ppo"}, "loss_type"),
        ({"steps": 0}, "steps must be >= 1"),
        ({"grad_accum": 100, "prompts_per_step": 2, "group_size": 2}, "grad_accum"),
        ({"beta": -1.0}, "beta"),
    ],
)
def test_bad_configs_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GRPOConfig(**kwargs)  # type: ignore[arg-type]
