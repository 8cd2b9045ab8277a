"""Combine reward tools: weighted sums and gates ("format x correctness").

A composite names its parts by tool name; the library resolves them when it builds the
composite (`uses_other_tools = True`, see `library/registry.py`). Each part scores the whole
batch once, then the composite combines the parts sample by sample.

Modes:

- `"sum"`: score = sum_i w_i * s_i over the parts. Weights are not normalized: give weights
  that sum to 1 to keep the score in [0, 1]; negative weights or parts (length penalties)
  are allowed.
- `"gate"`: score = prod_g [s_g >= gate_threshold] * sum_i w_i * s_i, the product over the
  parts marked `"gate": true` and the sum over the others. The gate is hard (0 or 1, not
  s_g itself), so partial format credit never leaks into the correctness score: a correct
  answer counts only in the right format (DeepSeek-R1-style format rewards, DAPO's
  "correct and well-formed"). The weight of a gate part is not used.

Statuses, per sample, when a part does not return `ok`:

- `not_applicable`: the part is left out (a gate that does not apply does not block). When
  no scoring part applies (no part in "sum", no non-gate part in "gate"), the composite is
  `not_applicable` with score None.
- `invalid_reference`: the composite is `invalid_reference` with score None: a part that
  needs the reference cannot judge the sample, so any number would be made up.
- `timeout` / `error`: the part counts as 0 (a failing gate blocks), and the composite takes
  the worst such status (`error` before `timeout`), so metrics still count the failure.

`components` holds every part's score under the part's tool name and every part's own
components as `"part.component"`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from rewardsmith.errors import ConfigError
from rewardsmith.tools.base import make_reward
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

log = logging.getLogger(__name__)

Mode = Literal["sum", "gate"]
MODES: tuple[Mode, ...] = ("sum", "gate")
PART_KEYS = frozenset({"tool", "weight", "gate"})

# A part's reason is clipped inside the composite's reason: the summary stays one short line.
PART_REASON_CHARS = 60

# Worst first: the composite reports the first of these that any part reports.
_FAILURE_ORDER: tuple[Status, ...] = ("error", "timeout")


@dataclass(frozen=True)
class Part:
    """One part of a composite: a built tool, its weight and whether it gates."""

    name: str
    tool: RewardTool
    weight: float = 1.0
    gate: bool = False


class CompositeTool(RewardTool):
    """Weighted sum or gated sum of other tools' scores (see the module docstring)."""

    uses_other_tools = True

    def __init__(
        self,
        spec: ToolSpec,
        parts: Sequence[Mapping[str, Any]],
        resolve: Callable[[str], RewardTool],
        mode: str = "sum",
        gate_threshold: float = 1.0,
    ) -> None:
        self.spec = spec
        if mode not in MODES:
            raise ConfigError(
                f"composite {spec.name!r}: unknown mode {mode!r}; expected one of {MODES}"
            )
        self.mode = cast(Mode, mode)
        self.gate_threshold = _number(spec.name, "gate_threshold", gate_threshold)
        self.parts = [
            _parse_part(spec.name, i, raw, resolve) for i, raw in enumerate(_seq(spec.name, parts))
        ]
        _check_parts(spec.name, self.mode, self.parts)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        per_part = [self._score_part(part, samples) for part in self.parts]
        return [self._combine([rewards[i] for rewards in per_part]) for i in range(len(samples))]

    def _score_part(self, part: Part, samples: Sequence[Sample]) -> list[Reward]:
        # A broken part is a bug in that tool; the composite still answers every sample.
        try:
            rewards = list(part.tool.score(samples))
            if len(rewards) != len(samples):
                raise RuntimeError(f"returned {len(rewards)} rewards for {len(samples)} samples")
        except Exception as exc:
            log.warning("%s: part %s failed on a batch: %s", self.spec.ref, part.name, exc)
            failed = make_reward(
                part.tool.spec, 0.0, "error", reason=f"{type(exc).__name__}: {exc}"
            )
            return [failed] * len(samples)
        return rewards

    def _combine(self, rewards: Sequence[Reward]) -> Reward:
        components: dict[str, float] = {}
        notes: list[str] = []
        gate_open = True
        total = 0.0
        applied = 0
        invalid: list[str] = []
        failures: list[Status] = []
        for part, reward in zip(self.parts, rewards, strict=True):
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
                if value < self.gate_threshold:
                    gate_open = False
            else:
                total += part.weight * value
                applied += 1
        summary = "; ".join(notes)
        if invalid:
            return make_reward(
                self.spec,
                None,
                "invalid_reference",
                components=components,
                reason=f"invalid reference for {', '.join(invalid)}: {summary}",
            )
        if applied == 0:
            return make_reward(
                self.spec,
                None,
                "not_applicable",
                components=components,
                reason=f"no scoring part applies: {summary}",
            )
        status: Status = next((s for s in _FAILURE_ORDER if s in failures), "ok")
        if self.mode == "gate":
            score = total if gate_open else 0.0
            summary = f"gate {'passed' if gate_open else 'failed'}: {summary}"
        else:
            score = total
        return make_reward(self.spec, score, status, components=components, reason=summary)


