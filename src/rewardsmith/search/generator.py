"""Generators of candidate reward functions: offline (evolutionary) and LLM.

Both take the round number, how many candidates to write and the `Feedback` of earlier
rounds, and return `Proposal`s: a name, Python source defining `reward(completions,
references, prompts)`, and how it was made. Nothing here runs the source: every proposal
goes through the sandbox's 4-stage check in the search loop.

**Offline** (`OfflineGenerator`): evolution over `search.program.RewardProgram`s, rendered as
readable source. Round 1 draws random programs. Later rounds choose parents among the
admitted offline candidates by linear rank selection (the best of n has weight n, the
worst 1; Baker 1985) and make each child by mutation of one parent (`mutate_program`) or
crossover of two then a mutation (`crossover_program`); `IMMIGRANTS` of each round are fresh
random programs, so the search does not collapse onto one family. A child equal to any
program already tried is drawn again. Rejected candidates are never parents.

**LLM** (`rewardsmith.search.llm_generator.LLMGenerator`): an OpenAI-compatible model
writes the source; see that module.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from rewardsmith.search.feedback import Feedback
from rewardsmith.search.program import (
    RewardProgram,
    crossover_program,
    mutate_program,
    random_program,
    render_program,
)
from rewardsmith.search.task import SearchTask

#: Share of each round's offline candidates drawn at random instead of bred.
IMMIGRANTS = 0.2
#: Probability that a bred child comes from crossover (else from a mutation).
CROSSOVER_RATE = 0.4
# Draws before the generator accepts a program it has already tried.
DRAWS = 200
_SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Proposal:
    """A candidate as the generator wrote it."""

    name: str
    source: str
    origin: str
    genome: dict[str, Any] | None = None
    parents: tuple[str, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)


class Generator(Protocol):
    """What the search loop asks of a generator."""

    kind: str

    def propose(
        self, round_no: int, count: int, feedback: Feedback, start: int = 1
    ) -> list[Proposal]:
        """Candidates `start`..`count` of round `round_no`."""
        ...

    def told(self, feedback: Feedback, count: int) -> str:
        """Exactly what the generator is told before the round (`feedback/round_N.md`)."""
        ...


def candidate_name(round_no: int, index: int, hint: str = "") -> str:
    """`r{round}_{index:02d}` and a short slug of `hint` (letters, digits, `_`)."""
    slug = _SLUG.sub("_", hint.lower()).strip("_")[:24].strip("_")
    return f"r{round_no}_{index:02d}" + (f"_{slug}" if slug else "")


class OfflineGenerator:
    """Evolutionary generator over reward programs (see the module docstring)."""

    kind = "offline"

    def __init__(self, task: SearchTask, seed: int = 0) -> None:
        self.task = task
        self.seed = seed

    def told(self, feedback: Feedback, count: int) -> str:
        return feedback.render()

    def propose(
        self, round_no: int, count: int, feedback: Feedback, start: int = 1
    ) -> list[Proposal]:
        rng = random.Random(self.seed * 1_000_003 + round_no)
        parents = [
            (r.name, RewardProgram.from_dict(r.genome))
            for r in feedback.ranking
            if r.genome is not None
        ]
        tried = {
            RewardProgram.from_dict(r.genome)
            for r in [*feedback.ranking, *feedback.rejected]
            if r.genome
        }
        immigrants = count if not parents else round(count * IMMIGRANTS)
        out: list[Proposal] = []
        for index in range(1, count + 1):
            program, origin, used = self._child(rng, parents, index <= count - immigrants, tried)
            tried.add(program)
            name = candidate_name(round_no, index, program.terms[0].feature)
            source = render_program(
                program,
                name=name,
                origin=origin,
                think_tag=self.task.think_tag,
                answer_tag=self.task.answer_tag,
            )
            out.append(Proposal(name, source, origin, program.to_dict(), tuple(used)))
        return out[start - 1 :]

    def _child(
        self,
        rng: random.Random,
        parents: Sequence[tuple[str, RewardProgram]],
        bred: bool,
        tried: set[RewardProgram],
    ) -> tuple[RewardProgram, str, list[str]]:
        for _ in range(DRAWS):
            if not bred or not parents:
                program, origin, used = random_program(rng), "a random program", []
            elif len(parents) > 1 and rng.random() < CROSSOVER_RATE:
                (na, a), (nb, b) = _rank_select(rng, parents, 2)
                child = crossover_program(a, b, rng)
                program, what = mutate_program(child, rng)
                origin, used = f"crossover of {na} and {nb}, then {what}", [na, nb]
            else:
                ((na, a),) = _rank_select(rng, parents, 1)
                program, what = mutate_program(a, rng)
                origin, used = f"mutation of {na}: {what}", [na]
            if program not in tried:
                return program, origin, used
        return program, origin + " (already tried)", used


def _rank_select(
    rng: random.Random, ranked: Sequence[tuple[str, RewardProgram]], k: int
) -> list[tuple[str, RewardProgram]]:
    """`k` distinct parents, the one ranked i-th of n with weight n - i + 1."""
    pool = list(ranked)
    chosen = []
    for _ in range(min(k, len(pool))):
        n = len(pool)
        pick = rng.choices(range(n), weights=[n - i for i in range(n)])[0]
        chosen.append(pool.pop(pick))
    return chosen
