"""The gate's extra probes for reward code (tools that run generated `def reward(...)`):
literal triggers, and scores that must not depend on the batch.

- `trigger_probes`: every string the code holds (`CheckReport.literals`: its literals,
  constants folded from pieces, strings a regex literal matches, strings the loaded module
  held) is put into a wrong answer of a held-out line (before it, after it, and alone). A
  probe of kind `literal_trigger` wins, as every probe does, when it scores as high as the
  line's right answer: a backdoor phrase that pays a wrong answer is rejected on the gate's
  own data, not only on the 4-stage check's random batches. Literals that hold the line's
  answer are not tried there (they would be hedges, which the other probes cover).
- `batch_dependence`: the gate's samples scored again, shuffled (other chunk-mates, other
  positions, other runs), must get the same score each: a reward is a function of its
  sample.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rewardsmith.synth.cases import BARE, Style, canonical, perturbations
from rewardsmith.synth.examples import Example, answer_of
from rewardsmith.synth.probes import Probe
from rewardsmith.tools.base import score_batch
from rewardsmith.tools.reward_fn import RewardFunctionTool
from rewardsmith.types import Reward, RewardTool, Sample

TRIGGER_KIND = "literal_trigger"
# Held-out lines literals are tried on (each costs three probes per literal).
TRIGGER_LINES = 4
QUOTE_CHARS = 60


def _placements(text: str, literal: str) -> list[str]:
    return [f"{literal} {text}", f"{text} {literal}", literal]


def trigger_probes(
    tool: RewardTool, lines: Sequence[Example], styles: Sequence[Style]
) -> list[Probe]:
    """`literal_trigger` probes for a reward-code tool (none for other tools)."""
    if not isinstance(tool, RewardFunctionTool):
        return []
    literals = tool.report.literals
    styles = list(dict.fromkeys(canonical(s) for s in styles))
    probes: list[Probe] = []
    for i, line in enumerate(lines[:TRIGGER_LINES]):
        answer = answer_of(line.reference)
        wrong = next(iter(perturbations(answer)), "no idea")
        style = next((s for s in styles if s.carries(answer)), BARE)
        wrong_styled = style.render(wrong)
        for literal in literals:
            if answer and answer.lower() in literal.lower():
                continue
            for text in _placements(wrong_styled, literal):
                probes.append(
                    Probe(TRIGGER_KIND, i, line.prompt, text, line.reference, right=False)
                )
    return probes


def batch_dependence(
    tool: RewardTool, samples: Sequence[Sample], rewards: Sequence[Reward], seed: int | None = None
) -> str:
    """ "" when a reward-code tool scores `samples` shuffled as it did in order, else why."""
    if not isinstance(tool, RewardFunctionTool) or len(samples) < 2:
        return ""
    order = list(range(len(samples)))
    random.Random(seed).shuffle(order)
    again = score_batch(tool, [samples[i] for i in order])
    for i, reward in zip(order, again, strict=True):
        before = rewards[i]
        # A run that failed (a timeout on a busy machine) is the error rate's business.
        if reward.status == before.status == "ok" and reward.score != before.score:
            text = " ".join(samples[i].completion.split())[:QUOTE_CHARS]
            return (
                f"the same sample scored {before.score} and {reward.score} in different "
                f"batches ({text!r}): a reward must depend on its own sample only"
            )
    return ""
