# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""The 4-stage check for generated reward code: one hostile or broken function per case,
each rejected at the stage that should catch it, with that stage's reason."""

from __future__ import annotations

import pytest
from sandbox_helpers import LIMITS, box, leftover_processes  # noqa: F401

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY, build_tool
from rewardsmith.sandbox import Sandbox, check_reward_code
from rewardsmith.types import Sample, ToolSpec

GOOD = '''
import re

BOUNDS = (0.0, 1.0)


def reward(completions, references=None, prompts=None):
    """1.0 when the last number in the completion equals the reference."""
    scores = []
    for text, ref in zip(completions, references):
        numbers = re.findall(r"-?\\d+", text)
        scores.append(1.0 if ref is not None and numbers and numbers[-1] == ref else 0.0)
    return scores
'''


def body(expr: str) -> str:
    """A reward function whose scores come from `expr` (one per completion)."""
    return f"def reward(completions, **kw):\n    return [{expr} for c in completions]\n"


# (source, stage that must reject it, words its reason must contain)
REJECTED = [
    # stage 1: imports outside the allowlist
    ("import os\n" + body("0.0"), 1, "import of 'os'"),
    ("import ctypes\n" + body("0.0"), 1, "import of 'ctypes'"),
    ("from importlib import import_module\n" + body("0.0"), 1, "importlib"),
    ("import subprocess\n" + body("0.0"), 1, "subprocess"),
    ("from os import path\n" + body("0.0"), 1, "import from 'os'"),
    # stage 1: dunder escapes from a restricted namespace
    (body("len(().__class__.__base__.__subclasses__())"), 1, "__subclasses__"),
    (body("float(reward.__globals__ is None)"), 1, "__globals__"),
    (body("float(__builtins__ is None)"), 1, "__builtins__"),
    (body("float(bool(__import__('os')))"), 1, "__import__"),
    (body("float(getattr(c, '__cl' + 'ass__') is str)"), 1, "getattr"),
    (body("float(bool(vars()))"), 1, "vars"),
    (body("float(type(c) is str)"), 1, "type"),
    # stage 1: code execution and files
    (body("float(eval('1'))"), 1, "eval"),
    (body("float(exec('x = 1') is None)"), 1, "exec"),
    (body("float(len(open('/etc/passwd').read()))"), 1, "open"),
    (body("float(compile('1', 's', 'eval') is None)"), 1, "compile"),
    ("def helper():\n    global x\n" + body("0.0"), 1, "global"),
    ("def score(completions):\n    return [0.0]\n", 1, "def reward"),
    ("def reward(:\n", 1, "syntax error"),
    # stage 2: runs that the process sandbox has to stop
    ("def reward(completions, **kw):\n    while True:\n        pass\n", 2, "timeout"),
    ("x = ' ' * (4 * 1024**3)\n" + body("0.0"), 2, "memory"),
    # stage 3: the restricted namespace refuses what the static check cannot see
    ("x = hasattr(1, 'real')\n" + body("0.0"), 3, "hasattr"),
    ("reward = 1\ndef reward(c):\n    return [0.0]\nreward = 2\n", 3, "reward"),
    # stage 4: probe calls
    (body("float('nan')"), 4, "non-finite"),
    (body("float('inf')"), 4, "non-finite"),
    # `reward` is called once per sample: lists of one completion, one score back
    ("def reward(completions, **kw):\n    return [0.5, 0.5]\n", 4, "2 scores for 1 completion"),
    ("def reward(completions, **kw):\n    return 0.5\n", 4, "expected a list"),
    (body("'high'"), 4, "type str"),
    (body("5.0"), 4, "outside the bounds"),
    # an object's address (its hash) is scattered from run to run: not a function of the sample
    (body("hash(lambda: 0) % 7 / 7"), 4, "not deterministic"),
    ("def reward(completions, **kw):\n    raise ValueError('boom')\n", 4, "boom"),
    (
        "class F(float):\n    pass\n" + body("F(0.5)"),
        4,
        "type F",
    ),
]


@pytest.mark.parametrize(("source", "stage", "words"), REJECTED)
def test_rejected_at_the_right_stage(box: Sandbox, source: str, stage: int, words: str) -> None:
    report = check_reward_code(source, sandbox=box, limits=LIMITS)
    assert not report.admitted
    failed = report.failed_stage
    assert failed is not None and failed.stage == stage, report.reason
    assert words in report.reason, report.reason
    assert report.reason.startswith(f"stage {stage} ({failed.name}): ")
    assert leftover_processes(box.worker_pids()) == []


def test_good_reward_function_is_admitted(box: Sandbox) -> None:
    report = check_reward_code(GOOD, sandbox=box, limits=LIMITS)
    assert report.admitted, report.reason
    assert [s.stage for s in report.stages] == [1, 2, 3, 4]
    assert report.bounds == (0.0, 1.0)
    # The probe batch is drawn fresh from the report's seed: its right answers in plain
    # styles score 1.0, and the same seed draws the same batch again.
    assert 1.0 in report.probe_scores and 0.0 in report.probe_scores
    again = check_reward_code(GOOD, sandbox=box, limits=LIMITS, seed=report.seed)
    assert again.probe_scores == report.probe_scores


def test_bounds_argument_when_the_code_declares_none(box: Sandbox) -> None:
    source = body("2.0")
    assert not check_reward_code(source, sandbox=box, limits=LIMITS).admitted
    assert check_reward_code(source, bounds=(0.0, 2.0), sandbox=box, limits=LIMITS).admitted


def test_reward_function_tool_scores_batches_in_the_sandbox() -> None:
    spec = ToolSpec(name="last_number", kind="code", provenance="search")
    tool = build_tool(spec, {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": GOOD}})
    try:
        samples = [
            Sample(completion="so it is 12", reference="12"),
            Sample(completion="maybe 7", reference="8"),
            Sample(completion="", reference=None),
        ]
        rewards = tool.score(samples)
    finally:
        tool.close()
    assert [r.score for r in rewards] == [1.0, 0.0, 0.0]
    assert all(r.status == "ok" and r.tool == "last_number@1" for r in rewards)


def test_reward_function_tool_scores_full_chunks_whole() -> None:
    # A chunk of 64 scores is a long result record: it must come back whole, not clipped.
    source = "BOUNDS = (0.0, 10.0)\n" + body("len(c) / 1000.0 + 1 / 3000.0")
    spec = ToolSpec(name="length_fn", kind="code", provenance="search")
    tool = build_tool(spec, {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": source}})
    try:
        samples = [Sample(completion="x" * n) for n in range(150)]
        rewards = tool.score(samples)
    finally:
        tool.close()
    assert [r.score for r in rewards] == [n / 1000.0 + 1 / 3000.0 for n in range(150)]
    assert {r.status for r in rewards} == {"ok"}


def test_reward_function_tool_refuses_code_that_is_not_admitted() -> None:
    spec = ToolSpec(name="bad", kind="code", provenance="search")
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": "import os\n" + GOOD}}
    with pytest.raises(ConfigError, match=r"stage 1 \(static\): .*import of 'os'"):
        build_tool(spec, config)
