"""Statistics of a search: CIs and paired tests of configurations, fidelity agreement.

Built on `rewardsmith.rl.stats` (percentile bootstrap CIs, exact McNemar, Bonferroni):

- `describe`: accuracy and F1 with bootstrap 95% CIs for one configuration's held-out
  outcomes;
- `pairwise`: the exact McNemar test for every pair of configurations judged on the same
  items, each p-value Bonferroni-corrected for the n(n-1)/2 comparisons;
- `versus`: the exact McNemar test of each configuration against one reference (the base
  rewards alone), Bonferroni-corrected over the configurations compared;
- `indistinguishable`: for each configuration, the ones it cannot be told apart from at
  level `alpha` after the correction (the table the report prints);
- `rank_agreement`: Spearman's rho and Kendall's tau (scipy.stats) between two fidelity
  levels' scores of the same candidates;
- `spread`: mean and sample standard deviation over seeds.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from scipy.stats import kendalltau, spearmanr

from rewardsmith.rl.stats import accuracy_ci, f1_ci, mcnemar_exact

ALPHA = 0.05


def describe(correct: Sequence[bool], parseable: Sequence[bool], seed: int = 0) -> dict[str, Any]:
    """`{n, accuracy: {value, low, high}, f1: {...}}` with percentile-bootstrap 95% CIs."""
    return {
        "n": len(correct),
        "accuracy": accuracy_ci(correct, seed=seed).to_dict(),
        "f1": f1_ci(correct, parseable, seed=seed).to_dict(),
    }


def pairwise(outcomes: Mapping[str, Sequence[bool]]) -> list[dict[str, Any]]:
    """Exact McNemar for every pair (Bonferroni over all pairs): `{a, b, b_count, c_count,
    p_value, p_bonferroni}` where `b` counts items only `a` gets right."""
    names = list(outcomes)
    pairs = list(itertools.combinations(names, 2))
    m = max(1, len(pairs))
    out = []
    for a, b in pairs:
        test = mcnemar_exact(outcomes[a], outcomes[b], comparisons=m)
        out.append(
            {
                "a": a,
                "b": b,
                "only_a": test.b,
                "only_b": test.c,
                "p_value": test.p_value,
                "p_bonferroni": test.p_adjusted,
                "comparisons": m,
                "significant": test.p_adjusted < ALPHA,
            }
        )
    return out


def versus(
    reference: Sequence[bool], outcomes: Mapping[str, Sequence[bool]]
) -> dict[str, dict[str, Any]]:
    """Exact McNemar of each configuration against `reference` on the same items (Bonferroni
    over `len(outcomes)`): `{name: {only_it, only_reference, p_value, p_bonferroni,
    significant}}`."""
    m = max(1, len(outcomes))
    out = {}
    for name, correct in outcomes.items():
        test = mcnemar_exact(correct, reference, comparisons=m)
        out[name] = {
            "only_it": test.b,
            "only_reference": test.c,
            "p_value": test.p_value,
            "p_bonferroni": test.p_adjusted,
            "significant": test.p_adjusted < ALPHA,
        }
    return out


def indistinguishable(
    names: Sequence[str], tests: Sequence[Mapping[str, Any]]
) -> dict[str, list[str]]:
    """For each configuration, those whose difference from it is not significant."""
    same: dict[str, list[str]] = {n: [] for n in names}
    for t in tests:
        if not t["significant"]:
            same[t["a"]].append(t["b"])
            same[t["b"]].append(t["a"])
    return same


def rank_agreement(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Spearman's rho and Kendall's tau (with p-values) of paired scores; None values when
    fewer than three pairs or a constant side."""
    n = len(x)
    if n < 3 or len(set(x)) < 2 or len(set(y)) < 2:
        return {"n": n, "spearman": None, "spearman_p": None, "kendall": None, "kendall_p": None}
    rho = spearmanr(x, y)
    tau = kendalltau(x, y)
    return {
        "n": n,
        "spearman": _finite(rho.statistic),
        "spearman_p": _finite(rho.pvalue),
        "kendall": _finite(tau.statistic),
        "kendall_p": _finite(tau.pvalue),
    }


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Mean and sample standard deviation (0 for one value)."""
    return {
        "n": len(values),
        "mean": statistics.fmean(values) if values else None,
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "values": list(values),
    }


def _finite(value: Any) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None
