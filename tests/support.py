"""Constants and helper tools shared by tests (imported as `support`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


class EchoLengthTool(RewardTool):
    """A test tool: score = len(completion) / 10, 'not_applicable' for empty completions."""

    def __init__(self, name: str = "echo_length") -> None:
        self.spec = ToolSpec(name=name, needs_reference=False, provenance="user")
        self.calls = 0

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        self.calls += 1
        return [
            Reward(len(s.completion) / 10, tool=self.spec.ref)
            if s.completion
            else Reward(None, "not_applicable", tool=self.spec.ref)
            for s in samples
        ]


# The tool each task of examples/mixed.jsonl should be scored with.
EXPECTED_TOOL = {
    "gsm8k": "gsm8k",
    "math500": "math",
    "format": "format_tags",
    "multiple_choice": "multiple_choice",
    "translation": "translation",
    "rg_basic_arithmetic": "reasoning_gym",
    "rg_letter_counting": "reasoning_gym",
    "word_reversal": "synthesize",  # no built-in grades it: `make run` synthesizes its tool
}
