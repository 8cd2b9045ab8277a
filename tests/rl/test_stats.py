"""Bootstrap CIs and the exact McNemar test against hand computations."""

from __future__ import annotations

import math

import pytest

from rewardsmith.rl.stats import (
    accuracy_ci,
    bootstrap_ci,
    f1_ci,
    f1_from_counts,
    mcnemar_exact,
)


def test_mcnemar_matches_the_binomial_tail_by_hand() -> None:
    # A right / B wrong on 2 items, A wrong / B right on 10; 20 items both right, 8 both wrong
    a = [True] * 2 + [False] * 10 + [True] * 20 + [False] * 8
    b = [False] * 2 + [True] * 10 + [True] * 20 + [False] * 8
    test = mcnemar_exact(a, b)
    assert (test.b, test.c) == (2, 10)
    # two-sided exact p = 2 * P(X <= 2), X ~ Binomial(12, 1/2)
    tail = sum(math.comb(12, k) for k in range(3)) / 2**12
    assert test.p_value == pytest.approx(2 * tail)
    assert test.p_value == pytest.approx(0.03857421875)


def test_bonferroni_multiplies_and_caps() -> None:
    a = [True] * 2 + [False] * 10
    b = [False] * 2 + [True] * 10
    three = mcnemar_exact(a, b, comparisons=3)
    assert three.p_adjusted == pytest.approx(3 * three.p_value)
    assert mcnemar_exact(a, b, comparisons=100).p_adjusted == 1.0


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact([True, False], [True, False]).p_value == 1.0
    with pytest.raises(ValueError, match="differ in length"):
        mcnemar_exact([True], [True, False])


def test_f1_by_hand() -> None:
    # 6 correct, 8 parseable, 10 items: P = .75, R = .6, F1 = 2 * .45 / 1.35
    assert f1_from_counts(6, 8, 10) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    correct = [True] * 6 + [False] * 4
    parseable = [True] * 8 + [False] * 2
    ci = f1_ci(correct, parseable)
    assert ci.value == pytest.approx(f1_from_counts(6, 8, 10))
    assert ci.low <= ci.value <= ci.high
    assert f1_from_counts(0, 0, 10) == 0.0


def test_accuracy_ci_brackets_the_estimate_and_is_reproducible() -> None:
    correct = [i % 10 < 3 for i in range(500)]  # 30%
    ci = accuracy_ci(correct)
    assert ci.value == pytest.approx(0.3)
    # normal approximation: half-width 1.96 * sqrt(.3 * .7 / 500) ~ 0.040
    assert ci.high - ci.low == pytest.approx(2 * 1.96 * math.sqrt(0.21 / 500), rel=0.1)
    assert accuracy_ci(correct) == ci  # seeded
    assert accuracy_ci(correct, seed=1) != ci


def test_bootstrap_needs_items() -> None:
    with pytest.raises(ValueError, match="n >= 1"):
        bootstrap_ci([[]], lambda d: d[0].mean(axis=-1))
