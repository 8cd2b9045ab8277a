"""The Wilson score interval of a rate (Wilson 1927, "Probable inference, the law of
succession, and statistical inference", JASA 22:209-212).

A false-pass rate seen on a few dozen probes is not taken at face value: the report gives
its 95% interval. scipy computes it when installed (`binomtest(k, n).proportion_ci(
method="wilson")`); otherwise the closed form below, which is the same interval:

    p = k / n,  z = the normal quantile of (1 + confidence) / 2
    centre = (p + z^2 / 2n) / (1 + z^2 / n)
    half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)
    interval = [centre - half, centre + half], clipped to [0, 1]
"""

from __future__ import annotations

import math
from statistics import NormalDist

CONFIDENCE = 0.95


def wilson_interval(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson interval of `k` successes in `n` trials; (0.0, 1.0) when `n` is 0."""
    if n <= 0:
        return 0.0, 1.0
    if not 0 <= k <= n:
        raise ValueError(f"k must be within [0, n], got k={k}, n={n}")
    try:
        from scipy.stats import binomtest
    except ImportError:
        return wilson_formula(k, n, confidence)
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def wilson_formula(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The closed form of the module docstring (no scipy needed)."""
    z = NormalDist().inv_cdf((1 + confidence) / 2)
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
