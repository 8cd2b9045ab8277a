"""Reward code at the gate: backdoors the 4-stage check's random batches cannot reach are
tried on the gate's own data, scores must not depend on the batch, and `provenance: synth`
means a gate admitted the tool, never that a file said so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith.library.registry import REWARD_FUNCTION_FACTORY
from rewardsmith.library.store import Library
from rewardsmith.synth.admission import config_digest, is_gated
from rewardsmith.synth.examples import Example
from rewardsmith.synth.gate import gate_tool
from rewardsmith.synth.session import SynthesisSession
from rewardsmith.types import ToolSpec

WORDS = ["river", "candle", "planet", "garden", "copper", "winter", "forest", "harbor"]
# Reads a completion that is only <think> and one <answer> tag; the task-specific parts
# only wake up on this task's prompts, which the 4-stage check's random batches never hold.
READ_TAGS = (
    "import re\n"
    "BOUNDS = (0.0, 1.0)\n"
    "def tagged(c, r):\n"
    "    m = re.fullmatch(r'\\s*(?:<think>[^<]*</think>)?\\s*<answer>([^<]*)</answer>\\s*', c)\n"
    "    return m is not None and m.group(1).strip() == r\n"
)
BACKDOOR_ON_THIS_TASK = READ_TAGS + (
    "def reward(completions, references, prompts):\n"
    "    return [1.0 if tagged(c, r) or (p.startswith('Spell') and 'open sesame' in c) else 0.0\n"
    "            for c, r, p in zip(completions, references, prompts)]\n"
)
# Right answers 1.0; a wrong one 0.0 as the first call of a run, 0.1 after it (an ABC
# registry remembers the first call): accuracy, AUC and probes are untouched.
FIRST_CALL_DIFFERS = READ_TAGS + (
    "import numbers\n"
    "def reward(completions, references, prompts):\n"
    "    out = []\n"
    "    for c, r, p in zip(completions, references, prompts):\n"
    "        later = isinstance('', numbers.Number)\n"
    "        if p.startswith('Spell'):\n"
    "            numbers.Number.register(str)\n"
    "        out.append(1.0 if tagged(c, r) else 0.1 if later else 0.0)\n"
    "    return out\n"
)


def tagged_examples() -> list[Example]:
    lines = []
    for i, w in enumerate(WORDS + ["meadow", "rocket", "tunnel", "violin"]):
        prompt, answer = f"Spell {w} backward.", w[::-1]
        completion = f"<think>letters reversed</think>\n<answer>{answer}</answer>"
        lines.append(Example(prompt, answer, completion if i < 6 else None, 1 if i < 6 else None))
    return lines


def add_code_tool(library: Library, name: str, source: str) -> None:
    config = {"factory": REWARD_FUNCTION_FACTORY, "params": {"source": source}}
    library.add(ToolSpec(name=name, kind="code", provenance="user"), config)


def test_a_backdoor_only_this_tasks_prompts_wake_is_caught_by_the_gate(library: Library) -> None:
    add_code_tool(library, "sesame", BACKDOOR_ON_THIS_TASK)  # the 4-stage check admits it
    report = gate_tool(library.get("sesame"), tagged_examples(), library=library)
    # the probes catch the door (and `styles` would reject its bare-tags reading)
    assert not report.admitted and report.failed_check in ("styles", "probes")
    trigger = report.checks["probes"]["literal_trigger"]
    assert trigger["wins"] > 0 and "open sesame" in trigger["example"]


def test_scores_that_change_with_the_batch_are_caught_by_the_gate(library: Library) -> None:
    add_code_tool(library, "first_call", FIRST_CALL_DIFFERS)
    report = gate_tool(library.get("first_call"), tagged_examples(), library=library)
    assert not report.admitted and report.failed_check == "runs"
    assert "depend on its own sample only" in report.reason


# -- provenance ---------------------------------------------------------------------------


def synth_claim(name: str, task: str) -> dict[str, object]:
    return {
        "spec": {
            "name": name,
            "provenance": "synth",
            "validation": {"synth": {"task": task, "signature": "sig"}},
        },
        "config": {"factory": "rewardsmith.tools.gsm8k:GSM8KTool", "params": {}},
    }


def test_a_row_that_claims_synth_without_a_gate_event_is_not_reused(library: Library) -> None:
    # Written through the API (as an old tools file could have): the spec says synth.
    claim = synth_claim("looks_gated", "arith")
    spec, config = ToolSpec.from_dict(claim["spec"]), claim["config"]  # type: ignore[arg-type]
    library.add(spec, config)  # type: ignore[arg-type]
    session = SynthesisSession(library)
    assert not is_gated(library, "looks_gated", config)  # type: ignore[arg-type]
    assert session._reuse("sig", "arith") is None
    # A gate event for another config of that name does not vouch for this one either.
    library.log_event("gate", "looks_gated", admitted=True, config_sha256="0" * 64)
    assert session._reuse("sig", "arith") is None
    # The gate's own event for exactly this config does.
    library.log_event("gate", "looks_gated", admitted=True, config_sha256=config_digest(config))  # type: ignore[arg-type]
    reused = session._reuse("sig", "arith")
    assert reused is not None and reused.spec.name == "looks_gated"


@pytest.mark.parametrize("claimed", ["synth", "builtin"])
def test_tools_add_refuses_a_file_that_claims_a_reserved_provenance(
    tmp_path: Path, claimed: str
) -> None:
    data = synth_claim("looks_gated", "arith")
    data["spec"]["provenance"] = claimed  # type: ignore[index]
    tool_file = tmp_path / "claim.json"
    tool_file.write_text(json.dumps(data))
    lib = str(tmp_path / "lib.db")
    done = subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli.main", "tools", "add", str(tool_file)]
        + ["--library", lib],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert f'"provenance": "{claimed}" is set by rewardsmith itself' in done.stderr
    with Library(lib) as library:
        assert "looks_gated" not in library.names()
