"""Shared machinery for verifier tools: `extract` is split from `compare`.

A verifier tool subclasses `AnswerVerifier` and writes three small methods:

- `parse_reference(reference) -> parsed` (raise `InvalidReferenceError` when unusable),
  called once per distinct reference in a batch: GRPO groups share one reference;
- `extract(completion) -> answer | None` (None: the completion has no answer; a `Hedged`
  when it offers several different answers, which scores 0.0 with reason `hedged: ...`);
- `compare(answer, parsed_reference) -> Verdict` (score plus optional components).

The base class does the rest, so every tool returns exactly one `Reward` per sample and
never raises on model output. `score` checks each reference (missing, not text, too long:
`invalid_reference`), clips each completion to its tail (`clip_completion`) and groups the
batch by reference, each distinct completion once; `verify_groups` verifies the groups and
`check_group` is its one step-by-step rule for a group: the reference, then each
completion's extract + compare, each bounded by `step_timeout` in whatever thread it runs
(`rewardsmith.tools.deadline`: a timer signal on the main thread, a profile hook on others).
`verify_groups` runs `check_group` in this process; a tool may run the same `check_group`
elsewhere (the `math` tool sends the groups to worker processes,
`rewardsmith.tools.verifier_pool`, whose parent also kills a worker stuck past it).
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.answers import hedge_reason, without_prompt_copies
from rewardsmith.config import MAX_REFERENCE_CHARS, clip_tail
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.deadline import StepTimeout, deadline
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

log = logging.getLogger(__name__)

# Logged excerpts of bad completions stay short: logs are for people, not archives.
LOG_EXCERPT_CHARS = 200
# Every step of every verifier has a deadline: extraction is linear-time and takes
# milliseconds, so only a pathological parser or scorer ever meets it.
DEFAULT_STEP_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Hedged:
    """What `extract` returns for a completion that offers several different answers ("72
    or 73", two boxes that disagree): it scores 0.0, whatever the reference
    (docs/architecture.md, Design, failure policy). `candidates` are the answers offered, as
    written."""

    candidates: tuple[str, ...]

    @property
    def reason(self) -> str:
        return hedge_reason(list(self.candidates))


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


@dataclass(frozen=True)
class Group:
    """Distinct completions (already clipped) to verify against one reference."""

    reference: str | None
    completions: Sequence[str]


# What `check_group` yields: ("reference", problem) once ("" when usable), then
# ("item", index, reward) per completion while the reference is usable.
GroupEvent = tuple[Any, ...]


def reference_problem(reference: object) -> str:
    """Why a reference cannot be used before parsing it, or "" when it may be."""
    if reference is None:
        return "missing reference"
    if not isinstance(reference, str):
        return f"reference is {type(reference).__name__}, not text"
    if len(reference) > MAX_REFERENCE_CHARS:
        return f"reference longer than {MAX_REFERENCE_CHARS} characters"
    return ""


class AnswerVerifier(RewardTool):
    """Base class for tools that compare an extracted answer with a parsed reference."""

    #: False for tools that do not use a reference (format checks, the overlong penalty):
    #: any reference given is ignored, however long or malformed.
    requires_reference: bool = True
    #: False for tools that judge the whole completion (format, length) rather than a final
    #: answer at its end; they must stay linear-time on megabyte completions.
    clip_completion: bool = True
    #: Seconds each step (the reference, or one completion's extract + compare) may take,
    #: in any thread; a late step scores 0.0 with status `timeout`. None: unbounded.
    step_timeout: float | None = DEFAULT_STEP_TIMEOUT_SECONDS
    #: True for tools that read the last value of a completion (numbers, expressions): a
    #: sentence copied from the sample's prompt is blanked first, since an echoed question
    #: holds its numbers, not an answer (`rewardsmith.answers.without_prompt_copies`).
    blanks_prompt_copies: bool = False

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

    def error_reason(self, exc: Exception) -> str:
        """The reason of a reward whose step raised `exc` (a bad rollout is data)."""
        return f"{type(exc).__name__}: {exc}"

    def warm_up(self) -> None:
        """Make first uses cheap (imports, caches); a worker process calls it before it
        reports ready. Default: nothing."""

    # -- batches --------------------------------------------------------------------------

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        rewards: list[Reward | None] = [None] * len(samples)
        groups: dict[str | None, dict[str, list[int]]] = {}  # reference -> text -> samples
        for i, sample in enumerate(samples):
            reference = sample.reference if self.requires_reference else None
            problem = reference_problem(reference) if self.requires_reference else ""
            if problem:
                rewards[i] = make_reward(self.spec, None, "invalid_reference", reason=problem)
                continue
            completion = sample.completion if isinstance(sample.completion, str) else ""
            text = clip_tail(completion) if self.clip_completion else completion
            if self.blanks_prompt_copies and isinstance(sample.prompt, str):
                text = without_prompt_copies(text, sample.prompt)
            groups.setdefault(reference, {}).setdefault(text, []).append(i)
        batch = [Group(reference, list(texts)) for reference, texts in groups.items()]
        verified = self.verify_groups(batch) if batch else []
        for group, group_rewards in zip(batch, verified, strict=True):
            members = groups[group.reference]
            for text, reward in zip(group.completions, group_rewards, strict=True):
                if reward.status in ("timeout", "error"):
                    log.warning(
                        "%s: %s on completion %r",
                        self.spec.ref,
                        reward.reason,
                        text[:LOG_EXCERPT_CHARS],
                    )
                for i in members[text]:
                    rewards[i] = reward
        return [r or make_reward(self.spec, 0.0, "error", reason="not scored") for r in rewards]

    def verify_groups(self, groups: Sequence[Group]) -> list[list[Reward]]:
        """One reward per completion of each group, in order. Default: `check_group` here,
        each step bounded by `step_timeout`."""
        timeout = self.step_timeout
        return [
            group_rewards(
                self, group, self.check_group(group.reference, group.completions, timeout)
            )
            for group in groups
        ]

    def check_group(
        self, reference: str | None, completions: Sequence[str], timeout: float | None = None
    ) -> Iterator[GroupEvent]:
        """Verify `completions` against one reference, one step at a time.

        Yields `("reference", problem)` first: "" when the reference is usable, else why
        not (and nothing follows). Then `("item", index, reward)` per completion as soon as
        it is decided, so that a process running this for another knows which steps were
        finished. Each step runs under `deadline(timeout)`; a step that overruns gives
        `invalid_reference` (the reference) or `timeout` (a completion). Never raises on
        model output; a `ConfigError` (a tool that cannot work) and a failure of
        `parse_reference` other than `InvalidReferenceError` propagate.
        """
        try:
            with deadline(timeout):
                parsed = self._parse_reference_checked(reference)
        except InvalidReferenceError as exc:
            yield ("reference", str(exc))
            return
        except StepTimeout:
            yield ("reference", f"parsing the reference timed out after {timeout:g}s")
            return
        yield ("reference", "")
        for index, completion in enumerate(completions):
            yield ("item", index, self._check_one(completion, parsed, timeout))

    def _parse_reference_checked(self, reference: str | None) -> Any:
        if not self.requires_reference:
            return None
        problem = reference_problem(reference)
        if problem:
            raise InvalidReferenceError(problem)
        assert reference is not None
        return self.parse_reference(reference)

    def _check_one(self, completion: str, reference: Any, timeout: float | None) -> Reward:
        try:
            with deadline(timeout):
                answer = self.extract(completion)
                if answer is None:
                    return self.no_answer()
                if isinstance(answer, Hedged):
                    return make_reward(self.spec, 0.0, reason=answer.reason)
                verdict = self.compare(answer, reference)
        except StepTimeout:
            reason = f"verification timed out after {timeout:g}s"
            return make_reward(self.spec, 0.0, "timeout", reason=reason)
        except ConfigError:
            raise  # a tool that cannot work (e.g. a tokenizer that will not load) is setup
        except Exception as exc:  # a bad rollout is data, not a crash
            return make_reward(self.spec, 0.0, "error", reason=self.error_reason(exc))
        return make_reward(
            self.spec, verdict.score, reason=verdict.reason, components=verdict.components
        )


def group_rewards(tool: AnswerVerifier, group: Group, events: Iterator[GroupEvent]) -> list[Reward]:
    """The rewards `check_group`'s events give for `group`, one per completion."""
    out: list[Reward] = []
    for event in events:
        if event[0] == "reference" and event[1]:
            return [
                make_reward(tool.spec, None, "invalid_reference", reason=event[1])
                for _ in group.completions
            ]
        if event[0] == "item":
            out.append(event[2])
    return out
