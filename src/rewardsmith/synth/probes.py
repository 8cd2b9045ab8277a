"""The gate's reward-hacking probes: the attack side of the exploit corpus.

The probes are `rewardsmith.exploits`' attacks, built from the held-out example lines with a
seeded generator (a fresh seed each run unless one is given; the gate records it): empty and
format-only answers, the reference in an unrelated sentence, shotgun lists with the right
answer first, in the middle and last, hedges ("72 or 73", "72 (or maybe 73)"), negations,
the prompt given back, padding and very long filler, grader notes and role-play, hedges
hidden with look-alike or zero-width characters, final-answer markers that disagree; for
code references, `__eq__` overrides, early exits and test tampering. `rewardsmith audit`
runs the same corpus, so the gate and the audit never disagree on what an exploit is.

Each probe is compared with its line's right answer (`right_answer`: the reference written
in the completions' first answer style).
"""

from __future__ import annotations

from collections.abc import Sequence

from rewardsmith.exploits import (
    ANSWER_ATTACK_CLASSES,
    CODE_ATTACK_CLASSES,
    Corpus,
    Probe,
    corpus_kind,
)
from rewardsmith.exploits import build_corpus as _build_corpus
from rewardsmith.synth.cases import BARE, Style
from rewardsmith.synth.examples import Example, answer_of

__all__ = ["PROBE_KINDS", "Probe", "build_probes", "right_answer"]

# The attack classes of an answer corpus, in report order (a code corpus has its own).
PROBE_KINDS: tuple[str, ...] = ANSWER_ATTACK_CLASSES


def right_answer(line: Example, styles: Sequence[Style]) -> str:
    """The line's reference answer in the first style that carries it (what probes are
    compared with)."""
    answer = answer_of(line.reference)
    style = next((s for s in styles if s.carries(answer)), BARE)
    return style.render(answer)


def build_probes(lines: Sequence[Example], seed: int | None = None) -> Corpus:
    """The attacks of the exploit corpus of `lines` (no right-answer variants: the gate's
    held-out cases are its right answers), drawn with `seed` (default: a fresh one)."""
    kind = corpus_kind(lines)
    classes = CODE_ATTACK_CLASSES if kind == "code" else ANSWER_ATTACK_CLASSES
    return _build_corpus(lines, seed=seed, classes=classes)
