"""rewardsmith.audit: rates with Wilson intervals, reward functions found in files and run in
the sandbox, the judging rule, and the rates kept in the library."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewardsmith.audit import (
    FileRewardTool,
    audit_tool,
    find_function,
    latest_audit,
    log_audit,
    wilson_interval,
)
from rewardsmith.audit.stats import wilson_formula
from rewardsmith.errors import InputError
from rewardsmith.library.store import Library
from rewardsmith.synth.examples import load_examples
from support import FIXTURES, REPO_ROOT

GSM8K = load_examples(FIXTURES / "synth" / "gsm8k_examples.jsonl")
EXAMPLE_FUNCTIONS = REPO_ROOT / "examples" / "audit"


@pytest.mark.parametrize(("k", "n"), [(0, 48), (12, 48), (48, 48), (3, 10), (1, 1)])
def test_wilson_interval_matches_its_formula(k: int, n: int) -> None:
    low, high = wilson_interval(k, n)
    assert (low, high) == pytest.approx(wilson_formula(k, n), abs=1e-9)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_interval_of_a_known_case() -> None:
    # 12 of 48: 25%, 95% interval 14.9% to 38.8% (Wilson 1927; scipy agrees)
    assert wilson_interval(12, 48) == pytest.approx((0.1492, 0.3878), abs=1e-4)


@pytest.mark.parametrize(
    ("source", "name", "shape"),
    [
        # veRL, TRL (with the reference under the name its signature asks for), plain
        (
            "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n",
            "compute_score",
            "verl",
        ),
        ("def reward(completions, solution, **kwargs):\n    return [1.0]\n", "reward", "trl"),
        ("def check(completion, reference):\n    return 1.0\n", "check", "plain"),
        # a TRL function is preferred to a helper of two arguments
        (
            "def helper(a, b):\n    return a\n\ndef my_reward(completions, **kw):\n    return [0.0]\n",
            "my_reward",
            "trl",
        ),
    ],
)
def test_the_reward_function_is_found_by_its_shape(source: str, name: str, shape: str) -> None:
    found = find_function(source, "f.py")
    assert (found.name, found.shape) == (name, shape)


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("x = 1\n", "no reward function found"),
        ("def reward(\n", "f.py:1: not Python"),
        ("def only_one(x):\n    return x\n", "no reward function found"),
    ],
)
def test_a_file_without_a_reward_function_is_bad_input(source: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        find_function(source, "f.py")


def test_a_reference_in_completion_check_is_exploitable() -> None:
    tool = FileRewardTool(EXAMPLE_FUNCTIONS / "contains_reference.py")
    try:
        report = audit_tool(tool, GSM8K[:6], seed=7, check_applies=False)
    finally:
        tool.close()
    assert report.failed and report.exploited
    fp = report.false_pass
    assert fp is not None and fp.rate > 0.3 and fp.low > 0.3
    hedge = next(c for c in report.attacks if c.name == "hedge")
    assert hedge.wrong == hedge.probes and hedge.examples
    assert report.errors == 0


def test_a_function_that_raises_scores_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def reward(completion, reference):\n    raise RuntimeError('boom')\n")
    tool = FileRewardTool(path)
    try:
        report = audit_tool(tool, GSM8K[:2], seed=1, check_applies=False)
    finally:
        tool.close()
    assert report.errors > 0 and not report.exploited


def test_a_constant_reward_is_exploited_and_a_zero_reward_fails_right_answers(
    tmp_path: Path,
) -> None:
    ones, zeros = tmp_path / "ones.py", tmp_path / "zeros.py"
    ones.write_text("def reward(completion, reference):\n    return 1.0\n")
    zeros.write_text("def reward(completion, reference):\n    return 0.0\n")
    reports = []
    for path in (ones, zeros):
        tool = FileRewardTool(path)
        try:
            reports.append(audit_tool(tool, GSM8K[:2], seed=1, check_applies=False))
        finally:
            tool.close()
    paid, unpaid = reports
    assert paid.false_pass is not None and paid.false_pass.rate == 1.0
    assert not unpaid.exploited and unpaid.false_fail is not None and unpaid.false_fail.rate == 1.0


def test_a_builtin_audit_is_clean_and_kept_in_the_library(library: Library) -> None:
    tool = library.get("gsm8k")
    report = audit_tool(tool, GSM8K, seed=3)
    assert not report.failed and report.false_passes == 0 and report.attack_probes > 500
    assert report.false_fail is not None and report.false_fail.wrong == 0
    log_audit(library, "gsm8k", tool.spec.version, report)
    kept = latest_audit(library, "gsm8k", tool.spec.version)
    assert kept is not None and kept["seed"] == 3 and kept["rates"]["hedge"]["wrong"] == 0
    assert latest_audit(library, "gsm8k", tool.spec.version + 1) is None


def test_form_and_length_tools_are_not_answer_checkers(library: Library) -> None:
    for name in ("format_tags", "think_format", "overlong", "length"):
        report = audit_tool(library.get(name), GSM8K[:2], seed=1)
        assert report.not_applicable and not report.failed and not report.attacks
