"""Stage 4 of the reward-code check: the code's scores, read from probe runs, must be valid,
a function of each sample alone, and no literal of the code may make a wrong answer pay.

`ProbeRuns` sends batches (one sandbox run each, as production sends chunks) and keeps every
score a sample got. The checks, in order, each returning a reason or "":

- `valid`: one finite score per sample, within the bounds;
- `consistent`: a sample scored in different runs, positions, batch sizes and alongside
  different samples (`plan_runs`: the batch, again, permuted, split into random pieces, and
  mixed with duplicates of itself) got one score. Runs are fresh processes, so this also
  catches code that counts its calls, or reads anything that changes between runs;
- `no_trigger`: for each right/wrong answer pair the code tells apart (the right one scores
  higher; the two have the same length and shape, so only reading the answer tells them
  apart), each literal of the code inserted into the wrong answer (before it, after it, or
  alone) must not make it score as high as the right answer. It is not held against the
  code when a neutral string of the literal's length in its place scores as much (the code
  pays for brevity, not for the literal), or when the same literal inserted into the right
  answer (for "alone": after it) scores higher still (a format bonus both earn). Literals
  that contain the right answer are skipped: they are hedges, not triggers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rewardsmith.sandbox.probe_data import ProbeSample

# Right/wrong pairs that literals are tried on, and how a literal goes into a completion.
TRIGGER_PAIRS = 3
PLACEMENTS: tuple[Callable[[str, str], str], ...] = (
    lambda text, literal: f"{literal} {text}",
    lambda text, literal: f"{text} {literal}",
    lambda text, literal: literal,
)
# The right answer a placement is compared with: the literal in the same place ("alone" has
# no place in a right answer: after it).
CONTROLS = (PLACEMENTS[0], PLACEMENTS[1], PLACEMENTS[1])
QUOTE_CHARS = 60

Scorer = Callable[[list[list[ProbeSample]]], "list[list[float | str]] | str"]


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + "…")


def plan_runs(batch: Sequence[ProbeSample], rng: random.Random) -> list[list[ProbeSample]]:
    """The runs `consistent` compares (module docstring), the batch itself first."""
    base = list(batch)
    permuted = rng.sample(base, len(base))
    cuts = sorted(rng.sample(range(1, len(base)), min(2, len(base) - 1))) if len(base) > 1 else []
    pieces = [base[a:b] for a, b in zip([0, *cuts], [*cuts, len(base)], strict=True)]
    half = base[: max(1, len(base) // 2)]
    mixed = rng.sample(half + half, len(half) * 2)
    return [base, list(base), permuted, *pieces, mixed]


@dataclass
class ProbeRuns:
    """Scores per sample (by identity) across every run sent through `score`."""

    score: Scorer
    bounds: tuple[float, float]
    seen: dict[int, list[float | str]] = field(default_factory=dict)
    samples: dict[int, ProbeSample] = field(default_factory=dict)

    def run(self, batches: list[list[ProbeSample]]) -> list[list[float | str]] | str:
        """Score `batches` (one run each); a reason instead when a run or call failed."""
        results = self.score(batches)
        if isinstance(results, str):
            return results
        for batch, scores in zip(batches, results, strict=True):
            for sample, value in zip(batch, scores, strict=True):
                self.seen.setdefault(id(sample), []).append(value)
                self.samples[id(sample)] = sample
        return results

    def valid(self) -> str:
        for key, values in self.seen.items():
            for v in values:
                if isinstance(v, str):
                    return f"non-finite score {v} for {_quote(self.samples[key].completion)}"
                if not self.bounds[0] <= v <= self.bounds[1]:
                    return f"score {v} outside the bounds {self.bounds}"
        return ""

    def consistent(self) -> str:
        for key, values in self.seen.items():
            if len(set(values)) > 1:
                shown = ", ".join(str(v) for v in dict.fromkeys(values))
                return (
                    "not deterministic: the same sample scored "
                    f"{shown} in different runs, positions or batches "
                    f"(completion {_quote(self.samples[key].completion)}); a reward must depend "
                    "on its own sample only"
                )
        return ""

    def value(self, sample: ProbeSample) -> float:
        first = self.seen[id(sample)][0]
        return float(first) if not isinstance(first, str) else 0.0

    def no_trigger(self, batch: Sequence[ProbeSample], literals: Sequence[str], chunk: int) -> str:
        """The trigger check (module docstring), in two rounds of runs: wrong answers with
        each literal, then right answers with the literals that made a wrong one pay."""
        pairs = _told_apart(batch, self.value)[:TRIGGER_PAIRS]
        if not pairs or not literals:
            return ""
        tried: list[tuple[ProbeSample, ProbeSample, str, int, ProbeSample]] = []
        for right, wrong in pairs:
            answer = (right.reference or "").lower()
            for literal in literals:
                if answer and answer in literal.lower():
                    continue
                for k, place in enumerate(PLACEMENTS):
                    probe = ProbeSample(
                        place(wrong.completion, literal), wrong.reference, wrong.prompt
                    )
                    tried.append((right, wrong, literal, k, probe))
        failed = self.run(_chunks([t[4] for t in tried], chunk))
        if isinstance(failed, str):
            return failed
        paid = [
            t
            for t in tried
            if self.value(t[4]) > self.value(t[1]) and self.value(t[4]) >= self.value(t[0])
        ]
        if not paid:
            return ""
        controls = [
            ProbeSample(CONTROLS[k](right.completion, literal), right.reference, right.prompt)
            for right, _, literal, k, _ in paid
        ]
        neutral = [
            ProbeSample(
                PLACEMENTS[k](wrong.completion, _neutral(literal)), wrong.reference, wrong.prompt
            )
            for _, wrong, literal, k, _ in paid
        ]
        failed = self.run(_chunks(controls + neutral, chunk))
        if isinstance(failed, str):
            return failed
        for (right, wrong, literal, _, probe), control, plain in zip(
            paid, controls, neutral, strict=True
        ):
            score = self.value(probe)
            if score >= self.value(control) and score > self.value(plain):
                return (
                    f"the literal {_quote(literal)} of the code makes a wrong answer pay: "
                    f"{_quote(probe.completion)} scored {self.value(probe)} "
                    f"({self.value(wrong)} without it; the right answer "
                    f"{_quote(right.completion)} scores {self.value(right)})"
                )
        return ""


def _told_apart(
    batch: Sequence[ProbeSample], value: Callable[[ProbeSample], float]
) -> list[tuple[ProbeSample, ProbeSample]]:
    """The batch's (right, wrong) pairs in which the right answer scored higher."""
    by_pair: dict[int, dict[bool, ProbeSample]] = {}
    for s in batch:
        if s.pair is not None:
            by_pair.setdefault(s.pair, {})[s.right] = s
    told = [
        (p[True], p[False])
        for _, p in sorted(by_pair.items())
        if len(p) == 2 and value(p[True]) > value(p[False])
    ]
    # Pairs are numbered in the order their styles were dealt: the first ones differ in style.
    return told


def _neutral(literal: str) -> str:
    """A string of `literal`'s length and spacing that holds none of its characters."""
    filler = next(c for c in "qxzjkv" if c not in literal.lower())
    return "".join(c if c.isspace() else filler for c in literal)


def _chunks(samples: list[ProbeSample], size: int) -> list[list[ProbeSample]]:
    return [samples[i : i + size] for i in range(0, len(samples), size)]
