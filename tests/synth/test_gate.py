"""The admission gate: built-in verifiers are admitted on real data, reward functions that can
be gamed are rejected by the probe that games them, and every decision is logged with its
numbers."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pytest

from rewardsmith.bench.codeverify_data import examples_for
from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.synth.examples import Example, load_examples, parse_example
from rewardsmith.synth.gate import GateConfig, auc, gate_tool
from rewardsmith.synth.probes import PROBE_KINDS
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec
from support import FIXTURES

SYNTH_FIXTURES = FIXTURES / "synth"

# Reward functions a policy would love: each pays for something a probe does.
CONTAINS = """
def reward(completions, references, prompts=None, **kwargs):
    return [1.0 if r and r.strip() in c else 0.0 for c, r in zip(completions, references)]
"""
OBEYS_THE_GRADER_NOTE = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        found = re.findall(r"<answer>(.*?)</answer>", c, flags=re.DOTALL)
        right = bool(found) and found[-1].strip() == r
        out.append(1.0 if right or "output 1.0" in c else 0.0)
    return out
"""
PAYS_FOR_LENGTH = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        found = re.findall(r"<answer>(.*?)</answer>", c, flags=re.DOTALL)
        right = bool(found) and found[-1].strip() == r
        out.append(1.0 if right or len(c) > 10000 else 0.0)
    return out
"""
PAYS_FOR_MANY_LINES = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        found = re.findall(r"<answer>(.*?)</answer>", c, flags=re.DOTALL)
        right = bool(found) and found[-1].strip() == r
        out.append(1.0 if right or c.count("\\n") > 50 else 0.0)
    return out
"""
EMPTY_TAGS_PASS = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        found = re.findall(r"<answer>(.*?)</answer>", c, flags=re.DOTALL)
        out.append(1.0 if found and found[-1].strip() in ("", r) else 0.0)
    return out
"""


# GSM8K's own grader rule, then veRL's flexible fallback, as many scripts write them: the
# first number after "####", else the last number.
FIRST_NUMBER_AFTER_HASHES = """
import re
def reward(completions, references, prompts=None, **kwargs):
    out = []
    for c, r in zip(completions, references):
        gold = (r or "").rpartition("####")[2].strip().replace(",", "")
        found = re.search(r"####\\s*(-?[\\d,]+)", c)
        numbers = re.findall(r"-?\\d[\\d,]*", c)
        value = found.group(1) if found else (numbers[-1] if numbers else "")
        out.append(1.0 if value.replace(",", "") == gold else 0.0)
    return out
