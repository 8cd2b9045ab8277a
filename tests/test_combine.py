"""The one rule for combining weighted parts, for every pair of part statuses, and the three
places that use it (composites, multi-tool router decisions, GRPO reward sets)."""

from __future__ import annotations

import pytest

from rewardsmith.combine import Weighted, combine, component_means
from rewardsmith.types import Reward, Status

# A part's reward for each status: ok parts score A=1.0, B=0.5 (gate G=1.0, S=0.5); failed
# parts carry 0.0, as tools give them; n/a and invalid references carry None.
OK_SCORE = {"A": 1.0, "B": 0.5, "G": 1.0, "S": 0.5}
INV = (None, "invalid_reference")
NA = (None, "not_applicable")


def part(name: str, status: Status) -> Reward:
    score = {"ok": OK_SCORE[name], "timeout": 0.0, "error": 0.0}.get(status)
    return Reward(score, status, {"inner": 0.25} if status == "ok" else {}, f"{name}@1", "why")


ORDER: list[Status] = ["ok", "not_applicable", "invalid_reference", "timeout", "error"]
# fmt: off
# "sum", A x0.7 + B x0.3. Rows: A's status; columns: B's status, in ORDER.
SUM_TABLE = {
    "ok":                [(0.85, "ok"),      (0.7, "ok"),      INV, (0.7, "timeout"), (0.7, "error")],
    # a part that does not apply is left out; when none applies, nothing is scored
    "not_applicable":    [(0.15, "ok"),      NA,               INV, (0.0, "timeout"), (0.0, "error")],
    # an invalid reference makes the whole combination unscored, whatever the other part says
    "invalid_reference": [INV,               INV,              INV, INV,              INV],
    # failed parts count 0 and the worst failure (error before timeout) is the status
    "timeout":           [(0.15, "timeout"), (0.0, "timeout"), INV, (0.0, "timeout"), (0.0, "error")],
    "error":             [(0.15, "error"),   (0.0, "error"),   INV, (0.0, "error"),   (0.0, "error")],
}
# "gate", G gates S (weight 1). Rows: the gate's status; columns: S's status, in ORDER.
GATE_TABLE = {
    "ok":                [(0.5, "ok"),      NA, INV, (0.0, "timeout"), (0.0, "error")],
    # a gate that does not apply does not block
    "not_applicable":    [(0.5, "ok"),      NA, INV, (0.0, "timeout"), (0.0, "error")],
    "invalid_reference": [INV,              INV, INV, INV,             INV],
    # a failed gate blocks (score 0) and its failure shows in the status
    "timeout":           [(0.0, "timeout"), NA, INV, (0.0, "timeout"), (0.0, "error")],
    "error":             [(0.0, "error"),   NA, INV, (0.0, "error"),   (0.0, "error")],
}
# fmt: on


@pytest.mark.parametrize("a", ORDER)
@pytest.mark.parametrize("b", ORDER)
def test_weighted_sum_for_every_status_pair(a: Status, b: Status) -> None:
    expected_score, expected_status = SUM_TABLE[a][ORDER.index(b)]
    got = combine([Weighted("A", 0.7), Weighted("B", 0.3)], [part("A", a), part("B", b)])
    assert got.status == expected_status
    if expected_score is None:
        assert got.score is None
    else:
        assert got.score == pytest.approx(expected_score)
    if a == "ok":  # every part's score and inner components are kept
        assert got.components["A"] == 1.0 and got.components["A.inner"] == 0.25


@pytest.mark.parametrize("g", ORDER)
@pytest.mark.parametrize("s", ORDER)
def test_gate_for_every_status_pair(g: Status, s: Status) -> None:
    expected_score, expected_status = GATE_TABLE[g][ORDER.index(s)]
    got = combine(
        [Weighted("G", gate=True), Weighted("S")], [part("G", g), part("S", s)], mode="gate"
    )
    assert (got.score, got.status) == (expected_score, expected_status)


def test_a_gate_below_its_threshold_blocks_and_a_weight_may_be_negative() -> None:
    low_gate = Reward(0.5, "ok", tool="G@1")
    got = combine([Weighted("G", gate=True), Weighted("S")], [low_gate, part("S", "ok")], "gate")
    assert (got.score, got.status) == (0.0, "ok") and got.reason.startswith("gate failed")
    penalty = Reward(-0.4, "ok", tool="len@1")
    got = combine([Weighted("A"), Weighted("len", 0.5)], [part("A", "ok"), penalty])
    assert got.score == pytest.approx(0.8)


def test_parts_and_rewards_must_line_up() -> None:
    with pytest.raises(ValueError, match="1 rewards for 2 parts"):
        combine([Weighted("A"), Weighted("B")], [part("A", "ok")])


def test_component_means_average_over_the_rewards_that_report_each_component() -> None:
    rewards = [
        Reward(1.0, components={"x": 1.0, "y": 0.0}),
        Reward(0.0, components={"x": 0.0}),
        Reward(None, "not_applicable"),
    ]
    assert component_means(rewards) == {"x": 0.5, "y": 0.0}
