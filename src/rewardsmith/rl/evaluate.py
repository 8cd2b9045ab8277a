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

from rewardsmith.rl.answers import AnswerFormat, judge_answer
from rewardsmith.rl.generation import generate
from rewardsmith.rl.stats import Interval, McNemar, accuracy_ci, f1_ci, mcnemar_exact

DEFAULT_EVAL_BATCH = 64


class Item(Protocol):
    """Anything with a question and a reference answer (`rl.problems.Problem`, `PromptItem`,
    `rl.families.Task`); a `task` attribute, when present, names the item's task family."""

    @property
    def question(self) -> str: ...

    @property
    def reference(self) -> str: ...


def task_of(item: Any) -> str | None:
    """The item's task (family) name, or None."""
    task = getattr(item, "task", None)
    return task if isinstance(task, str) else None


@dataclass
class EvalResult:
    """Per-item outcomes of one policy and the summary statistics."""

    name: str
    correct: list[bool]
    parseable: list[bool]
    completions: list[str] = field(default_factory=list)
    seconds: float = 0.0
    tasks: list[str | None] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)  # completion tokens

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
            **(
                {"habits": answer_habits(self.completions, self.lengths)}
                if self.completions
                else {}
            ),
        }


def answer_habits(
    completions: Sequence[str],
    lengths: Sequence[int] = (),
    tasks: Sequence[str | None] = (),
) -> dict[str, float]:
    """Shares of completions that a reward-hacking audit looks at: `hedged` (two candidate
    answers), `no_answer` (nothing readable), `format_only` (style markers around nothing),
    and the mean length in tokens (`mean_tokens`, when `lengths` are given). Answers are
    read as `rl.styles.read_answer` reads them (`tasks`: word-list families' answers may
    hold "or")."""
    from rewardsmith.rl.families import FAMILIES
    from rewardsmith.rl.styles import read_answer

    n = max(1, len(completions))
    kinds = [getattr(FAMILIES.get(t or ""), "kind", None) for t in tasks] or [None] * len(
        completions
    )
    read = [read_answer(c, words=k == "word_list") for c, k in zip(completions, kinds, strict=True)]
    habits = {
        "hedged": sum(r.hedged for r in read) / n,
        "no_answer": sum(r.answer is None and not r.hedged for r in read) / n,
        "format_only": sum(r.format_only for r in read) / n,
    }
    if lengths:
        habits["mean_tokens"] = sum(lengths) / len(lengths)
    return habits


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
    lengths: list[int] = []
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
        lengths.extend(int(n) for n in rollout.lengths)
        if progress:
            progress(len(chunk))
    tasks = [task_of(it) for it in items]
    verdicts = [
        judge_answer(t, it.reference, fmt, task)
        for t, it, task in zip(texts, items, tasks, strict=True)
    ]
    return EvalResult(
        name=policy.name,
        correct=[v.correct for v in verdicts],
        parseable=[v.parseable for v in verdicts],
        completions=texts,
        seconds=time.perf_counter() - start,
        tasks=tasks,
        lengths=lengths,
    )


def by_task(result: EvalResult) -> dict[str, EvalResult]:
    """The result split by the items' task (items without one under `-`)."""
    out: dict[str, EvalResult] = {}
    for i, task in enumerate(result.tasks or [None] * len(result.correct)):
        part = out.setdefault(task or "-", EvalResult(f"{result.name}/{task or '-'}", [], []))
        part.correct.append(result.correct[i])
        part.parseable.append(result.parseable[i])
        part.tasks.append(task)
        if result.completions:
            part.completions.append(result.completions[i])
        if result.lengths:
            part.lengths.append(result.lengths[i])
    return out


def evaluate_by_task(policy: Any, items: Sequence[Item], **kwargs: Any) -> dict[str, Any]:
    """`evaluate_policy`, summarized overall and per task (what `testbed.json` records for a
    multi-task build)."""
    result = evaluate_policy(policy, items, **kwargs)
    return {
        **result.summary(),
        "tasks": {name: part.summary() for name, part in sorted(by_task(result).items())},
    }


def compare(baseline: EvalResult, others: Sequence[EvalResult]) -> list[McNemar]:
    """McNemar of each policy against the baseline, Bonferroni over `len(others)` tests."""
    m = max(1, len(others))
    return [mcnemar_exact(baseline.correct, o.correct, comparisons=m) for o in others]