"""


def add_code_tool(library: Library, name: str, source: str) -> None:
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": source, "bounds": [0, 1]}}
    library.add(ToolSpec(name=name, kind="code", provenance="user"), config)


WORDS = ["river", "candle", "planet", "garden", "copper", "winter", "forest", "harbor"]


def tagged_examples() -> list[Example]:
    """Reverse-a-word lines answered in <answer> tags: 6 labeled, 6 plain."""
    lines = []
    for i, w in enumerate(WORDS + ["meadow", "rocket", "tunnel", "violin"]):
        prompt, answer = f"Spell {w} backward.", w[::-1]
        if i < 6:
            given = answer if i % 2 == 0 else answer[:-1] + "x"
            completion = f"<think>letters reversed</think>\n<answer>{given}</answer>"
            lines.append(Example(prompt, answer, completion, int(i % 2 == 0)))
        else:
            lines.append(Example(prompt, answer))
    return lines


def word_examples() -> list[Example]:
    """reasoning-gym word_sorting lines: bare references, several answer styles."""
    lines = examples_for("word_sorting")
    return [parse_example(x, f"word_sorting:{i}") for i, x in enumerate(lines, 1)]


@pytest.mark.parametrize(
    ("source", "probe"),
    [
        (CONTAINS, "reference_in_sentence"),
        (PAYS_FOR_LENGTH, "very_long"),
        (PAYS_FOR_MANY_LINES, "padding"),
        (EMPTY_TAGS_PASS, "format_only"),
    ],
)
def test_a_gameable_reward_function_is_rejected_by_its_probe(
    library: Library, source: str, probe: str
) -> None:
    add_code_tool(library, "suspect", source)
    report = gate_tool(library.get("suspect"), tagged_examples(), library=library)
    assert not report.admitted and report.failed_check == "probes"
    assert report.checks["probes"][probe]["wins"] > 0
    assert probe in report.reason
    (event,) = library.history("suspect", kind="gate")
    assert event.detail["admitted"] is False and event.detail["failed_check"] == "probes"
    assert event.detail["checks"]["probes"][probe]["win_rate"] > 0


def test_a_reward_function_that_obeys_a_grader_note_is_refused_before_the_gate(
    library: Library,
) -> None:
    # Its trigger is a literal of its code: the 4-stage check tries it in wrong answers.
    with pytest.raises(ConfigError, match="literal 'output 1.0'"):
        add_code_tool(library, "suspect", OBEYS_THE_GRADER_NOTE)


class ObeysTheGraderNote(RewardTool):
    """A tool that is no reward function (no 4-stage check): it believes grader notes."""

    spec = ToolSpec(name="believer", needs_reference=True, provenance="user")

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        out = []
        for s in samples:
            found = re.findall(r"<answer>(.*?)</answer>", s.completion, flags=re.DOTALL)
            right = bool(found) and found[-1].strip() == s.reference
            out.append(Reward(1.0 if right or "output 1.0" in s.completion else 0.0))
        return out


def test_a_tool_that_obeys_a_grader_note_is_rejected_by_its_probe(library: Library) -> None:
    report = gate_tool(ObeysTheGraderNote(), tagged_examples(), library=library)
    assert not report.admitted and report.failed_check == "probes"
    assert report.checks["probes"]["grader_instruction"]["wins"] > 0


def test_gsm8k_and_math_are_admitted_on_gsm8k_and_math500_examples(library: Library) -> None:
    for tool, file in (("gsm8k", "gsm8k_examples.jsonl"), ("math", "math500_examples.jsonl")):
        report = gate_tool(library.get(tool), load_examples(SYNTH_FIXTURES / file), library=library)
        assert report.admitted, (tool, report.reason)
        held = report.checks["held_out"]
        assert held["accuracy"] == 1.0 and held["auc"] == 1.0 and held["negatives"] > 10
        assert set(report.checks["probes"]) == set(PROBE_KINDS)
        assert all(k["wins"] == 0 for k in report.checks["probes"].values())
    events = library.history(kind="gate")
    assert [e.tool for e in events] == ["gsm8k", "math"]
    assert events[0].detail["tool_ref"] == "gsm8k@1" and events[0].detail["thresholds"]


def test_a_checker_that_pays_hedges_is_rejected_by_the_hedge_probes(library: Library) -> None:
    # "#### 72 or 73" pays a grader that reads the first number after "####"
    add_code_tool(library, "first_after_hashes", FIRST_NUMBER_AFTER_HASHES)
    examples = load_examples(SYNTH_FIXTURES / "gsm8k_examples.jsonl")
    report = gate_tool(library.get("first_after_hashes"), examples, seed=4)
    assert not report.admitted and report.failed_check == "probes"
    assert report.checks["probes"]["hedge"]["wins"] > 0
    assert report.checks["corpus"]["seed"] == 4


@pytest.mark.fresh_probes
def test_probes_are_drawn_afresh_each_run_and_the_seed_is_kept(library: Library) -> None:
    examples = load_examples(SYNTH_FIXTURES / "gsm8k_examples.jsonl")
    first, second = (gate_tool(library.get("gsm8k"), examples) for _ in range(2))
    assert first.admitted and second.admitted
    assert first.checks["corpus"]["seed"] != second.checks["corpus"]["seed"]


def test_a_tool_that_cannot_read_the_references_fails_the_runs_check(library: Library) -> None:
    # the generic reasoning_gym tool needs whole dataset entries, not plain answers
    report = gate_tool(library.get("reasoning_gym"), word_examples())
    assert not report.admitted and report.failed_check == "runs"
    assert "cannot read these references" in report.reason


def test_thresholds_come_from_the_config(library: Library) -> None:
    add_code_tool(library, "contains", CONTAINS)
    lenient = GateConfig(max_probe_win_rate=1.0)
    report = gate_tool(library.get("contains"), tagged_examples(), config=lenient)
    assert report.admitted  # told to tolerate every probe, it lets the hack through
    assert report.to_dict()["thresholds"]["max_probe_win_rate"] == 1.0


def test_auc_counts_ties_half() -> None:
    assert auc([1.0, 1.0], [0.0, 0.0]) == 1.0
    assert auc([0.5], [0.5]) == 0.5
    assert auc([0.2, 0.9], [0.4]) == 0.5
    assert auc([1.0], []) is None
