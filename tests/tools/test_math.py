"""The `math` tool: a table of real cases, then the engine (dedupe, deadlines, threads, pool).

Cases follow math-verify's test style: (reference, completion, score), a comment per group.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from math_verify import parse, verify

from rewardsmith.config import MAX_COMPLETION_CHARS, MAX_REFERENCE_CHARS
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools import math as math_tool
from rewardsmith.tools.math import MathTool
from rewardsmith.types import Reward, Sample, ToolSpec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "math"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_shared = pytest.mark.skipif(not SHARED.exists(), reason="../shared/data is not present")

# math-verify spends seconds on this (Python-level work, interruptible by an alarm).
NESTED_FRACTION = "$" + "\\frac{1}{" * 1000 + "2" + "}" * 1000 + "$"
# A megabyte that math-verify scans for seconds even after clipping, also in a process that
# has parsed LaTeX before (the nested fraction takes ~7 s the first time, ~0.3 s after).
SLOW_SCAN = "\\[" * 500_000


@pytest.fixture(scope="module")
def tool() -> Iterator[MathTool]:
    """One pool for the module: the product path, started once."""
    t = MathTool(workers=2)
    yield t
    t.close()


def one(tool: MathTool, reference: str | None, completion: str) -> Reward:
    [reward] = tool.score([Sample(completion=completion, reference=reference)])
    return reward


CASES = [
    # \boxed{} answers; the last box wins; a reference may itself be boxed.
    ("42", "Adding them gives \\boxed{42}.", 1.0),
    ("\\frac{1}{2}", "So the probability is $\\boxed{\\dfrac{1}{2}}$.", 1.0),
    ("42", "First \\boxed{41}. Rechecking the sum: \\boxed{42}", 1.0),
    ("\\boxed{7}", "The total is \\boxed{7}", 1.0),
    # "The answer is ...", and the last expression when nothing marks the answer.
    ("42", "The answer is 42.", 1.0),
    ("3", "Therefore, the final answer is $3$.", 1.0),
    ("12", "We compute 3 * 4 = 12", 1.0),
    # Fractions and mixed numbers (Qwen2.5-Math's gold answers are written like these).
    ("0.5", "\\boxed{\\frac{1}{2}}", 1.0),
    ("\\frac{3}{8}", "\\boxed{0.375}", 1.0),
    ("1\\frac{1}{4}", "Converting, we get \\boxed{\\frac{5}{4}}", 1.0),
    ("\\tfrac{1}{2}", "\\boxed{1/2}", 1.0),
    # Equivalent forms: radicals, factored polynomials, sets, intervals, percent, currency.
    ("\\sqrt{8}", "\\boxed{2\\sqrt{2}}", 1.0),
    ("x^2 - 4", "\\boxed{(x-2)(x+2)}", 1.0),
    ("3, 5, 7", "The primes are \\boxed{7, 3, 5}", 1.0),
    ("(1, 2]", "\\boxed{(1,2]}", 1.0),
    ("10\\%", "\\boxed{10}", 1.0),
    ("\\$36", "She pays \\boxed{36} dollars.", 1.0),
    ("10{,}000", "\\boxed{10000}", 1.0),
    ("A", "The correct option is \\boxed{A}", 1.0),
    ("\\text{Evelyn}", "\\boxed{\\text{Evelyn}}", 1.0),
    (
        "\\begin{pmatrix} -1 \\\\ 2 \\end{pmatrix}",
        "\\boxed{\\begin{pmatrix}-1\\\\2\\end{pmatrix}}",
        1.0,
    ),
    # Bare references and bare completions are read as LaTeX (hendrycks/math's own cases);
    # "1,22" is both a decimal comma (math-verify's cases) and a list ("-2,1" in MATH).
    ("\\frac34i", "\\frac{3}{4}i", 1.0),
    ("\\left(x-2\\right)\\left(x+2\\right)", "(x-2)(x+2)", 1.0),
    ("1,22", "1.22", 1.0),
    ("-2,1", "The roots are \\boxed{1, -2}", 1.0),
    # Wrong answers; an earlier box does not count.
    ("42", "\\boxed{41}", 0.0),
    ("41", "First \\boxed{41}. Rechecking the sum: \\boxed{42}", 0.0),
    ("\\frac{1}{2}", "\\boxed{\\frac{1}{3}}", 0.0),
    ("10\\text{ units}", "100 ", 0.0),
    ("x^2 - 4", "\\boxed{(x-2)^2}", 0.0),
    ("3, 5, 7", "\\boxed{3, 5}", 0.0),
    # The <thinking>/<solution> format: the solution is the answer, never a number of the
    # reasoning before it (the whole text read as prose paid "2+3=5 ... <solution>6").
    ("5", "<thinking>2+3=5</thinking><solution>5</solution>", 1.0),
    ("5", "<thinking>2+3=5</thinking><solution>6</solution>", 0.0),
    ("5", "<thinking>2+3=5 so 5</thinking>\n<solution>6</solution>", 0.0),
    ("\\frac{1}{2}", "<thinking>1/2</thinking>\n<solution>\\frac{2}{4}</solution>", 1.0),
    ("5", "<solution>5</answer>6", 0.0),
]


@pytest.mark.parametrize(("reference", "completion", "expected"), CASES)
def test_table(tool: MathTool, reference: str, completion: str, expected: float) -> None:
    reward = one(tool, reference, completion)
    assert (reward.score, reward.status) == (expected, "ok"), reward.reason
    assert reward.tool == "math@1"


@pytest.mark.parametrize(
    "completion",
    [
        # No answer at all: 0.0 with a reason, not an error.
        "",
        "I am not sure how to solve this.",
        "The answer is \\boxed{}",
    ],
)
def test_no_answer(tool: MathTool, completion: str) -> None:
    reward = one(tool, "42", completion)
    assert (reward.score, reward.status, reward.reason) == (0.0, "ok", "no answer found")


@pytest.mark.parametrize(
    "reference",
    [
        # Missing, blank, unparseable or oversized references: invalid_reference, score None.
        None,
        "",
        "   ",
        "\\text{}",
        "1" * (MAX_REFERENCE_CHARS + 1),
    ],
)
def test_invalid_reference(tool: MathTool, reference: str | None) -> None:
    reward = one(tool, reference, "\\boxed{1}")
    assert (reward.score, reward.status) == (None, "invalid_reference")
    assert reward.reason


def test_in_process_scoring_matches_the_pool(tool: MathTool) -> None:
    # One rule (`check_group`) in both places: scores, statuses and reasons are identical.
    samples = [Sample(completion=c, reference=r) for r, c, _ in CASES]
    samples += [Sample(completion="\\boxed{1}", reference=r) for r in (None, "", "\\text{}")]
    samples += [Sample(completion=c, reference="42") for c in ("", "no idea", "\\boxed{}")]
    assert MathTool(workers=0).score(samples) == tool.score(samples)


def test_workers_stamp_rewards_with_the_tools_own_spec() -> None:
    spec = ToolSpec(name="competition_math", version=4, domains=("math",))
    tool = MathTool(spec, workers=1)
    try:
        assert one(tool, "4", "\\boxed{4}").tool == "competition_math@4"
    finally:
        tool.close()


def test_one_reward_per_sample_in_order(tool: MathTool) -> None:
    # A GRPO-like batch: two groups sharing references, repeated completions, a bad sample.
    group_a = ["\\boxed{2}", "\\boxed{3}", "\\boxed{2}", "no idea", "\\boxed{2}"]
    group_b = ["\\boxed{\\frac{1}{2}}", "\\boxed{0.5}", "\\boxed{1}"]
    samples = [Sample(completion=c, reference="2") for c in group_a]
    samples.insert(2, Sample(completion="\\boxed{2}", reference=None))
    samples += [Sample(completion=c, reference="\\frac{1}{2}") for c in group_b]
    rewards = tool.score(samples)
    assert [r.score for r in rewards] == [1.0, 0.0, None, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0]
    assert {r.tool for r in rewards} == {tool.spec.ref}
    assert tool.score([]) == []


def test_each_distinct_reference_and_completion_is_parsed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[str] = []

    def counting_parse(text: str, **kwargs: Any) -> Any:
        calls.append(text)
        return parse(text, **kwargs)

    monkeypatch.setattr(math_tool, "parse", counting_parse)
    math_tool._parse_gold_cached.cache_clear()
    group = ["\\boxed{5}", "\\boxed{6}", "\\boxed{5}", "\\boxed{5}", "\\boxed{6}", "\\boxed{5}"]
    rewards = MathTool(workers=0).score([Sample(completion=c, reference="5") for c in group])
    assert [r.score for r in rewards] == [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]
    assert calls.count("$5$") == 1
    # each distinct completion's answer is parsed once (the box's content alone)
    assert calls.count("5") == 1 and calls.count("6") == 1
    assert len(calls) == 3


def test_extract_and_compare_are_separate_steps() -> None:
    tool = MathTool(workers=0)
    gold = tool.parse_reference("\\frac{1}{2}")
    answer = tool.extract("Halving 1 gives \\boxed{0.5}.")
    assert answer is not None
    assert tool.compare(answer, gold).score == 1.0
    wrong = tool.extract("\\boxed{0.25}")
    assert wrong is not None and tool.compare(wrong, gold).score == 0.0
    assert tool.extract("no numbers here") is None
    with pytest.raises(InvalidReferenceError):
        tool.parse_reference("\\text{}")


def test_megabyte_completion_is_clipped_and_returns(tool: MathTool) -> None:
    # The answer is at the end, so it survives clipping to the last MAX_COMPLETION_CHARS.
    filler = "Let us think step by step. " * (1_000_000 // 27)
    assert len(filler) > 40 * MAX_COMPLETION_CHARS
    assert one(tool, "7", filler + " So \\boxed{7}").score == 1.0


def test_timeout_inside_a_worker_scores_zero() -> None:
    tool = MathTool(workers=1, timeout_seconds=0.5)
    try:
        samples = [
            Sample(completion=NESTED_FRACTION, reference="2"),
            Sample(completion=SLOW_SCAN, reference="2"),
            Sample(completion="\\boxed{2}", reference="2"),
        ]
        tool.score([Sample(completion="\\boxed{1}", reference="1")])  # start the worker
        [pid] = tool.worker_pids()
        first, second, third = tool.score(samples)
        assert (first.score, first.status) == (0.0, "timeout")
        assert "timed out" in first.reason
        assert (second.score, second.status) == (0.0, "timeout")
        assert (third.score, third.status) == (1.0, "ok")
        # The worker's own alarm ended those steps: it was not killed.
        assert tool.worker_pids() == [pid]
    finally:
        tool.close()


def test_in_process_timeout_on_the_main_thread() -> None:
    # workers=0 has a deadline only on the main thread (signals); pytest runs tests there.
    # The input must be slow in a warm process: an earlier in-process parse makes the nested
    # fraction take ~0.3 s, a coin toss at this limit.
    tool = MathTool(workers=0, timeout_seconds=0.3)
    reward = one(tool, "2", SLOW_SCAN)
    assert (reward.score, reward.status) == (0.0, "timeout")


def test_stuck_worker_is_killed_and_the_rest_of_its_chunk_is_scored() -> None:
    # SIGSTOP freezes the worker where its own alarm cannot help (as C code would): only the
    # parent's hard deadline can end the step.
    tool = MathTool(workers=1, timeout_seconds=1.0)
    try:
        tool.score([Sample(completion="\\boxed{1}", reference="1")])  # start the worker
        [stuck_pid] = tool.worker_pids()
        samples = [
            Sample(completion=NESTED_FRACTION, reference="2"),
            Sample(completion="\\boxed{2}", reference="2"),
        ]
        out: list[list[Reward]] = []
        caller = threading.Thread(target=lambda: out.append(tool.score(samples)))
        caller.start()
        caller.join(timeout=0.3)
        os.kill(stuck_pid, signal.SIGSTOP)
        caller.join(timeout=60)
        assert not caller.is_alive(), "score() blocked past its deadline"
        first, second = out[0]
        assert (first.score, first.status) == (0.0, "timeout")
        assert (second.score, second.status) == (1.0, "ok")
        assert stuck_pid not in tool.worker_pids()
        assert one(tool, "3", "\\boxed{3}").score == 1.0  # the replacement works
    finally:
        tool.close()


def test_crashed_worker_scores_its_item_as_error_and_is_replaced() -> None:
    tool = MathTool(workers=1, timeout_seconds=5.0)
    try:
        tool.start()
        # Dies while idle: the next call starts a new worker.
        [idle_pid] = tool.worker_pids()
        os.kill(idle_pid, signal.SIGKILL)
        assert one(tool, "1", "\\boxed{1}").score == 1.0
        # Dies in the middle of an item (as on a segfault or the OOM killer).
        [busy_pid] = tool.worker_pids()
        samples = [
            Sample(completion=NESTED_FRACTION, reference="2"),
            Sample(completion="\\boxed{2}", reference="2"),
        ]
        out: list[list[Reward]] = []
        caller = threading.Thread(target=lambda: out.append(tool.score(samples)))
        caller.start()
        caller.join(timeout=0.3)
        os.kill(busy_pid, signal.SIGKILL)
        caller.join(timeout=60)
        first, second = out[0]
        assert (first.score, first.status) == (0.0, "error")
        assert "died" in first.reason
        assert (second.score, second.status) == (1.0, "ok")
        assert busy_pid not in tool.worker_pids()
    finally:
        tool.close()


def test_score_from_a_non_main_thread(tool: MathTool) -> None:
    samples = [
        Sample(completion="\\boxed{\\frac{2}{4}}", reference="\\frac{1}{2}"),
        Sample(completion="\\boxed{3}", reference="4"),
    ]
    out: dict[int, list[Reward]] = {}

    def run(workers: int, scorer: MathTool) -> None:
        out[workers] = scorer.score(samples)

    for scorer in (tool, MathTool(workers=0)):
        thread = threading.Thread(target=run, args=(scorer.workers, scorer))
        thread.start()
        thread.join(timeout=60)
    assert {w: [r.score for r in rewards] for w, rewards in out.items()} == {
        2: [1.0, 0.0],
        0: [1.0, 0.0],
    }


def test_close_stops_workers_and_next_score_restarts() -> None:
    tool = MathTool(workers=1)
    assert one(tool, "1", "\\boxed{1}").score == 1.0
    [pid] = tool.worker_pids()
    tool.close()
    assert tool.worker_pids() == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert one(tool, "1", "\\boxed{1}").score == 1.0
    tool.close()


def test_pickled_tool_scores_with_its_own_pool(tool: MathTool) -> None:
    one(tool, "1", "\\boxed{1}")
    copy = pickle.loads(pickle.dumps(tool))
    try:
        assert one(copy, "1", "\\boxed{1}").score == 1.0
        assert set(copy.worker_pids()).isdisjoint(tool.worker_pids())
    finally:
        copy.close()


@pytest.mark.parametrize(
    "params",
    [
        {"timeout_seconds": 0},
        {"timeout_seconds": float("nan")},
        {"workers": -1},
        {"workers": 1.5},
        {"timeout_seconds": "5"},
    ],
)
def test_bad_config_raises_at_construction(params: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        MathTool(**params)


def test_registry_builds_the_math_tool() -> None:
    [builtin] = [b for b in BUILTINS if b.spec.name == "math"]
    built = build_tool(builtin.spec, {**builtin.config(), "params": {"workers": 0}})
    assert isinstance(built, MathTool)
    assert one(built, "4", "2 + 2 = \\boxed{4}").tool == builtin.spec.ref


# -- agreement with labelled data (acceptance checks) --


def _equivalence_cases(path: Path) -> list[tuple[str, str, bool]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["gold"], r["pred"], bool(r.get("expected", r.get("result")))) for r in rows]


def _agreement(tool: MathTool, cases: list[tuple[str, str, bool]]) -> tuple[int, int]:
    """(tool agreement, plain `verify(parse(gold), parse(pred))` agreement) with labels."""
    rewards = tool.score([Sample(completion=pred, reference=gold) for gold, pred, _ in cases])
    ours = sum((r.score == 1.0) == label for r, (_, _, label) in zip(rewards, cases, strict=True))
    plain = sum(bool(verify(parse(g), parse(p))) == label for g, p, label in cases)
    return ours, plain


@pytest.mark.parametrize(
    "path",
    [
        FIXTURES / "math_verify_cases_slice.jsonl",
        FIXTURES / "hendrycks_is_equiv_cases.jsonl",
        pytest.param(SHARED / "math_equivalence" / "math_verify_cases.jsonl", marks=needs_shared),
    ],
    ids=lambda p: p.name,
)
def test_agrees_with_labels_at_least_as_often_as_plain_math_verify(
    tool: MathTool, path: Path
) -> None:
    ours, plain = _agreement(tool, _equivalence_cases(path))
    assert ours >= plain


def _qwen_agreement(tool: MathTool, path: Path) -> tuple[int, int]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    samples, labels = [], []
    for row in rows:
        samples += [Sample(completion=c, reference=row["gt"]) for c in row["response"]]
        labels += [bool(s) for s in row["score"]]
    rewards = tool.score(samples)
    return sum((r.score == 1.0) == y for r, y in zip(rewards, labels, strict=True)), len(labels)


def test_qwen_slice_agrees_with_its_labels(tool: MathTool) -> None:
    # One label in the slice is Qwen's grader's mistake: 10000 *is* 10{,}000.
    agree, total = _qwen_agreement(tool, FIXTURES / "qwen25_math_cot_slice.jsonl")
    assert agree >= total - 1


@needs_shared
def test_qwen_100x8_agrees_with_its_labels(tool: MathTool) -> None:
    path = SHARED / "math" / "qwen25_math_cot_100_8samples.jsonl"
    agree, total = _qwen_agreement(tool, path)
    assert agree / total >= 0.995


def test_tool_spec_default() -> None:
    assert MathTool(workers=0).spec == ToolSpec(
        name="math", domains=("math",), reference_format="latex", ref_format="latex"
    )


# Where math-verify is imported: a process that only hands groups to workers (a routed
# `score`) never pays for it; one that scores in process imports it when the tool is built.
IMPORTS = [(2, False), (0, True)]


@pytest.mark.parametrize(("workers", "imported"), IMPORTS)
def test_math_verify_is_imported_where_the_tool_scores(workers: int, imported: bool) -> None:
    code = (
        "import sys; from rewardsmith.tools.math import MathTool; "
        f"MathTool(workers={workers}); print('math_verify' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(imported)
