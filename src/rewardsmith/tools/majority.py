"""majority_vote: a label-free reward. Within a group of samples that answer one prompt, the
most frequent final answer is paid 1.0, every other sample 0.0; no reference is read.

Rule followed: TTRL (Zuo et al. 2025, "TTRL: Test-Time Reinforcement Learning"): the
majority answer of a group of sampled completions stands in for the missing label, and a
completion is rewarded when its answer equals it. The reward for unlabeled prompts; it pays
self-agreement, not correctness, so a policy trained on it can collapse onto one confident
answer (the GRPO trainer logs within-group agreement next to accuracy and marks such a run:
`rewardsmith.rl.collapse`).

**Groups.** The samples sharing `meta["group"]` when a sample has one (the `group` field of
a JSONL line or a TRL column), else those sharing the prompt text. A group is only what one
`score` call holds: a caller that splits a group over calls splits its vote.

**Votes.** Each sample's final answer is read with the project's readers, never a parser
of its own, and equal answers in different forms are one vote:

- `answers="number"` (the default; arithmetic and GSM8K-style tasks): the `gsm8k` tool's
  numeric reading (`tools.gsm8k.extract_number`: `#### N`, `\\boxed{}`, "the answer is",
  answer tags, else the last number; commas, currency, units and `.0` ignored), keyed by the
  exact value: `32`, `32.0`, `\\boxed{32}`, `$32` and `<solution>32</solution>` are one vote;
- `answers="text"`: the final answer in any style (`answers.read_answers`), keyed by
  `answers.same_key` (case, spacing, `$`, outer punctuation ignored), a plain number by its
  value as above.

A sentence copied from the prompt is blanked first (an echoed question's last number is no
answer). A completion with no answer, or a hedge (several different answers: "31 or 32",
two boxes that disagree), has **no vote** and is never paid: a hedge cannot vote twice.

**Who is paid.** The answer with the most votes, when it has at least `min_votes` (default
2: a lone answer is no agreement) and no other answer has as many. A tie pays nobody:
paying every tied answer would pay the group for hedging across its samples. A sample alone
in its group (no group field and no prompt, or the only sample of its prompt) gets
`not_applicable` (score None): a vote of one decides nothing, and paying it would pay any
answer. Reasons say which case applied; components give each sample's `vote_share` (the
share of its group voting as it does, 0 without a vote).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from rewardsmith.answers import hedge_reason, read_answers, same_key, without_prompt_copies
from rewardsmith.config import clip_tail
from rewardsmith.errors import ConfigError
from rewardsmith.tools.base import DEFAULT_STEP_TIMEOUT_SECONDS, make_reward
from rewardsmith.tools.deadline import StepTimeout, deadline
from rewardsmith.tools.gsm8k import extract_number, numbers_in
from rewardsmith.types import Reward, RewardTool, Sample, Status, ToolSpec

AnswerReading = Literal["number", "text"]
ANSWER_READINGS: tuple[AnswerReading, ...] = ("number", "text")
# An answer shown in a reason is cut here: reasons are for people.
SHOWN_CHARS = 40
# A text answer that is only a number ("32.0", "-1,000", "$5"): keyed by its value.
_PLAIN_NUMBER = re.compile(r"[-+\u2212]?[$€£]?\d[\d,]*(?:\.\d+)?%?|[-+]?\d+/\d+")


@dataclass(frozen=True)
class Vote:
    """One sample's vote: `key` (None: no vote) and, for people, the answer as `shown` or
    why there is no vote (`why`: "no answer", a hedge reason, a timeout)."""

    key: Hashable | None
    shown: str = ""
    why: str = ""
    timed_out: bool = False


def read_vote(
    completion: str,
    prompt: str = "",
    answers: AnswerReading = "number",
    timeout: float | None = DEFAULT_STEP_TIMEOUT_SECONDS,
) -> Vote:
    """The vote of one completion (see the module docstring); never raises on model output."""
    text = clip_tail(completion if isinstance(completion, str) else "")
    try:
        with deadline(timeout):
            if prompt:
                text = without_prompt_copies(text, prompt)
            return _number_vote(text) if answers == "number" else _text_vote(text)
    except StepTimeout:
        return Vote(None, why=f"reading the answer timed out after {timeout:g}s", timed_out=True)


def _number_vote(text: str) -> Vote:
    value = extract_number(text)
    if value is None:
        return Vote(None, why="no answer found")
    if not isinstance(value, Fraction):  # Hedged: several different numbers
        return Vote(None, why=value.reason)
    return Vote(value, _number_text(value))


def _number_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _text_vote(text: str) -> Vote:
    candidates, _, _ = read_answers(text)
    if not candidates:
        return Vote(None, why="no answer found")
    keys = {_text_key(c) for c in candidates}
    if len(keys) > 1:
        return Vote(None, why=hedge_reason(candidates))
    key = keys.pop()
    return Vote(key, candidates[0].strip()[:SHOWN_CHARS])


def _text_key(candidate: str) -> Hashable:
    """A plain number by its exact value, anything else by `same_key`."""
    stripped = candidate.strip().strip("*_`").rstrip(".")
    if _PLAIN_NUMBER.fullmatch(stripped.replace(" ", "")):
        found = numbers_in(stripped)
        if len(found) == 1 and found[0] is not None:
            return found[0]
    return same_key(candidate)


def group_of(sample: Sample, index: int) -> Hashable:
    """The group `sample` votes in: its `meta["group"]`, else its prompt text, else itself
    alone (`index`)."""
    meta = sample.meta if isinstance(sample.meta, Mapping) else {}
    if meta.get("group") is not None:
        return ("group", str(meta["group"]))
    prompt = sample.prompt_text()
    return ("prompt", prompt) if prompt else ("alone", index)


def agreement(votes: Sequence[Vote]) -> float:
    """The share of a group that votes for its most frequent answer (0 when nobody votes):
    1.0 when every sample gives the same answer. What the collapse monitor tracks."""
    counts = Counter(v.key for v in votes if v.key is not None)
    return max(counts.values()) / len(votes) if counts and votes else 0.0


class MajorityVoteTool(RewardTool):
    """Pays the group's majority answer 1.0 and every other sample 0.0 (module docstring).

    `answers`: how final answers are read (`number` or `text`); `min_votes`: the fewest
    votes a majority needs (>= 2); `timeout_seconds`: the deadline of one answer's reading.
    """

    def __init__(
        self,
        spec: ToolSpec | None = None,
        *,
        answers: str = "number",
        min_votes: int = 2,
        timeout_seconds: float = DEFAULT_STEP_TIMEOUT_SECONDS,
    ) -> None:
        if answers not in ANSWER_READINGS:
            raise ConfigError(
                f"majority_vote: answers must be one of {ANSWER_READINGS}, got {answers!r}"
            )
        if isinstance(min_votes, bool) or not isinstance(min_votes, int) or min_votes < 2:
            raise ConfigError(
                f"majority_vote: min_votes must be an integer >= 2 (a lone answer is no "
                f"agreement), got {min_votes!r}"
            )
        if not isinstance(timeout_seconds, int | float) or not timeout_seconds > 0:
            raise ConfigError(
                f"majority_vote: timeout_seconds must be > 0, got {timeout_seconds!r}"
            )
        self.spec = spec or ToolSpec(
            name="majority_vote", needs_reference=False, reference_format="none"
        )
        self.answers: AnswerReading = "text" if answers == "text" else "number"
        self.min_votes = min_votes
        self.timeout_seconds = float(timeout_seconds)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        groups: dict[Hashable, list[int]] = {}
        for i, sample in enumerate(samples):
            groups.setdefault(group_of(sample, i), []).append(i)
        rewards: list[Reward | None] = [None] * len(samples)
        for members in groups.values():
            if len(members) == 1:
                rewards[members[0]] = make_reward(
                    self.spec,
                    None,
                    "not_applicable",
                    reason="alone in its group: a vote of one decides nothing (give the "
                    "samples of one prompt together, or a shared 'group' field)",
                )
                continue
            votes = [self._vote(samples[i]) for i in members]
            for i, reward in zip(members, self._pay(votes), strict=True):
                rewards[i] = reward
        return [r or make_reward(self.spec, 0.0, "error", reason="not scored") for r in rewards]

    def _vote(self, sample: Sample) -> Vote:
        prompt = sample.prompt_text() if sample.prompt is not None else ""
        return read_vote(sample.completion, prompt, self.answers, self.timeout_seconds)

    def _pay(self, votes: Sequence[Vote]) -> list[Reward]:
        """The rewards of one group's votes."""
        counts = Counter(v.key for v in votes if v.key is not None)
        ranked = counts.most_common()
        top = ranked[0][1] if ranked else 0
        leaders = [key for key, n in ranked if n == top]
        shown = {v.key: v.shown for v in votes if v.key is not None}
        size = len(votes)
        winner = leaders[0] if len(leaders) == 1 and top >= self.min_votes else None
        if winner is not None:
            verdict = f"majority answer {shown[winner][:SHOWN_CHARS]} ({top}/{size} votes)"
        elif len(leaders) > 1:
            tied = ", ".join(str(shown[k])[:SHOWN_CHARS] for k in leaders[:4])
            verdict = f"no majority: a tie between {tied} ({top} votes each of {size})"
        else:
            verdict = f"no majority: no answer has {self.min_votes} of {size} votes"
        out = []
        for vote in votes:
            share = {"vote_share": counts[vote.key] / size if vote.key is not None else 0.0}
            if vote.key is None:
                status: Status = "timeout" if vote.timed_out else "ok"
                out.append(make_reward(self.spec, 0.0, status, f"no vote: {vote.why}", share))
            elif vote.key == winner:
                out.append(make_reward(self.spec, 1.0, reason=verdict, components=share))
            else:
                reason = f"answer {vote.shown[:SHOWN_CHARS]} is not the majority; {verdict}"
                out.append(make_reward(self.spec, 0.0, reason=reason, components=share))
        return out
