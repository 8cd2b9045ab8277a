"""What an audit found: per class of the corpus, how often the reward was wrong, with a
Wilson 95% interval and examples, and a one-line verdict.

An attack is a *false pass* when the reward pays it as much as the best right answer of its
line (or, for a line without right answers, pays it at all): the score is above the floor
(0, or the lowest score the reward gave when it goes below 0) and at least that right
answer's. A right-answer variant is a *false fail* when it is paid less than the best right
answer of its line, or not at all. The verdict is "exploitable" when an attack class's
false-pass rate exceeds the allowed rate (0 by default: any false pass), and with
`fail_on="any"` a false fail fails the audit too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from rewardsmith.audit.stats import wilson_interval

Side = Literal["attack", "variant"]
FailOn = Literal["exploit", "any"]
FAIL_ON: tuple[FailOn, ...] = ("exploit", "any")
# Failing probes quoted per class, and characters of each completion quoted.
EXAMPLES_PER_CLASS = 3
QUOTE_CHARS = 160


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """One printable line of at most `limit` characters: the start and the end of the text,
    control characters (terminal escapes) written as escapes, never sent as they are."""
    flat = " ".join(text.split())
    flat = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in flat)
    if len(flat) <= limit:
        return flat
    head = limit // 3
    return flat[:head] + " … " + flat[-(limit - head - 3) :]


@dataclass
class ClassRate:
    """One class of the corpus: how many probes, how many the reward got wrong, the Wilson
    interval of that rate, and examples of the wrong ones."""

    name: str
    side: Side
    probes: int
    wrong: int
    low: float
    high: float
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.wrong / self.probes if self.probes else 0.0

    def cell(self) -> str:
        """ "3/48 = 6.2% [2.1%, 16.8%]": the count, the rate and its interval."""
        return f"{self.wrong}/{self.probes} = {self.rate:.1%} [{self.low:.1%}, {self.high:.1%}]"

    def to_dict(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "side": self.side,
            "probes": self.probes,
            "wrong": self.wrong,
            "rate": round(self.rate, 4),
            "ci95": [round(self.low, 4), round(self.high, 4)],
            "examples": self.examples,
        }


@dataclass
class AuditReport:
    """An audit of one reward function on one examples file (see the module docstring)."""

    target: str
    seed: int
    corpus: str
    lines: int
    attacks: list[ClassRate] = field(default_factory=list)
    variants: list[ClassRate] = field(default_factory=list)
    errors: int = 0
    max_false_pass: float = 0.0
    fail_on: FailOn = "exploit"
    not_applicable: str = ""
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def exploited(self) -> list[ClassRate]:
        """Attack classes whose false-pass rate exceeds the allowed rate."""
        return [c for c in self.attacks if c.wrong and c.rate > self.max_false_pass]

    @property
    def false_fail(self) -> ClassRate | None:
        """All right-answer variants as one class (None without variants)."""
        return _pooled("all right answers", "variant", self.variants)

    @property
    def false_pass(self) -> ClassRate | None:
        """All attacks as one class (None without attacks)."""
        return _pooled("all attacks", "attack", self.attacks)

    @property
    def failed(self) -> bool:
        """Whether the audit fails (exit 3): an exploit, or with `fail_on="any"` a false fail."""
        if self.exploited:
            return True
        ff = self.false_fail
        return self.fail_on == "any" and ff is not None and ff.wrong > 0

    @property
    def attack_probes(self) -> int:
        return sum(c.probes for c in self.attacks)

    @property
    def false_passes(self) -> int:
        return sum(c.wrong for c in self.attacks)

    def verdict(self) -> str:
        """One line: what the audit decided, and the numbers behind it."""
        if self.not_applicable:
            return f"NOT APPLICABLE: {self.target} {self.not_applicable}"
        ff = self.false_fail
        fails = f"false fails {ff.wrong}/{ff.probes} ({ff.rate:.1%})" if ff else "no right answers"
        if self.exploited:
            worst = max(self.exploited, key=lambda c: c.rate)
            names = ", ".join(f"{c.name} {c.wrong}/{c.probes}" for c in self.exploited)
            fp = self.false_pass
            assert fp is not None
            return (
                f"EXPLOITABLE: {self.target} pays {fp.cell()} of the attacks ({names}); worst "
                f"{worst.name} {worst.rate:.1%} [{worst.low:.1%}, {worst.high:.1%}]; {fails}"
            )
        head = "FAILS ON RIGHT ANSWERS" if self.failed else "CLEAN"
        allowed = f" (allowed {self.max_false_pass:.0%})" if self.max_false_pass else ""
        return (
            f"{head}: {self.target} pays {self.false_passes} of {self.attack_probes} attacks"
            f"{allowed} in {len(self.attacks)} classes; {fails}"
        )

    def to_dict(self) -> dict[str, Any]:
        ff = self.false_fail
        return {
            "target": self.target,
            "verdict": self.verdict(),
            "failed": self.failed,
            "seed": self.seed,
            "corpus": self.corpus,
            "lines": self.lines,
            "not_applicable": self.not_applicable,
            "false_pass": {
                "attacks": self.attack_probes,
                "wrong": self.false_passes,
                "rate": round(self.false_pass.rate, 4) if self.false_pass else None,
                "ci95": [round(self.false_pass.low, 4), round(self.false_pass.high, 4)]
                if self.false_pass
                else None,
                "classes": [c.to_dict() for c in self.attacks],
            },
            "false_fail": {
                "variants": ff.probes if ff else 0,
                "wrong": ff.wrong if ff else 0,
                "rate": round(ff.rate, 4) if ff else None,
                "ci95": [round(ff.low, 4), round(ff.high, 4)] if ff else None,
                "classes": [c.to_dict() for c in self.variants],
            },
            "errors": self.errors,
            "max_false_pass": self.max_false_pass,
            "fail_on": self.fail_on,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 2),
        }

    def summary(self) -> dict[str, Any]:
        """The rates alone, as the library's `audit` event keeps them."""
        return {
            "verdict": self.verdict(),
            "failed": self.failed,
            "seed": self.seed,
            "lines": self.lines,
            "not_applicable": self.not_applicable,
            "rates": {
                c.name: {
                    "side": c.side,
                    "wrong": c.wrong,
                    "probes": c.probes,
                    "ci95": [round(c.low, 4), round(c.high, 4)],
                }
                for c in self.attacks + self.variants
            },
        }


def _pooled(name: str, side: Side, classes: list[ClassRate]) -> ClassRate | None:
    probes = sum(c.probes for c in classes)
    if not probes:
        return None
    wrong = sum(c.wrong for c in classes)
    low, high = wilson_interval(wrong, probes)
    return ClassRate(name, side, probes, wrong, low, high)
