"""Calibrated confidence: the probability that a routing decision is right.

The conditional logit's top probability ranks decisions well but is not a frequency (it is
fitted for likelihood, on data where most samples are easy). `Calibration` maps it through
isotonic regression (pool-adjacent-violators, Ayer et al. 1955; the standard recalibration
of Zadrozny & Elkan 2002) fitted on *out-of-fold* predictions: `route fit` fits the logit
on k-1 folds, predicts the held-out fold, and calibrates on those predictions, so the map
never sees a prediction made on the sample's own training data. Tool decisions and
"synthesize" decisions get one map each (their errors differ), and each reference format
with enough fitting samples gets its own pair (a number reference leaves two tools that read
it, a reasoning-gym entry one: the same logit probability means different odds). Each
pooled block's rate is replaced by its Wilson lower bound (one standard error): a block of
few samples does not claim its observed rate, and none claims 1.0. The maps therefore err
toward less confidence, which is the side a confident mistake is on.

`reliability(...)` is the table the bench prints: per confidence bin, how many decisions
and how many were right.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rewardsmith.router.logit import fit_weights, probabilities

Points = tuple[tuple[float, float], ...]
# Breakpoints kept per map (the map is piecewise linear between them).
MAX_POINTS = 24
# z of the Wilson lower bound each isotonic block's rate is replaced with (one standard
# error): where few fitting samples back a confidence, the map gives less of it.
WILSON_Z = 1.0
# Samples' worth of weight the overall map gets in each block of a per-format map.
PRIOR_STRENGTH = 20.0
# Fitting samples a reference format needs for maps of its own.
MIN_FORMAT_SAMPLES = 100
# Confidence bins of the reliability table (lower edges; the last bin ends at 1.0).
RELIABILITY_EDGES = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def isotonic(
    x: Sequence[float],
    y: Sequence[float],
    z: float = WILSON_Z,
    prior: Callable[[float], float] | None = None,
    strength: float = PRIOR_STRENGTH,
) -> Points:
    """Isotonic (non-decreasing) fit of 0/1 outcomes `y` on scores `x`, as breakpoints.

    Pool-adjacent-violators over the samples sorted by score; every pooled block gives two
    breakpoints (its lowest and highest score) at its rate's Wilson lower bound (`z`; 0:
    the rate itself). With a `prior` (a map of the same scores fitted on more data), each
    block's rate is first shrunk toward it as if `strength` more samples had the prior's
    rate: a per-format map follows its own data where it has some, the overall map where it
    has few."""
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
        if prior is not None:
            s, n = s + strength * prior((lo + hi) / 2), n + strength
        level = max(level, wilson_lower(s, n, z))  # the bound can break monotony: restore it
        points.append((lo, level))
        if hi > lo:
            points.append((hi, level))
    return _thin(points)


def wilson_lower(right: float, n: float, z: float = WILSON_Z) -> float:
    """The Wilson score interval's lower end for `right` successes in `n` trials (Wilson
    1927): a rate seen on few samples is not taken at face value."""
    if n <= 0:
        return 0.0
    p = right / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - spread) / (1 + z * z / n))


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
    decisions, overall and per reference format (`by_format["tool:number"]`); empty maps
    are the identity."""

    tool: Points = ()
    synthesize: Points = ()
    by_format: Mapping[str, Points] = field(default_factory=dict)
    # P("synthesize" is right | the best tool was deferred), by the tool's doubt (1 - its
    # calibrated confidence): a deferral is mostly an unsure in-library sample, not a sure
    # out-of-library one.
    deferred: Points = ()

    def __call__(self, p: float, action: str, fmt: str | None = None) -> float:
        kind = "tool" if action == "tool" else "synthesize"
        points = self.by_format.get(f"{kind}:{fmt}") if fmt else None
        if points is None:
            points = self.tool if kind == "tool" else self.synthesize
        return apply(points, p)

    def deferral(self, tool_confidence: float) -> float:
        """The confidence of a "synthesize" decision made because the best tool's calibrated
        confidence was under the threshold (without a fitted map: 1 - that confidence)."""
        if not self.deferred:
            return 1.0 - tool_confidence
        return apply(self.deferred, 1.0 - tool_confidence)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": [list(t) for t in self.tool],
            "synthesize": [list(t) for t in self.synthesize],
            "by_format": {k: [list(t) for t in v] for k, v in sorted(self.by_format.items())},
            "deferred": [list(t) for t in self.deferred],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Calibration:
        if not data:
            return cls()

        def points(raw: Any) -> Points:
            return tuple((float(a), float(b)) for a, b in raw or ())

        by_format = {str(k): points(v) for k, v in dict(data.get("by_format") or {}).items()}
        return cls(
            points(data.get("tool")),
            points(data.get("synthesize")),
            by_format,
            points(data.get("deferred")),
        )

    @classmethod
    def fit(
        cls,
        raw: Sequence[float],
        actions: Sequence[str],
        right: Sequence[bool],
        formats: Sequence[str] | None = None,
    ) -> Calibration:
        """Fit the maps on out-of-fold top probabilities, decision kinds, outcomes and
        (optionally) the samples' reference formats."""
        fmts = list(formats) if formats is not None else [""] * len(raw)
        rows = list(zip(raw, actions, right, fmts, strict=True))

        def part(kind: str, fmt: str | None = None, prior: Points = ()) -> Points:
            pairs = [(p, float(r)) for p, a, r, f in rows if a == kind and fmt in (None, f)]
            shrink = (lambda p: apply(prior, p)) if prior else None
            return isotonic([p for p, _ in pairs], [r for _, r in pairs], prior=shrink)

        overall = {"tool": part("tool"), "synthesize": part("synthesize")}
        by_format: dict[str, Points] = {}
        for kind in ("tool", "synthesize"):
            counts: dict[str, int] = {}
            for _, a, _, f in rows:
                if a == kind and f:
                    counts[f] = counts.get(f, 0) + 1
            for f, n in sorted(counts.items()):
                if n >= MIN_FORMAT_SAMPLES:
                    by_format[f"{kind}:{f}"] = part(kind, f, overall[kind])
        return cls(overall["tool"], overall["synthesize"], by_format)


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