def _clip(text: str) -> str:
    return text if len(text) <= PART_REASON_CHARS else text[: PART_REASON_CHARS - 3] + "..."


def _number(name: str, field: str, value: Any) -> float:
    # bool is an int in Python, but `weight: true` is a typo, not a weight of 1.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"composite {name!r}: {field} must be a finite number, got {value!r}")
    return float(value)


def _seq(name: str, parts: Any) -> Sequence[Any]:
    if isinstance(parts, str | bytes) or not isinstance(parts, Sequence) or not parts:
        raise ConfigError(
            f"composite {name!r}: 'parts' must be a non-empty list of "
            '{"tool": NAME, "weight": W, "gate": BOOL}'
        )
    return parts


def _parse_part(name: str, index: int, raw: Any, resolve: Callable[[str], RewardTool]) -> Part:
    where = f"composite {name!r}, part {index}"
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object like {{'tool': NAME}}, got {raw!r}")
    unknown = set(raw) - PART_KEYS
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(PART_KEYS)}")
    tool_name = raw.get("tool")
    if not isinstance(tool_name, str) or not tool_name:
        raise ConfigError(f"{where}: 'tool' must be a tool name, got {tool_name!r}")
    weight = _number(name, f"part {tool_name!r} weight", raw.get("weight", 1.0))
    gate = raw.get("gate", False)
    if not isinstance(gate, bool):
        raise ConfigError(f"{where}: 'gate' must be true or false, got {gate!r}")
    try:
        tool = resolve(tool_name)
    except ConfigError:
        raise
    except Exception as exc:  # UnknownToolError (a KeyError) or a part that fails to build
        raise ConfigError(f"{where}: cannot resolve tool {tool_name!r}: {exc}") from exc
    return Part(name=tool_name, tool=tool, weight=weight, gate=gate)


def _check_parts(name: str, mode: Mode, parts: Sequence[Part]) -> None:
    names = [p.name for p in parts]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(
            f"composite {name!r}: parts {duplicates} appear twice; each part's score is keyed "
            "by its tool name, so give one entry per tool and set its weight"
        )
    gates = sum(p.gate for p in parts)
    if mode == "sum" and gates:
        raise ConfigError(f"composite {name!r}: 'gate' parts need mode 'gate', not 'sum'")
    if mode == "gate" and gates == 0:
        raise ConfigError(
            f"composite {name!r}: mode 'gate' needs at least one part with gate: true"
        )
    if mode == "gate" and gates == len(parts):
        raise ConfigError(
            f"composite {name!r}: mode 'gate' needs at least one non-gate part to score; "
            "every part is a gate"
        )
