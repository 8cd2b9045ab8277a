"""The search on the multi-task testbed: the `testbed-multi` task (families' own graders as
the base reward, held-out sets holding every family), and twins and probes judged by each
response's own task family's rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.rl.answers import judge_answer
from rewardsmith.rl.multitask import MIX
from rewardsmith.rl.oracle import FamilyOracle
from rewardsmith.search.incentives import build_incentives
from rewardsmith.search.response_pool import PoolItem, build_probes
from rewardsmith.search.task import (
    FAMILY_ORACLE,
    TESTBED_MULTI_TASK,
    TESTBED_TASK,
    SearchTask,
    load_task,
    multitask_held_out,
)

# Right by the family's rule, wrong by the exact comparison a judge without the family
# falls back to: a clock time with a leading zero, a list without spaces or in brackets, a
# number with a decimal point.
RIGHT_BY_FAMILY_RULE = [
    ("clock", "9:05", "9:00+5 min=9:05.\nFinal answer: 09:05"),
    ("sort_numbers", "8, 11, 64", "8<11<64. The answer is 8,11,64."),
    ("sort_numbers", "3, 8, 64", "3<8<64.\nFinal answer: [3, 8, 64]"),
    ("arith_word", "57", "2*7=14. 43+14=57.\n#### 57.0"),
]
# Wrong answers in the same families (a twin must turn each into a right one).
WRONG_BY_FAMILY_RULE = [
    ("clock", "10:40", "<thinking>10:00+45 min=10:45.</thinking><solution>10:45</solution>"),
    ("sort_numbers", "5, 9, 70", "Final answer: 5, 70, 9"),
    ("word_reversal", "blue, red, green", "<answer>green, red, blue</answer>"),
]
_TIME = re.compile(r"^\d{1,2}:\d{2}$")


def _pool(cases, *, keep_family: bool = True) -> list[PoolItem]:
    """One group per case; each response judged by its family's rule (the pool's verdict)."""
    items = []
    for g, (family, reference, completion) in enumerate(cases):
        verdict = judge_answer(completion, reference, "family", family)
        items.append(
            PoolItem(
                g,
                f"Question {g}",
                reference,
                completion,
                verdict.correct,
                verdict.parseable,
                task=family if keep_family else None,
            )
        )
    return items


# -- the task ------------------------------------------------------------------------------


def test_the_builtin_task_trains_the_multitask_policy_with_each_familys_grader() -> None:
    task = load_task("testbed-multi")
    assert task is TESTBED_MULTI_TASK
    assert (task.policy, task.train, task.eval) == ("testbed-multi",) * 3
    assert task.answer_format == "family" and task.base_rewards == (FAMILY_ORACLE,)
    (tool,) = task.base_tools()
    assert isinstance(tool, FamilyOracle)
    # the single-task testbed's base rewards stay library names
    assert TESTBED_TASK.base_tools() == list(TESTBED_TASK.base_rewards)


def test_held_out_sets_hold_every_family_and_share_no_problem() -> None:
    validation, test = SearchTask(
        "m", "m", eval="testbed-multi", answer_format="family", validation_size=21, test_size=35
    ).held_out()
    assert len(validation) == 21 and len(test) == 35
    for part, per_family in ((validation, 3), (test, 5)):
        counts = {f: sum(it.task == f for it in part) for f in MIX}
        assert counts == dict.fromkeys(MIX, per_family)
    assert not {it.question for it in validation} & {it.question for it in test}
    # the same problems every time (a run, its ensembles and its audit judge the same set)
    assert multitask_held_out(56)[:21] == validation


def test_the_family_grader_needs_the_family_answer_format() -> None:
    with pytest.raises(ConfigError, match="family"):
        SearchTask("t", "t", base_rewards=(FAMILY_ORACLE,), answer_format="solution")


def test_a_task_file_may_name_the_multitask_data(tmp_path: Path) -> None:
    path = tmp_path / "task.json"
    fields = {
        "name": "m",
        "policy": "testbed-multi-tiny",
        "train": "testbed-multi",
        "eval": "testbed-multi",
        "answer_format": "family",
        "base_rewards": [FAMILY_ORACLE, "think_format"],
    }
    path.write_text(json.dumps(fields))
    task = load_task(str(path))
    # procedural sources and presets are names, not paths relative to the file
    assert (task.policy, task.train, task.eval) == (
        "testbed-multi-tiny",
        "testbed-multi",
        "testbed-multi",
    )
    assert task.train_items()[0].task in MIX
    oracle, think = task.base_tools()
    assert isinstance(oracle, FamilyOracle) and think == "think_format"


# -- family-aware twins and probes -----------------------------------------------------------


@pytest.mark.parametrize(("family", "reference", "completion"), RIGHT_BY_FAMILY_RULE)
def test_a_right_answer_is_twinned_by_its_familys_rule(family, reference, completion) -> None:
    pool = _pool(RIGHT_BY_FAMILY_RULE)
    assert all(it.correct for it in pool)
    twins = build_incentives(pool, TESTBED_MULTI_TASK).twins
    twins = tuple(t for t in twins if t.task == family and t.reference == reference)
    assert len(twins) == 1
    (twin,) = twins
    assert twin.was_right and twin.right == completion
    assert judge_answer(twin.wrong, reference, "family", family).correct is False
    # only the answer differs: the steps stay as written
    assert twin.wrong.split("\n")[0].split(". ")[0] == completion.split("\n")[0].split(". ")[0]
    # the exact comparison a judge without the family uses calls this right answer wrong, so
    # without the family no twin could be confirmed
    assert judge_answer(completion, reference, "family", None).correct is False


def test_without_the_family_the_same_pool_gives_no_twins() -> None:
    pool = _pool(RIGHT_BY_FAMILY_RULE, keep_family=False)
    assert build_incentives(pool, TESTBED_MULTI_TASK).twins == ()


@pytest.mark.parametrize(("family", "reference", "completion"), WRONG_BY_FAMILY_RULE)
def test_a_wrong_answer_gets_a_right_twin_in_its_familys_form(
    family, reference, completion
) -> None:
    pool = _pool(WRONG_BY_FAMILY_RULE + RIGHT_BY_FAMILY_RULE)
    assert not pool[WRONG_BY_FAMILY_RULE.index((family, reference, completion))].correct
    (twin,) = [
        t
        for t in build_incentives(pool, TESTBED_MULTI_TASK).twins
        if t.task == family and t.reference == reference
    ]
    assert not twin.was_right and twin.wrong == completion
    assert judge_answer(twin.right, reference, "family", family).correct is True


def test_wrong_twins_take_their_answers_from_the_same_family() -> None:
    cases = [("clock", ref, f"Final answer: {ref}") for ref in ("9:05", "10:40", "3:15")]
    cases += [("sort_numbers", "8, 11, 64", "Final answer: 8, 11, 64")]
    twins = build_incentives(_pool(cases), TESTBED_MULTI_TASK, seed=1).twins
    clock = [t for t in twins if t.task == "clock"]
    assert len(clock) == 3
    for twin in clock:
        answer = twin.wrong.removeprefix("Final answer: ")
        assert _TIME.match(answer) and answer != twin.reference


def test_probes_and_well_formed_wrong_probes_keep_the_family_and_are_wrong_by_it() -> None:
    pool = _pool(RIGHT_BY_FAMILY_RULE + [("clock", "10:40", "Final answer: 10:40")])
    incentives = build_incentives(pool, TESTBED_MULTI_TASK)
    assert incentives.wrong_probes
    for probe in (*incentives.wrong_probes, *incentives.plain_wrong):
        assert probe.task in MIX
        assert (
            judge_answer(probe.completion, probe.reference, "family", probe.task).correct is False
        )
    by_group = {it.group: it.task for it in pool}
    assert all(p.task == by_group[p.group] for p in build_probes(pool, TESTBED_MULTI_TASK))


def test_a_pool_written_before_families_were_kept_still_loads(tmp_path: Path) -> None:
    from rewardsmith.search.response_pool import load_pool

    old = {
        "group": 0,
        "prompt": "p",
        "reference": "3",
        "completion": "<solution>3</solution>",
        "correct": True,
        "parseable": True,
        "probe": None,
    }
    (tmp_path / "pool.jsonl").write_text(json.dumps(old) + "\n")
    (item,) = load_pool(tmp_path)
    assert item.task is None and item.correct


# -- the pool and a base run on the tiny multi-task policy ----------------------------------


@pytest.fixture(scope="module")
def multi_tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the `testbed-multi-tiny` build (seconds)."""
    pytest.importorskip("torch")
    from rewardsmith.rl.policies import TESTBED_MULTI_TINY, build_testbed

    cache = tmp_path_factory.mktemp("testbed-multi")
    build_testbed(TESTBED_MULTI_TINY, cache_dir=cache)
    return cache


