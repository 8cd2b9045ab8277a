"""bench/rlar_multitask.py, the whole loop as one experiment: its comparisons are exact
McNemar tests of the routed arm against each other arm on the same held-out items,
Bonferroni-corrected, and one command trains every arm and writes the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from rlar_report import compare_arms  # noqa: E402


def _run(correct: list[bool]) -> dict[str, Any]:
    return {"eval": {"items": [{"correct": c, "task": "t"} for c in correct]}}


def test_routed_is_compared_with_each_arm_on_the_same_items_with_bonferroni() -> None:
    # 10 items: routed right on 0-7; static_rm right on 0-1 (6 only routed, 0 only static);
    # oracle right on 0-8 (1 only the oracle); the judge the same as routed
    routed = [i < 8 for i in range(10)]
    data = {
        "settings": {"single_seed": 0},
        "runs": {
            "routed@seed0": _run(routed),
            "static_rm@seed0": _run([i < 2 for i in range(10)]),
            "oracle@seed0": _run([i < 9 for i in range(10)]),
            "judge@seed0": _run(routed),
            # seed 1 of routed is compared with seed 1 of static_rm only
            "routed@seed1": _run(routed),
            "static_rm@seed1": _run(routed),
        },
    }
    rows = {(r["a"], r["b"]): r for r in compare_arms(data)}
    assert set(rows) == {
        ("routed@seed0", "static_rm@seed0"),
        ("routed@seed0", "judge@seed0"),
        ("routed@seed0", "oracle@seed0"),
        ("routed@seed1", "static_rm@seed1"),
    }
    static = rows[("routed@seed0", "static_rm@seed0")]
    assert (static["only_a_right"], static["only_b_right"]) == (6, 0)
    assert static["p"] == pytest.approx(2 * 0.5**6)  # exact two-sided binomial
    assert static["comparisons"] == 3 and static["p_bonferroni"] == pytest.approx(6 * 0.5**6)
    oracle = rows[("routed@seed0", "oracle@seed0")]
    assert (oracle["only_a_right"], oracle["only_b_right"], oracle["p_bonferroni"]) == (0, 1, 1.0)
    assert rows[("routed@seed0", "judge@seed0")]["p"] == 1.0
    assert rows[("routed@seed1", "static_rm@seed1")]["comparisons"] == 1


@pytest.mark.slow
def test_one_command_trains_every_arm_and_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "rlar"
    done = subprocess.run(
        [sys.executable, str(BENCH / "rlar_multitask.py"), "--out", str(out), "--tiny"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    arms = {p.name for p in (out / "arms").iterdir()}
    assert {"routed@seed0", "static_rm@seed0", "oracle@seed0"} <= arms
    # no judge server here: the arm is skipped and says why, or it ran
    assert "judge@seed0" in arms or (out / "judge_skipped.txt").read_text().strip()
    report = (out / "report.md").read_text()
    for part in ("Held-out accuracy per family", "Exact McNemar", "hacking indicators"):
        assert part in report
    assert (out / "accuracy.png").stat().st_size > 0 and (out / "curves.png").stat().st_size > 0
    results = json.loads((out / "results.json").read_text())
    assert {c["b"] for c in results["comparisons"]} >= {"static_rm@seed0", "oracle@seed0"}
    routed = json.loads((out / "arms" / "routed@seed0" / "arm.json").read_text())
    assert routed["reward_seconds_per_step"] > 0 and routed["steps"] == 3


@pytest.mark.slow
def test_the_judge_arm_counts_its_tokens(tmp_path: Path) -> None:
    from fake_llm import chat_body, fake_llm

    out = tmp_path / "rlar"
    usage = {"prompt_tokens": 90, "completion_tokens": 1}
    models = (200, {"object": "list", "data": [{"id": "judge-model", "object": "model"}]})
    with fake_llm([(200, chat_body("NO", usage))], models=models) as fake:
        done = subprocess.run(
            [sys.executable, str(BENCH / "rlar_multitask.py"), "--out", str(out), "--tiny"]
            + ["--arms", "routed,judge", "--judge-url", fake.url],
            capture_output=True,
            text=True,
            timeout=900,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    judge = json.loads((out / "arms" / "judge@seed0" / "arm.json").read_text())
    assert judge["judge_usage"]["calls"] > 0
    assert judge["judge_usage"]["prompt_tokens"] == 90 * judge["judge_usage"]["calls"]
    results = json.loads((out / "results.json").read_text())
    assert {c["b"] for c in results["comparisons"]} == {"judge@seed0"}
    assert "judge" in (out / "report.md").read_text()
