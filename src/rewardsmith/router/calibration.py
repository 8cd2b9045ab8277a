"""Calibrated confidence: the probability that a routing decision is right.

The conditional logit's top probability ranks decisions well but is not a frequency (it is
fitted for likelihood, on data where most samples are easy). `Calibration` maps it through
isotonic regression (pool-adjacent-violators, Ayer et al. 1955; the standard recalibration
of Zadrozny & Elkan 2002) fitted on *out-of-fold* predictions: `route fit` fits the logit
on k-1 folds, predicts the held-out fold, and calibrates on those predictions, so the map
never sees a prediction made on the sample's own training data. Tool decisions and
"synthesize" decisions get one map each (their errors differ). Each pooled block's rate is
Laplace-smoothed ((right + 1) / (n + 2)), so no block of finite evidence claims 1.0.

`reliability(...)` is the table the bench prints: per confidence bin, how many decisions
and how many were right.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Points = tuple[tuple[float, float], ...]
# Breakpoints kept per map (the map is piecewise linear between them).
MAX_POINTS = 24
# Confidence bins of the reliability table (lower edges; the last bin ends at 1.0).
RELIABILITY_EDGES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def isotonic(x: Sequence[float], y: Sequence[float]) -> Points:
    """Isotonic (non-decreasing) fit of 0/1 outcomes `y` on scores `x`, as breakpoints.

    Pool-adjacent-violators over the samples sorted by score; every pooled block gives two
    breakpoints (its lowest and highest score) at its Laplace-smoothed rate."""
    if len(x) != len(y):
        raise ValueError(f"{len(x)} scores but {len(y)} outcomes")
    if not x:
        return ()
    order = sorted(range(len(x)), key=lambda i: (x[i], y[i]))
    # blocks: [sum of outcomes, count, lowest score, highest score]
    blocks: list[list[float]] = []
    for i in order:
        blocks.append([float(y[i]), 1.0, float(x[i]), float(x[i])])
        while len(blocks) > 1 and (
            blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]
            or blocks[-2][3] == blocks[-1][2]  # equal scores must share one value
        ):
            s, n, _, hi = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
            blocks[-1][3] = hi
    points: list[tuple[float, float]] = []
    level = 0.0
    for s, n, lo, hi in blocks:
        level = max(level, (s + 1.0) / (n + 2.0))  # smoothing can break monotony: restore it
        points.append((lo, level))
        if hi > lo:
            points.append((hi, level))
    return _thin(points)


def _thin(points: list[tuple[float, float]]) -> Points:
    """At most `MAX_POINTS` breakpoints, keeping both ends."""
    if len(points) <= MAX_POINTS:
        return tuple((round(a, 6), round(b, 6)) for a, b in points)
    step = (len(points) - 1) / (MAX_POINTS - 1)
    kept = [points[round(k * step)] for k in range(MAX_POINTS)]
    return tuple((round(a, 6), round(b, 6)) for a, b in kept)


def apply(points: Points, p: float) -> float:
    """The map at `p`: piecewise linear between breakpoints, flat beyond the ends; the
    identity when there are no breakpoints."""
    if not points:
        return p
    xs = [a for a, _ in points]
    if p <= xs[0]:
        return points[0][1]
    if p >= xs[-1]:
        return points[-1][1]
    k = bisect.bisect_right(xs, p)
    (x0, y0), (x1, y1) = points[k - 1], points[k]
    return y0 if x1 == x0 else y0 + (y1 - y0) * (p - x0) / (x1 - x0)


@dataclass(frozen=True)
class Calibration:
    """Maps from the logit's top probability to P(right), for tool and synthesize
    decisions (empty maps: the identity)."""

    tool: Points = ()
    synthesize: Points = ()

    def __call__(self, p: float, action: str) -> float:
        return apply(self.tool if action == "tool" else self.synthesize, p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": [list(t) for t in self.tool],
            "synthesize": [list(t) for t in self.synthesize],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Calibration:
        if not data:
            return cls()

        def points(key: str) -> Points:
            return tuple((float(a), float(b)) for a, b in data.get(key, ()))

        return cls(points("tool"), points("synthesize"))

    @classmethod
    def fit(
        cls, raw: Sequence[float], actions: Sequence[str], right: Sequence[bool]
    ) -> Calibration:
        """Fit both maps on out-of-fold top probabilities, decision kinds and outcomes."""

        def part(kind: str) -> Points:
            pairs = [
                (p, float(r)) for p, a, r in zip(raw, actions, right, strict=True) if a == kind
            ]
            return isotonic([p for p, _ in pairs], [r for _, r in pairs])

        return cls(part("tool"), part("synthesize"))


@dataclass
class ReliabilityRow:
    """One confidence bin: its range, decisions in it, how many were right, mean confidence."""

    low: float
    high: float
    n: int = 0
    right: int = 0
    confidence_sum: float = 0.0

    @property
    def accuracy(self) -> float:
        return self.right / self.n if self.n else 0.0

    @property
    def mean_confidence(self) -> float:
        return self.confidence_sum / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "bin": f"[{self.low:.2f}, {self.high:.2f}{']' if self.high >= 1.0 else ')'}",
            "n": self.n,
            "right": self.right,
            "accuracy": round(self.accuracy, 4),
            "mean_confidence": round(self.mean_confidence, 4),
        }


def reliability(
    confidences: Sequence[float], right: Sequence[bool], edges: Sequence[float] = RELIABILITY_EDGES
) -> list[ReliabilityRow]:
    """Per confidence bin: decisions, right ones and mean confidence (a reliability table)."""
    rows = [
        ReliabilityRow(lo, edges[k + 1] if k + 1 < len(edges) else 1.0)
        for k, lo in enumerate(edges)
    ]
    for c, r in zip(confidences, right, strict=True):
        k = max(0, bisect.bisect_right(list(edges), c) - 1)
        rows[k].n += 1
        rows[k].right += int(r)
        rows[k].confidence_sum += c
    return rows


def expected_calibration_error(confidences: Sequence[float], right: Sequence[bool]) -> float:
    """Mean |accuracy - confidence| over the reliability bins, weighted by their size."""
    rows = reliability(confidences, right)
    total = sum(r.n for r in rows)
    if not total:
        return 0.0
    return sum(r.n * abs(r.accuracy - r.mean_confidence) for r in rows) / total
