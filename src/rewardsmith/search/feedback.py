"""What the generator is told before each round: the ranking summary of earlier rounds.

`Feedback` holds it as data (the offline generator chooses parents from `ranking`) and
`render()` writes it as Markdown (the LLM generator's prompt quotes it whole; the run keeps
it in `feedback/round_N.md`). It has:

- the ranking of every admitted candidate so far, best first, with its metrics at each
  fidelity level it reached (proxy separation, probe payout, fitness; GRPO F1, accuracy and
  their 95% CIs, steps) and what it rewards;
- per-component training statistics of each GRPO run: the mean of every reward component,
  accuracy and completion length over the first and the last fifth of the steps (a reward
  that rises while accuracy does not is a warning sign);
- the rejected candidates with the stage and the reason the 4-stage check gave;
- every name used so far (new candidates must not reuse one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rewardsmith.search.metrics import GRPOMetrics
from rewardsmith.search.results import CandidateRecord, ranked

#: Ranked candidates shown in full; the rest are counted.
SHOWN = 15
#: Characters of a rejection reason shown.
REASON_CHARS = 200
_KEYS = ("accuracy", "completion_length", "truncated")


@dataclass
class Feedback:
    """The state of the search before round `round` (see the module docstring)."""

    round: int
    ranking: list[CandidateRecord] = field(default_factory=list)
    rejected: list[CandidateRecord] = field(default_factory=list)
    names_used: list[str] = field(default_factory=list)
    descriptions: dict[str, str] = field(default_factory=dict)
    #: GRPO with the base rewards alone, per step budget (`{"60": GRPOMetrics}`).
    baseline: dict[str, GRPOMetrics] = field(default_factory=dict)

    @classmethod
    def build(
        cls, round_no: int, records: Sequence[CandidateRecord], descriptions: dict[str, str]
    ) -> Feedback:
        earlier = [r for r in records if r.round < round_no]
        return cls(
            round=round_no,
            ranking=[r for r in ranked(earlier) if r.admitted],
            rejected=[r for r in earlier if r.admitted is False],
            names_used=sorted(r.name for r in records),
            descriptions=descriptions,
        )

    def render(self, shown: int = SHOWN) -> str:
        """The Markdown the generator is told (see the module docstring); `shown` ranked
        candidates, training statistics and rejections at most (a small model's context
        gets fewer)."""
        lines = [f"# Ranking summary before round {self.round}", ""]
        if not self.ranking and not self.rejected:
            lines += ["No candidates yet: this is the first round.", ""]
        for steps, m in sorted(self.baseline.items(), key=lambda kv: int(kv[0])):
            lines.append(
                f"Base rewards alone after {steps} GRPO steps: F1 {m.f1:.3f}, accuracy "
                f"{m.accuracy:.3f} (a candidate helps when it beats this)."
            )
        if self.baseline:
            lines.append("")
        if self.ranking:
            lines += [
                "## Admitted candidates, best first",
                "",
                "Ranked by held-out F1 after GRPO with the base rewards plus the candidate "
                "(candidates judged only by the proxy come after, by proxy fitness = "
                "separation - probe payout - wrong payout - misdirection; misdirection: the "
                "candidate pays a wrong answer above the right one in the same response, or, "
                "with every answer wrong, prefers how wrong responses are written).",
                "",
                "| rank | name | round | GRPO F1 [95% CI] | accuracy | steps | proxy separation | probe payout | wrong payout | misdirection | rewards |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for i, r in enumerate(self.ranking[:shown], 1):
                lines.append(
                    f"| {i} | {r.name} | {r.round} | {r.f1_text()} | "
                    f"{_num(r.grpo.accuracy if r.grpo else None)} | "
                    f"{r.grpo.steps if r.grpo else '-'} | "
                    f"{_num(r.proxy.separation if r.proxy else None)} | "
                    f"{_num(r.proxy.probe_payout if r.proxy else None)} | "
                    f"{_num(r.proxy.wrong_payout if r.proxy else None)} | "
                    f"{_num(r.proxy.misdirection if r.proxy else None)} | "
                    f"{_cell(self.descriptions.get(r.name, r.origin))} |"
                )
            if len(self.ranking) > shown:
                lines.append(f"\n({len(self.ranking) - shown} lower-ranked candidates not shown.)")
            lines.append("")
        trained = [r for r in self.ranking if r.grpo and r.grpo.training]
        if trained:
            lines += [
                "## Training statistics (mean over the first -> last fifth of the GRPO steps)",
                "",
            ]
            for r in trained[:shown]:
                assert r.grpo is not None
                stats = r.grpo.training
                parts = [
                    f"{key.removeprefix('reward/')} {v['first']:.3g} -> {v['last']:.3g}"
                    for key, v in stats.items()
                    if key.startswith("reward/") or key in _KEYS
                ]
                lines.append(f"- {r.name}: " + "; ".join(parts))
            lines.append("")
        if self.rejected:
            lines += ["## Rejected by the 4-stage check (stage: reason)", ""]
            for r in self.rejected[-max(shown, 3) :]:
                reason = (
                    r.reason if len(r.reason) <= REASON_CHARS else r.reason[:REASON_CHARS] + "..."
                )
                # The check's reasons already start with "stage N (name): ".
                said = reason.startswith(f"stage {r.stage}")
                lines.append(
                    f"- {r.name} (round {r.round}): {'' if said else f'stage {r.stage}: '}{reason}"
                )
            lines.append("")
        if self.names_used:
            lines += ["## Names already used", "", ", ".join(self.names_used), ""]
        return "\n".join(lines)


def _num(value: float | None) -> str:
    """A metric with 3 decimals; `-` when not measured."""
    return "-" if value is None else f"{value:.3f}"


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")
