"""Format rewards: structured output in tags. They need no reference; one given is ignored.

`FormatTagsTool` is the pair of structured-output rewards of the reward-function-search
system (docs/architecture.md, Design: "Formats the rewards teach"), which trains the policy
to answer as `<thinking>...</thinking><solution>...</solution>`:

- `mode="exact"`: 1.0 iff the completion is exactly one block per tag, in the configured
  order, each with non-blank content, with only whitespace around and between the blocks;
  else 0.0;
- `mode="approx"`: partial credit per tag: +0.5/len(tags) when its opening tag appears exactly
  once and +0.5/len(tags) when its closing tag appears exactly once (total in [0, 1]); the
  components hold each tag's share.

`ThinkFormatTool` follows TRL's `trl.rewards.think_format_reward` (`^<think>(?!.*<think>)
(.*?)</think>.*$`): the completion opens with one `<think>...</think>` block. It departs from
TRL in three ways, each stricter or more forgiving on purpose: leading whitespace is allowed,
`</think>` must appear exactly once, and a non-blank answer must follow it.

Unlike answer verifiers these check the whole completion, not the tail that
`MAX_COMPLETION_CHARS` keeps: the format starts at the first character, and counting tags is linear even on megabyte strings.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.tools.base import AnswerVerifier, Verdict
from rewardsmith.types import ToolSpec

log = logging.getLogger(__name__)

MODES = ("exact", "approx")
DEFAULT_TAGS = ("thinking", "solution")
# A tag name is an XML-style name, so it can be written into `<name>` without escaping.
_TAG_NAME_RE = re.compile(r"[A-Za-z_][\w.\-]*")


class _WholeCompletionCheck(AnswerVerifier):
    """A reference-free check of the whole completion (no tail clipping, never "no answer")."""

    requires_reference = False
    clip_completion = False

    def extract(self, completion: str) -> str:
        return completion


class FormatTagsTool(_WholeCompletionCheck):
    """`<thinking>...</thinking><solution>...</solution>` format, exact (0/1) or approximate."""

    def __init__(
        self,
        spec: ToolSpec,
        *,
        mode: str = "exact",
        tags: Sequence[str] = DEFAULT_TAGS,
    ) -> None:
        super().__init__(spec)
        if mode not in MODES:
            raise ConfigError(f"format mode must be one of {MODES}, got {mode!r}")
        if isinstance(tags, str) or not isinstance(tags, Sequence) or not tags:
            raise ConfigError(f"tags must be a non-empty list of tag names, got {tags!r}")
        for tag in tags:
            if not isinstance(tag, str) or not _TAG_NAME_RE.fullmatch(tag):
                raise ConfigError(f"tag {tag!r} is not a valid tag name (letters, digits, _ - .)")
        if len(set(tags)) != len(tags):
            raise ConfigError(f"tags must not repeat, got {list(tags)}")
        self.mode = mode
        self.tags: tuple[str, ...] = tuple(tags)

    def compare(self, answer: str, reference: Any) -> Verdict:
        if self.mode == "exact":
            return self._exact(answer)
        return self._approx(answer)

    def _exact(self, text: str) -> Verdict:
        for tag in self.tags:
            opens, closes = text.count(f"<{tag}>"), text.count(f"</{tag}>")
            if opens != 1 or closes != 1:
                return Verdict(0.0, reason=f"<{tag}> x{opens}, </{tag}> x{closes}; need one each")
        rest = text
        for tag in self.tags:
            rest = rest.lstrip()
            if not rest.startswith(f"<{tag}>"):
                return Verdict(0.0, reason=f"expected <{tag}> here: {rest[:40]!r}")
            end = rest.find(f"</{tag}>")
            if end < 0:  # the closing tag comes before the opening one
                return Verdict(0.0, reason=f"</{tag}> precedes <{tag}>")
            if not rest[len(tag) + 2 : end].strip():
                return Verdict(0.0, reason=f"<{tag}> is empty")
            rest = rest[end + len(tag) + 3 :]
        if rest.strip():
            return Verdict(0.0, reason=f"text after </{self.tags[-1]}>: {rest.strip()[:40]!r}")
        return Verdict(1.0, reason="exact format")

    def _approx(self, text: str) -> Verdict:
        share = 0.5 / len(self.tags)
        components: dict[str, float] = {}
        missing: list[str] = []
        for tag in self.tags:
            credit = 0.0
            for marker in (f"<{tag}>", f"</{tag}>"):
                if text.count(marker) == 1:
                    credit += share
                else:
                    missing.append(marker)
            components[tag] = credit
        total = sum(components.values())
        reason = "every tag once" if not missing else f"not exactly once: {' '.join(missing)}"
        return Verdict(min(1.0, total), components=components, reason=reason)


class ThinkFormatTool(_WholeCompletionCheck):
    """1.0 iff the completion opens with one `<think>...</think>` block and then answers."""

    def __init__(self, spec: ToolSpec) -> None:
        super().__init__(spec)

    def compare(self, answer: str, reference: Any) -> Verdict:
        text = answer.lstrip()
        if not text.startswith("<think>"):
            return Verdict(0.0, reason="does not open with <think>")
        opens, closes = text.count("<think>"), text.count("</think>")
        if opens != 1 or closes != 1:
            return Verdict(0.0, reason=f"<think> x{opens}, </think> x{closes}; need one each")
        _, _, after = text.partition("</think>")
        if not after.strip():
            return Verdict(0.0, reason="no answer after </think>")
        return Verdict(1.0, reason="think block then answer")
