"""Held-out evaluation of policies (`rewardsmith grpo eval`).

Greedy decoding on a fixed set of problems; each completion is judged by `rl.answers`:
strict accuracy (correct among all), and F1 of precision (correct among completions with a
parseable answer) and recall (correct among all), which the search-driven paper ranks
policies by. Both come with percentile-bootstrap 95% CIs; two policies on the same items
are compared with the exact McNemar test, Bonferroni-corrected for several comparisons
(`rl.stats`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardsmith.rl.answers import AnswerFormat, judge
from rewardsmith.rl.generation import generate
from rewardsmith.rl.stats import Interval, McNemar, accuracy_ci, f1_ci, mcnemar_exact

DEFAULT_EVAL_BATCH = 64


class Item(Protocol):
    """Anything with a question and a reference answer (`rl.problems.Problem`, `PromptItem`)."""

    @property
    def question(self) -> str: ...

    @property
    def reference(self) -> str: ...


@dataclass
class EvalResult:
    """Per-item outcomes of one policy and the summary statistics."""

    name: str
    correct: list[bool]
    parseable: list[bool]
    completions: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def accuracy(self) -> float:
        return sum(self.correct) / max(1, len(self.correct))

    def accuracy_ci(self, seed: int = 0) -> Interval:
        return accuracy_ci(self.correct, seed=seed)

    def f1_ci(self, seed: int = 0) -> Interval:
        return f1_ci(self.correct, self.parseable, seed=seed)

    def summary(self) -> dict[str, Any]:
        n = len(self.correct)
        correct, parseable = sum(self.correct), sum(self.parseable)
        return {
            "n": n,
            "correct": correct,
            "parseable": parseable,
            "accuracy": self.accuracy_ci().to_dict(),
            "precision": correct / parseable if parseable else 0.0,
            "recall": correct / n if n else 0.0,
            "f1": self.f1_ci().to_dict(),
            "seconds": round(self.seconds, 1),
        }


def evaluate_policy(
    policy: Any,
    items: Sequence[Item],
    *,
    answer_format: AnswerFormat | None = None,
    max_new_tokens: int = 96,
    batch_size: int = DEFAULT_EVAL_BATCH,
    progress: Callable[[int], None] | None = None,
) -> EvalResult:
    """Greedy completions of `policy` (an `rl.policies.Policy`) on `items`, judged."""
    fmt = answer_format or policy.answer_format
    start = time.perf_counter()
    texts: list[str] = []
    for i in range(0, len(items), batch_size):
        chunk = items[i : i + batch_size]
        rollout = generate(
            policy.model,
            policy.tokenizer,
            [policy.prompt_for(it.question) for it in chunk],
            max_new_tokens=max_new_tokens,
            greedy=True,
        )
        texts.extend(rollout.texts)
        if progress:
            progress(len(chunk))
    verdicts = [judge(t, it.reference, fmt) for t, it in zip(texts, items, strict=True)]
    return EvalResult(
        name=policy.name,
        correct=[v.correct for v in verdicts],
        parseable=[v.parseable for v in verdicts],
        completions=texts,
        seconds=time.perf_counter() - start,
    )


def compare(baseline: EvalResult, others: Sequence[EvalResult]) -> list[McNemar]:
    """McNemar of each policy against the baseline, Bonferroni over `len(others)` tests."""
    m = max(1, len(others))
    return [mcnemar_exact(baseline.correct, o.correct, comparisons=m) for o in others]
