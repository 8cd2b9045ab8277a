"""Calibration: isotonic maps from the logit's top probability to the probability of being
right, their conservative bounds, per-format maps, deferrals, and the reliability table."""

from __future__ import annotations

import random

import pytest

from rewardsmith.router.calibration import (
    Calibration,
    apply,
    isotonic,
    reliability,
    wilson_lower,
)


def _outcomes(n: int, seed: int = 0) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    x = [rng.random() for _ in range(n)]
    return x, [float(rng.random() < p) for p in x]


def test_isotonic_without_a_bound_is_the_least_squares_monotone_fit() -> None:
    scipy_opt = pytest.importorskip("scipy.optimize")
    x, y = _outcomes(500)
    points = isotonic(x, y, z=0.0)
    order = sorted(range(len(x)), key=lambda i: x[i])
    expected = scipy_opt.isotonic_regression([y[i] for i in order]).x
    # every breakpoint kept is scipy's fitted value at that sample
    fitted = {round(x[i], 6): v for i, v in zip(order, expected, strict=True)}
    assert all(fitted[px] == pytest.approx(py, abs=1e-6) for px, py in points)


def test_the_map_is_monotone_and_its_bound_never_claims_certainty() -> None:
    x, y = _outcomes(2000, seed=1)
    points = isotonic(x, y)
    values = [apply(points, p / 100) for p in range(101)]
    assert values == sorted(values)
    assert max(values) < 1.0
    # all-right blocks are bounded below 1 too, the fewer samples the lower
    assert wilson_lower(10, 10) < wilson_lower(1000, 1000) < 1.0


def test_apply_interpolates_and_is_flat_beyond_the_ends() -> None:
    points = ((0.5, 0.2), (0.9, 0.6))
    assert apply(points, 0.7) == pytest.approx(0.4)
    assert apply(points, 0.1) == 0.2 and apply(points, 0.99) == 0.6
    assert apply((), 0.42) == 0.42  # no map: the identity


def test_a_format_gets_its_own_map_only_with_enough_samples() -> None:
    x, y = _outcomes(400, seed=2)
    actions = ["tool"] * 400
    formats = ["number"] * 300 + ["latex"] * 100 + []
    cal = Calibration.fit(x, actions, [bool(v) for v in y], formats[:300] + ["choice"] * 100)
    assert "tool:number" in cal.by_format and "tool:choice" in cal.by_format
    few = Calibration.fit(x[:150], actions[:150], [bool(v) for v in y[:150]], ["latex"] * 150)
    assert "tool:latex" in few.by_format
    scarce = Calibration.fit(x[:50], actions[:50], [bool(v) for v in y[:50]], ["latex"] * 50)
    assert scarce.by_format == {}
    # an unknown format falls back to the overall map
    assert cal(0.8, "tool", "json_entry") == apply(cal.tool, 0.8)


def test_a_round_trip_through_the_library_event_keeps_the_maps() -> None:
    x, y = _outcomes(300, seed=3)
    actions = ["tool" if i % 3 else "synthesize" for i in range(300)]
    cal = Calibration.fit(x, actions, [bool(v) for v in y], ["number"] * 300)
    cal = Calibration(cal.tool, cal.synthesize, cal.by_format, deferred=((0.2, 0.1), (0.9, 0.4)))
    again = Calibration.from_dict(cal.to_dict())
    assert again == cal
    assert again.deferral(0.5) == pytest.approx(apply(cal.deferred, 0.5))
    assert Calibration().deferral(0.3) == pytest.approx(0.7)


def test_reliability_counts_decisions_per_bin() -> None:
    rows = reliability([0.95, 0.97, 0.55, 0.995], [True, False, True, True])
    by_bin = {r.to_dict()["bin"]: r for r in rows if r.n}
    assert by_bin["[0.95, 0.99)"].n == 2 and by_bin["[0.95, 0.99)"].right == 1
    assert by_bin["[0.99, 1.00]"].accuracy == 1.0
    assert by_bin["[0.50, 0.60)"].mean_confidence == pytest.approx(0.55)
