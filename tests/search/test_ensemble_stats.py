"""Ensemble selections (top-k, diverse across rounds, random control) and the statistics
that compare configurations: pairwise exact McNemar with Bonferroni, the table of
indistinguishable configurations, rank agreement between fidelity levels."""

from __future__ import annotations

import pytest
from scipy.stats import kendalltau, spearmanr

from rewardsmith.search.ensemble import plan, select_diverse
from rewardsmith.search.results import CandidateRecord
from rewardsmith.search.stats import indistinguishable, pairwise, rank_agreement, spread, versus


def _rec(name: str, round_no: int, f1: float | None, admitted: bool = True) -> CandidateRecord:
    grpo = {"f1": f1, "accuracy": f1, "steps": 10} if f1 is not None else None
    return CandidateRecord(
        round=round_no,
        name=name,
        generator="offline",
        admitted=admitted,
        proxy={"fitness": 0.0, "separation": 0.0} if admitted else None,
        grpo=grpo,
        grpo_rungs=[grpo] if grpo else [],
    )


RECORDS = [
    _rec("a1", 1, 0.50),
    _rec("a2", 1, 0.45),
    _rec("a3", 1, 0.44),
    _rec("b1", 2, 0.40),
    _rec("b2", 2, 0.30),
    _rec("c1", 3, None),  # judged by the proxy only: ranks after every GRPO-judged one
    _rec("x", 3, None, admitted=False),
]


def test_top_k_follows_the_ranking_and_skips_rejected() -> None:
    configs, notes = plan(RECORDS, [3, 5, 10], {})
    assert configs["base"]["members"] == []
    assert configs["top1"]["members"] == ["a1"]
    assert configs["top3"]["members"] == ["a1", "a2", "a3"]
    assert configs["top5"]["members"] == ["a1", "a2", "a3", "b1", "b2"]
    assert "top10" not in configs and notes == ["size 10: only 6 admitted candidates"]
    for k in (3, 5):
        members = configs[f"random{k}"]["members"]
        assert len(set(members)) == k and "x" not in members


def test_diverse_takes_each_rounds_best_and_skips_duplicates() -> None:
    ranking = [r for r in RECORDS if r.admitted]
    assert select_diverse(ranking, 3, {}) == ["a1", "b1", "c1"]
    # b1 scores the pool exactly like a1: the same reward, skipped (used only to fill up)
    scores = {"a1": [1, 0, 1, 0], "b1": [1, 0, 1, 0], "c1": [0, 1, 1, 0], "a2": [0, 0, 1, 1]}
    assert select_diverse(ranking, 3, scores) == ["a1", "c1", "a2"]


def test_random_control_is_seeded() -> None:
    one, _ = plan(RECORDS, [3], {}, seed=1)
    two, _ = plan(RECORDS, [3], {}, seed=1)
    assert one["random3"] == two["random3"]


def test_pairwise_mcnemar_is_bonferroni_corrected_over_all_pairs() -> None:
    base = [False] * 60 + [True] * 40
    better = [True] * 30 + [False] * 30 + [True] * 40  # 30 more right, none fewer
    same = list(base)
    tests = pairwise({"base": base, "better": better, "same": same})
    assert len(tests) == 3 and all(t["comparisons"] == 3 for t in tests)
    by_pair = {(t["a"], t["b"]): t for t in tests}
    t = by_pair[("base", "better")]
    assert (t["only_a"], t["only_b"]) == (0, 30)
    assert t["p_bonferroni"] == pytest.approx(min(1.0, 3 * t["p_value"]))
    assert t["significant"]
    assert not by_pair[("base", "same")]["significant"]
    table = indistinguishable(["base", "better", "same"], tests)
    assert table == {"base": ["same"], "better": [], "same": ["base"]}


def test_versus_compares_each_with_the_reference_only() -> None:
    base = [False] * 60 + [True] * 40
    better = [True] * 30 + [False] * 30 + [True] * 40
    worse = [False] * 70 + [True] * 30  # 10 fewer right
    tests = versus(base, {"better": better, "worse": worse, "same": list(base)})
    assert (tests["better"]["only_it"], tests["better"]["only_reference"]) == (30, 0)
    assert (tests["worse"]["only_it"], tests["worse"]["only_reference"]) == (0, 10)
    for t in tests.values():  # Bonferroni over the three compared, not over all pairs
        assert t["p_bonferroni"] == pytest.approx(min(1.0, 3 * t["p_value"]))
    assert tests["better"]["significant"] and tests["worse"]["significant"]
    assert not tests["same"]["significant"] and tests["same"]["p_value"] == 1.0


def test_rank_agreement_matches_scipy() -> None:
    x = [0.1, 0.5, 0.3, 0.9, 0.7]
    y = [0.2, 0.4, 0.5, 0.8, 0.6]
    got = rank_agreement(x, y)
    assert got["spearman"] == pytest.approx(spearmanr(x, y).statistic)
    assert got["kendall"] == pytest.approx(kendalltau(x, y).statistic)
    assert rank_agreement([1, 2], [1, 2])["spearman"] is None
    assert rank_agreement([1, 1, 1], [1, 2, 3])["spearman"] is None


def test_seed_spread() -> None:
    s = spread([0.5, 0.7, 0.6])
    assert s["mean"] == pytest.approx(0.6) and s["sd"] == pytest.approx(0.1)
    assert spread([0.4])["sd"] == 0.0
