"""The collapse monitor: a run whose within-group agreement rises while accuracy falls is
marked (a metric and one warning line); noise, and agreement that rises with accuracy, are not."""

from __future__ import annotations

import logging

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.rl.collapse import CollapseMonitor, group_agreement


def run(agreements: list[float], accuracies: list[float], window: int = 3) -> CollapseMonitor:
    monitor = CollapseMonitor(window=window)
    for step, (agree, acc) in enumerate(zip(agreements, accuracies, strict=True), start=1):
        monitor.observe(step, agree, acc)
    return monitor


@pytest.mark.parametrize(
    ("agreements", "accuracies", "marked_at"),
    [
        # collapse: agreement 0.4 -> 0.9 while accuracy 0.4 -> 0.1; marked once both
        # windows exist and differ (step 6 compares steps 4-6 with 1-3)
        ([0.4, 0.4, 0.4, 0.9, 0.9, 0.9, 0.9], [0.4, 0.4, 0.4, 0.1, 0.1, 0.1, 0.1], 6),
        # learning: agreement rises with accuracy, never marked
        ([0.4, 0.4, 0.4, 0.9, 0.9, 0.9, 0.9], [0.4, 0.4, 0.4, 0.8, 0.8, 0.8, 0.8], None),
        # accuracy falls but agreement does not rise (a reward hacked some other way)
        ([0.5] * 7, [0.4, 0.4, 0.4, 0.1, 0.1, 0.1, 0.1], None),
        # small wobbles under the margin (0.05) are noise
        (
            [0.40, 0.42, 0.41, 0.43, 0.44, 0.43, 0.44],
            [0.40, 0.39, 0.41, 0.38, 0.39, 0.38, 0.38],
            None,
        ),
        # too few steps for two windows: nothing is decided
        ([0.1, 0.9, 0.9, 0.9, 0.9], [0.9, 0.1, 0.1, 0.1, 0.1], None),
    ],
)
def test_marks_only_agreement_up_with_accuracy_down(
    agreements: list[float], accuracies: list[float], marked_at: int | None
) -> None:
    assert run(agreements, accuracies).marked_at == marked_at


def test_a_marked_run_stays_marked_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    monitor = CollapseMonitor(window=2)
    with caplog.at_level(logging.WARNING, logger="rewardsmith.rl.collapse"):
        rows = [
            monitor.observe(s, agree, acc)
            for s, (agree, acc) in enumerate(
                [(0.3, 0.5), (0.3, 0.5), (1.0, 0.0), (1.0, 0.0), (0.3, 0.5), (0.3, 0.5)], start=1
            )
        ]
    assert [r["collapse/flag"] for r in rows] == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert rows[-1]["collapse/marked_at_step"] == 4.0
    assert rows[3]["collapse/agreement_change"] == pytest.approx(0.7)
    assert rows[3]["collapse/accuracy_change"] == pytest.approx(-0.5)
    warnings = [r for r in caplog.records if "collapse" in r.getMessage()]
    assert len(warnings) == 1 and "agreement rose by 0.700" in warnings[0].getMessage()


def test_replay_rebuilds_the_history_of_a_resumed_run() -> None:
    rows = [
        {"step": s, "collapse/agreement": a, "accuracy": c}
        for s, a, c in [(1, 0.3, 0.5), (2, 0.3, 0.5), (3, 1.0, 0.0), (4, 1.0, 0.0)]
    ]
    monitor = CollapseMonitor(window=2)
    monitor.replay(rows)
    assert monitor.marked_at == 4 and len(monitor.agreements) == 4


@pytest.mark.parametrize(
    ("texts", "group_size", "expected"),
    [
        # two groups of two: one agrees in every style, one splits
        (["#### 32", "\\boxed{32}", "#### 5", "#### 6"], 2, (1.0 + 0.5) / 2),
        # hedges and no answers never agree
        (["31 or 32", "no idea", "#### 7", "#### 7"], 2, (0.0 + 1.0) / 2),
    ],
)
def test_group_agreement(texts: list[str], group_size: int, expected: float) -> None:
    assert group_agreement(texts, ["q"] * len(texts), group_size, "number") == expected


@pytest.mark.parametrize("kwargs", [{"window": 0}, {"margin": 0.0}, {"margin": 1.5}])
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        CollapseMonitor(**kwargs)  # type: ignore[arg-type]


def test_groups_must_tile_the_batch() -> None:
    with pytest.raises(ConfigError):
        group_agreement(["a", "b", "c"], ["q"] * 3, 2, "number")