def out_of_fold_calibration(
    rows: list[list[list[float]]],
    targets: list[int],
    folds: list[int],
    formats: Sequence[str],
    init: Mapping[str, float],
    l2: float,
    threshold: float,
    folds_n: int = 5,
) -> Calibration:
    """Fit the logit (`logit.fit_weights`) on all folds but one, predict that one, and
    calibrate on the predictions (see the module docstring). `rows[i]` are sample i's
    alternatives' feature rows with "synthesize" last, `targets[i]` the right one's index,
    `folds[i]` its fold in `range(folds_n)`, `formats[i]` its reference format.

    Then the *deferred* map: among the predictions whose tool falls under `threshold` once
    calibrated (the router sends them to "synthesize"), how often "synthesize" was right."""
    raw: list[float] = []
    synth_right: list[bool] = []
    actions: list[str] = []
    right: list[bool] = []
    fmts: list[str] = []
    for fold in range(folds_n):
        train = [i for i, f in enumerate(folds) if f != fold]
        held = [i for i, f in enumerate(folds) if f == fold]
        if not train or not held:
            continue
        weights = fit_weights(
            [rows[i] for i in train], [targets[i] for i in train], init=init, l2=l2
        )
        for i in held:
            probs = probabilities(weights, rows[i])
            synth = len(rows[i]) - 1  # the synthesize row is last
            tools = range(synth)
            best = max(tools, key=lambda k: probs[k]) if synth else synth
            top = synth if not synth or probs[synth] >= probs[best] else best
            raw.append(probs[top])
            actions.append("synthesize" if top == synth else "tool")
            right.append(top == targets[i])
            fmts.append(formats[i])
            synth_right.append(targets[i] == synth)
    calibration = Calibration.fit(raw, actions, right, fmts)
    doubt = [
        (1.0 - c, r)
        for p, a, f, r in zip(raw, actions, fmts, synth_right, strict=True)
        if a == "tool" and (c := calibration(p, a, f)) < threshold
    ]
    deferred = isotonic([d for d, _ in doubt], [float(r) for _, r in doubt])
    return replace(calibration, deferred=deferred)
