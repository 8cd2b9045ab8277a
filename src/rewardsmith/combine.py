"""The one rule for combining weighted rewards of several parts into one reward per sample.

Used by composite tools (`tools/composite.py`), by router decisions that name several tools
(the scorer builds a composite for them) and by GRPO reward sets (`rl/rewards.py`), so a
failed part is treated the same way wherever parts are combined.

Modes:

- `"sum"`: score = sum_i w_i * s_i over the parts. Weights are not normalized; negative
  weights or parts (length penalties) are allowed.
- `"gate"`: score = prod_g [s_g >= gate_threshold] * sum_i w_i * s_i, the product over the
  parts marked `gate` and the sum over the others. The gate is hard (0 or 1, not s_g itself),
  so partial format credit never leaks into the correctness score (DeepSeek-R1-style format
  rewards, DAPO's "correct and well-formed"). The weight of a gate part is not used.

A part that does not return `ok`:

- `not_applicable`: left out (a gate that does not apply does not block). When no scoring
  part applies (no part in "sum", no non-gate part in "gate"), the result is
  `not_applicable` with score None.
- `invalid_reference`: the result is `invalid_reference` with score None: a part that needs
  the reference cannot judge the sample, so any number would be made up.
- `timeout` / `error`: the part counts as 0 (a failing gate blocks), and the result takes the
  worst such status (`error` before `timeout`), so metrics still count the failure.

`components` holds every part's score under the part's name and every part's own components
as `"part.component"`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rewardsmith.types import Reward, Status

Mode = Literal["sum", "gate"]
MODES: tuple[Mode, ...] = ("sum", "gate")

# A part's reason is clipped inside the combined reason: the summary stays one short line.
PART_REASON_CHARS = 60
# Worst first: the result reports the first of these that any part reports.
FAILURE_ORDER: tuple[Status, ...] = ("error", "timeout")


@dataclass(frozen=True)
class Weighted:
    """How one part counts: its name (the key of its components), weight, and whether it gates."""

    name: str
    weight: float = 1.0
    gate: bool = False


@dataclass(frozen=True)
class Combined:
    """The combined score (None when not applicable or the reference is invalid), its status,
    every part's score and components, and a one-line summary."""

    score: float | None
    status: Status
    components: dict[str, float] = field(default_factory=dict)
    reason: str = ""


def combine(
    parts: Sequence[Weighted],
    rewards: Sequence[Reward],
    mode: Mode = "sum",
    gate_threshold: float = 1.0,
) -> Combined:
    """Combine one sample's part rewards (in the order of `parts`); see the module docstring."""
    if len(parts) != len(rewards):
        raise ValueError(f"{len(rewards)} rewards for {len(parts)} parts")
    components: dict[str, float] = {}
    notes: list[str] = []
    gate_open = True
    total = 0.0
    applied = 0
    invalid: list[str] = []
    failures: list[Status] = []
    for part, reward in zip(parts, rewards, strict=True):
        if reward.score is not None:
            components[part.name] = reward.score
        for key, value in reward.components.items():
            components[f"{part.name}.{key}"] = value
        if reward.status == "not_applicable":
            notes.append(f"{part.name} n/a")
            continue
        if reward.status == "invalid_reference":
            invalid.append(part.name)
            notes.append(f"{part.name} invalid_reference ({_clip(reward.reason)})")
            continue
        value = reward.score if reward.status == "ok" and reward.score is not None else 0.0
        if reward.status != "ok":
            failures.append(reward.status)
            notes.append(f"{part.name} {reward.status} ({_clip(reward.reason)})")
        else:
            notes.append(f"{part.name}={value:.3g}")
        if part.gate:
            gate_open = gate_open and value >= gate_threshold
        else:
            total += part.weight * value
            applied += 1
    summary = "; ".join(notes)
    if invalid:
        reason = f"invalid reference for {', '.join(invalid)}: {summary}"
        return Combined(None, "invalid_reference", components, reason)
    if applied == 0:
        return Combined(None, "not_applicable", components, f"no scoring part applies: {summary}")
    status: Status = next((s for s in FAILURE_ORDER if s in failures), "ok")
    if mode == "gate":
        summary = f"gate {'passed' if gate_open else 'failed'}: {summary}"
        return Combined(total if gate_open else 0.0, status, components, summary)
    return Combined(total, status, components, summary)


def component_means(rewards: Iterable[Reward]) -> dict[str, float]:
    """Mean of each component over the rewards that report it (for training metrics)."""
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for reward in rewards:
        for key, value in reward.components.items():
            sums[key] += float(value)
            counts[key] += 1
    return {key: sums[key] / counts[key] for key in sorted(sums)}


def _clip(text: str) -> str:
    return text if len(text) <= PART_REASON_CHARS else text[: PART_REASON_CHARS - 3] + "..."
