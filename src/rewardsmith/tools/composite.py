"""Combine reward tools: weighted sums and gates ("format x correctness").

A composite names its parts by tool name; the library resolves them when it builds the
composite (`uses_other_tools = True`, see `library/registry.py`). Each part scores the whole
batch once, then the composite combines the parts sample by sample.

Modes (`"sum"`, `"gate"`) and how a part that does not return `ok` counts are the one rule
of `rewardsmith.combine`, shared with router decisions that name several tools and with
GRPO reward sets. `components` holds every part's score under the part's tool name and every
part's own components as `"part.component"`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from rewardsmith.combine import MODES, Mode, Weighted, combine
from rewardsmith.errors import ConfigError
from rewardsmith.tools.base import score_batch
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec

log = logging.getLogger(__name__)

PART_KEYS = frozenset({"tool", "weight", "gate"})


@dataclass(frozen=True)
class Part:
    """One part of a composite: a built tool, its weight and whether it gates."""

    name: str
    tool: RewardTool
    weight: float = 1.0
    gate: bool = False


class CompositeTool(RewardTool):
    """Weighted sum or gated sum of other tools' scores (see the module docstring).

    `label` is what its rewards carry as `tool` (default: the spec's `name@version`); the
    scorer labels the composite of a multi-tool router decision `a@1+b@1`.
    """

    uses_other_tools = True

    def __init__(
        self,
        spec: ToolSpec,
        parts: Sequence[Mapping[str, Any]],
        resolve: Callable[[str], RewardTool],
        mode: str = "sum",
        gate_threshold: float = 1.0,
        label: str | None = None,
    ) -> None:
        self.spec = spec
        self.label = label or spec.ref
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
        self._weighted = [Weighted(p.name, p.weight, p.gate) for p in self.parts]

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        per_part = [score_batch(part.tool, samples) for part in self.parts]
        return [self._combine([rewards[i] for rewards in per_part]) for i in range(len(samples))]

    def _combine(self, rewards: Sequence[Reward]) -> Reward:
        result = combine(self._weighted, rewards, self.mode, self.gate_threshold)
        return Reward(result.score, result.status, result.components, self.label, result.reason)


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
