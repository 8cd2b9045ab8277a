"""Shared machinery for verifier tools: `extract` is split from `compare`.

A verifier tool subclasses `AnswerVerifier` and writes three small methods:

- `parse_reference(reference) -> parsed` (raise `InvalidReferenceError` when unusable),
  called once per distinct reference in a batch: GRPO groups share one reference;
- `extract(completion) -> answer | None` (None: the completion has no answer);
- `compare(answer, parsed_reference) -> Verdict` (score plus optional components).

The base class does the batch loop, clipping, caching and error handling, so every tool
returns exactly one `Reward` per sample and never raises on model output.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.config import MAX_REFERENCE_CHARS, clip_tail
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

log = logging.getLogger(__name__)

# Logged excerpts of bad completions stay short: logs are for people, not archives.
LOG_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class Verdict:
    """What `compare` returns: a score, optional components and a short reason."""

    score: float
    components: Mapping[str, float] = field(default_factory=dict)
    reason: str = ""


def make_reward(
    spec: ToolSpec,
    score: float | None,
    status: Status = "ok",
    reason: str = "",
    components: Mapping[str, float] | None = None,
) -> Reward:
    """A `Reward` stamped with the tool's `name@version`."""
    return Reward(
        score=score, status=status, components=dict(components or {}), tool=spec.ref, reason=reason
    )


def score_batch(tool: RewardTool, samples: Sequence[Sample]) -> list[Reward]:
    """`tool.score(samples)`, except that a tool that raises or returns the wrong number of
    rewards (a bug in that tool) gives every sample `error`: one broken tool never takes the
    rest of a batch, or a composite, down with it."""
    try:
        out = list(tool.score(samples))
        if len(out) != len(samples):
            raise RuntimeError(f"returned {len(out)} rewards for {len(samples)} samples")
    except Exception as exc:
        log.exception("tool %s failed on a batch of %d", tool.spec.ref, len(samples))
        reason = f"tool failed: {type(exc).__name__}: {exc}"
        return [make_reward(tool.spec, 0.0, "error", reason=reason) for _ in samples]
    return out


class AnswerVerifier(RewardTool):
    """Base class for tools that compare an extracted answer with a parsed reference."""

    #: False for tools that do not use a reference (format checks, the overlong penalty):
    #: any reference given is ignored, however long or malformed.
    requires_reference: bool = True
    #: False for tools that judge the whole completion (format, length) rather than a final
    #: answer at its end; they must stay linear-time on megabyte completions.
    clip_completion: bool = True

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec

    def parse_reference(self, reference: str) -> Any:
        """Turn the raw reference into what `compare` needs. Default: the stripped string."""
        text = reference.strip()
        if not text:
            raise InvalidReferenceError("empty reference")
        return text

    @abstractmethod
    def extract(self, completion: str) -> Any | None:
        """The answer in `completion`, or None when it has none."""

    @abstractmethod
    def compare(self, answer: Any, reference: Any) -> Verdict:
        """Score an extracted answer against a parsed reference."""

    def no_answer(self) -> Reward:
        """The reward for a completion with no extractable answer."""
        return make_reward(self.spec, 0.0, reason="no answer found")

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        parsed_refs: dict[str | None, Any] = {}
        out: list[Reward] = []
        for sample in samples:
            out.append(self._score_one(sample, parsed_refs))
        return out

    def _parsed_reference(self, reference: str | None, cache: dict[str | None, Any]) -> Any:
        if reference in cache:
            value = cache[reference]
        else:
            try:
                value = self._parse_reference_checked(reference)
            except InvalidReferenceError as exc:
                value = exc
            cache[reference] = value
        if isinstance(value, InvalidReferenceError):
            raise value
        return value

    def _parse_reference_checked(self, reference: str | None) -> Any:
        if not self.requires_reference:
            return None
        if reference is None:
            raise InvalidReferenceError("missing reference")
        if len(reference) > MAX_REFERENCE_CHARS:
            raise InvalidReferenceError(f"reference longer than {MAX_REFERENCE_CHARS} characters")
        return self.parse_reference(reference)

    def _score_one(self, sample: Sample, parsed_refs: dict[str | None, Any]) -> Reward:
        try:
            reference = self._parsed_reference(sample.reference, parsed_refs)
        except InvalidReferenceError as exc:
            return make_reward(self.spec, None, "invalid_reference", reason=str(exc))
        completion = sample.completion or ""
        try:
            answer = self.extract(clip_tail(completion) if self.clip_completion else completion)
            if answer is None:
                return self.no_answer()
            verdict = self.compare(answer, reference)
        except ConfigError:
            raise  # a tool that cannot work (e.g. a tokenizer that will not load) is setup
        except Exception as exc:  # a bad rollout is data, not a crash
            log.warning(
                "%s failed on completion %r: %s",
                self.spec.ref,
                completion[:LOG_EXCERPT_CHARS],
                exc,
            )
            return make_reward(self.spec, 0.0, "error", reason=f"{type(exc).__name__}: {exc}")
        return make_reward(
            self.spec, verdict.score, reason=verdict.reason, components=verdict.components
        )
