"""The multi-task testbed's oracle reward: each sample graded by its own task family's rule.

`FamilyOracle` is a `RewardTool` for experiments (the oracle arm of
`bench/rlar_multitask.py`): the final answer is read in any style (`rl.styles`; a hedge has
none) and graded by `rl.families` (reasoning-gym's own scorers for its families). It knows
the tasks it was built for; a sample of another task, or without one, is `not_applicable`.
It is not a library tool: it exists to measure what a perfect reward would do.
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardsmith.rl.families import FAMILIES
from rewardsmith.rl.styles import read_answer
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

ORACLE_SPEC = ToolSpec(
    name="family_oracle",
    description="Each testbed task family's own grader (reasoning-gym scorers included).",
    domains=("testbed",),
    provenance="user",
)


class FamilyOracle(RewardTool):
    """1.0 for a right final answer, 0.0 otherwise, by the sample's task family's rule."""

    def __init__(self, spec: ToolSpec = ORACLE_SPEC) -> None:
        self.spec = spec

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        return [self._one(s) for s in samples]

    def _one(self, sample: Sample) -> Reward:
        family = FAMILIES.get(sample.task or "")
        if family is None:
            why = f"no task family {sample.task!r}: the oracle grades the testbed's families"
            return Reward(None, "not_applicable", tool=self.spec.ref, reason=why)
        if not sample.reference:
            return Reward(None, "invalid_reference", tool=self.spec.ref, reason="no reference")
        read = read_answer(sample.completion, words=family.kind == "word_list")
        if read.answer is None:
            why = "hedged: two candidate answers" if read.hedged else "no answer found"
            return Reward(0.0, tool=self.spec.ref, reason=why)
        right = family.correct(read.answer, sample.reference)
        why = f"{read.answer[:40]!r} {'=' if right else '!='} {sample.reference[:40]!r}"
        return Reward(1.0 if right else 0.0, tool=self.spec.ref, reason=why)
