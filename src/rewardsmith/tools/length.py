"""Length penalties: rewards <= 0 that discourage overlong or verbose completions.

`OverlongPenaltyTool` is DAPO's soft overlong punishment (Yu et al. 2025, "DAPO: An
Open-Source LLM Reinforcement Learning System at Scale", Eq. 13), with L_max = `max_length`
and L_cache = `cache_length`:

    R(L) = 0                                  if L <= L_max - L_cache
         = ((L_max - L_cache) - L) / L_cache  if L_max - L_cache < L <= L_max
         = -1                                 if L > L_max

`LengthPenaltyTool` penalizes verbosity relative to the reference (a target answer), with
r = L / L_ref and m = `max_ratio`:

    R(L) = 0                      if r <= m
         = max(-1, -(r - m) / m)  otherwise   (-1 from r = 2m on)

Length L is counted in words (whitespace-separated), characters, or tokens of a local
Hugging Face tokenizer. Both tools measure the whole completion (not the clipped tail that
answer verifiers see): an empty completion has length 0 and no penalty, so extraction never
"fails" and no completion scores "no answer".
"""

from __future__ import annotations

import logging
import math
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InvalidReferenceError, MissingDependencyError
from rewardsmith.tools.base import AnswerVerifier, Verdict
from rewardsmith.types import ToolSpec

log = logging.getLogger(__name__)

UNITS = ("words", "chars", "tokens")


class _Counter:
    """Counts length in one unit; the tokenizer is loaded on first use, never pickled."""

    def __init__(self, unit: str, tokenizer: str | None) -> None:
        if unit not in UNITS:
            raise ConfigError(f"length unit must be one of {UNITS}, got {unit!r}")
        if unit == "tokens":
            if not tokenizer:
                raise ConfigError(
                    "unit='tokens' needs tokenizer=<path of a local Hugging Face tokenizer "
                    "directory>; or use unit='words' / 'chars'"
                )
            if not Path(tokenizer).expanduser().exists():
                raise ConfigError(f"tokenizer path {tokenizer!r} does not exist")
        elif tokenizer is not None:
            raise ConfigError(f"tokenizer is used only with unit='tokens' (unit is {unit!r})")
        self.unit = unit
        self.tokenizer_path = tokenizer
        self._tokenizer: Any = None

    def __call__(self, text: str) -> int:
        if self.unit == "words":
            return len(text.split())
        if self.unit == "chars":
            return len(text)
        return len(self._load().encode(text, add_special_tokens=False))

    def _load(self) -> Any:
        if self._tokenizer is None:
            try:
                from transformers import AutoTokenizer
            except ImportError as exc:
                raise MissingDependencyError("transformers", "train") from exc
            assert self.tokenizer_path is not None  # checked in __init__
            path = str(Path(self.tokenizer_path).expanduser())
            try:
                self._tokenizer = AutoTokenizer.from_pretrained(path)
            except Exception as exc:  # transformers raises OSError, ValueError, KeyError...
                raise ConfigError(f"cannot load a tokenizer from {path!r}: {exc}") from exc
        return self._tokenizer

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_tokenizer": None}  # reloaded in the worker on first use


def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    if value <= 0:
        raise ConfigError(f"{name} must be positive, got {value!r}")
    return float(value)


class _LengthTool(AnswerVerifier):
    """Scores the whole completion's length; a completion never lacks an answer."""

    clip_completion = False

    def __init__(self, spec: ToolSpec, unit: str, tokenizer: str | None) -> None:
        super().__init__(spec)
        self.count = _Counter(unit, tokenizer)

    def extract(self, completion: str) -> str:
        return completion


class OverlongPenaltyTool(_LengthTool):
    """DAPO overlong penalty (Eq. 13): 0, then linear down to -1 over the last `cache_length`."""

    requires_reference = False

    def __init__(
        self,
        spec: ToolSpec,
        *,
        max_length: int,
        cache_length: int,
        unit: str = "words",
        tokenizer: str | None = None,
    ) -> None:
        super().__init__(spec, unit, tokenizer)
        self.max_length = _positive("max_length", max_length)
        self.cache_length = _positive("cache_length", cache_length)
        if self.cache_length >= self.max_length:
            raise ConfigError(
                f"cache_length ({cache_length}) must be smaller than max_length ({max_length}): "
                "the penalty ramps over the last cache_length units before max_length"
            )

    def compare(self, answer: str, reference: Any) -> Verdict:
        length = self.count(answer)
        expected = self.max_length - self.cache_length
        if length <= expected:
            penalty = 0.0
        elif length <= self.max_length:
            penalty = (expected - length) / self.cache_length
        else:
            penalty = -1.0
        unit = self.count.unit
        components = {"length": float(length), "limit": self.max_length, "soft_limit": expected}
        if penalty == 0.0:
            reason = f"{length} {unit} <= {expected:g}"
        elif penalty == -1.0:
            reason = f"{length} {unit} > max_length {self.max_length:g}"
        else:
            reason = f"{length} {unit} in the overlong buffer ({expected:g}, {self.max_length:g}]"
        return Verdict(penalty, components={**components, "penalty": penalty}, reason=reason)


class LengthPenaltyTool(_LengthTool):
    """Verbosity penalty: 0 up to `max_ratio` times the reference length, -1 from twice that."""

    def __init__(
        self,
        spec: ToolSpec,
        *,
        max_ratio: float = 2.0,
        unit: str = "words",
        tokenizer: str | None = None,
    ) -> None:
        super().__init__(spec, unit, tokenizer)
        self.max_ratio = _positive("max_ratio", max_ratio)

    def parse_reference(self, reference: str) -> int:
        """The reference's length in this tool's unit (it must be at least 1)."""
        text = reference.strip()
        length = self.count(text)
        if length == 0:
            raise InvalidReferenceError(f"reference has no {self.count.unit} to measure against")
        return length

    def compare(self, answer: str, reference: int) -> Verdict:
        length = self.count(answer)
        ratio = length / reference
        limit = self.max_ratio * reference
        penalty = (
            0.0
            if ratio <= self.max_ratio
            else max(-1.0, -(ratio - self.max_ratio) / self.max_ratio)
        )
        components = {
            "length": float(length),
            "reference_length": float(reference),
            "ratio": ratio,
            "limit": limit,
            "penalty": penalty,
        }
        unit = self.count.unit
        if penalty == 0.0:
            reason = f"{length} {unit} <= {limit:g} ({self.max_ratio:g} x reference)"
        else:
            reason = f"{length} {unit} is {ratio:.2f} x the reference (limit {self.max_ratio:g} x)"
        return Verdict(penalty, components=components, reason=reason)