def test_the_pool_keeps_each_prompts_family_and_a_base_run_grades_by_it(
    multi_tiny: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewardsmith.rl.policies import load_policy
    from rewardsmith.search.fitness import GRPORun, grpo_fitness
    from rewardsmith.search.response_pool import sample_pool

    monkeypatch.setenv("REWARDSMITH_TESTBED_CACHE", str(multi_tiny))
    task = SearchTask(
        "m",
        "m",
        policy="testbed-multi-tiny",
        train="testbed-multi",
        eval="testbed-multi",
        base_rewards=(FAMILY_ORACLE,),
        answer_format="family",
        validation_size=14,
        test_size=14,
        pool_prompts=14,
        pool_group=2,
        train_prompts=300,
        eval_max_new_tokens=12,
        grpo={"max_new_tokens": 12, "prompts_per_step": 2, "group_size": 2},
    )
    pool = sample_pool(task, load_policy(task.policy), seed=0)
    assert len(pool) == 28 and len({it.task for it in pool}) > 1
    assert {it.task for it in pool} <= set(MIX)
    for it in pool:  # each response judged by its own family's rule
        verdict = judge_answer(it.completion, it.reference, "family", it.task)
        assert (verdict.parseable, verdict.correct) == (it.parseable, it.correct)
    validation, _test = task.held_out()
    metrics = grpo_fitness(
        task, task.base_tools(), GRPORun(tmp_path / "base", 2), {"validation": validation}
    )
    assert metrics["steps"] == 2 and 0.0 <= metrics["accuracy"] <= 1.0
    # the families' grader scored every training sample (nothing left unscored)
    assert "reward/family_oracle" in metrics["training"]
