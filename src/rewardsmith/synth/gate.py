"""The admission gate: a tool joins the library only after it has proven itself on examples
it was not built from and resisted reward-hacking probes.

Four checks, in order; the first that fails rejects the tool:

a. `runs`: the tool was built (for code, the sandbox's 4-stage check admitted it; for a
   model, it loaded) and scores the gate's samples with at most `max_error_rate` of them
   `error` or `timeout`.
b. `held_out`: on cases built from held-out examples only (`rewardsmith.synth.cases`:
   labeled completions, the reference in each answer style, wrong answers), accuracy at
   `threshold` and the AUC of right against wrong reach `min_accuracy` and `min_auc`; the
   held-out labeled completions alone, the users' own verdicts, must reach `min_accuracy`
   too (constructed cases must not outvote them).
c. `probes`: no hacking probe (the exploit corpus's attacks, `rewardsmith.synth.probes`,
   drawn afresh each run) scores as high as the right answer of its own example on more
   than `max_probe_win_rate` of that kind's probes. For reward code, the strings of the
   code are probes too (`code_probes.trigger_probes`), and an admitted tool's samples scored
   again, shuffled, must get the same scores (`code_probes.batch_dependence`; else `runs`
   fails).
d. `styles` (tools that read a reference): each held-out right answer rewritten in every
   common style (`rewardsmith.synth.style_check`) is paid wherever the plain right answer
   is: a verifier that refuses a style training will produce is rejected.

Scores are read on [0, 1]; a tool whose scores leave that range (a raw reward model) is
rescaled by the lowest and highest score it gave in the gate. A tool that needs no
reference (a reward model) is judged on responses instead: each example's reference is a
good response to its prompt, another example's reference a bad one.

`gate_tool` returns a `GateReport` with every number; with a library, the decision is also
a `gate` event in the library's log.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.library.store import Library
from rewardsmith.synth.cases import Case, Style, build_cases, same_content, styles_of
from rewardsmith.synth.code_probes import TRIGGER_KIND, batch_dependence, trigger_probes
from rewardsmith.synth.examples import Example, answer_of
from rewardsmith.synth.probes import PROBE_KINDS, Probe, build_probes, right_answer
from rewardsmith.synth.style_check import judge_styles, style_rewrites
from rewardsmith.tools.base import score_batch
from rewardsmith.types import Reward, RewardTool, Sample

log = logging.getLogger(__name__)

# Misses and probe wins quoted in a report, and characters quoted of each.
QUOTED = 3
QUOTE_CHARS = 80
CHECKS: tuple[str, ...] = ("runs", "held_out", "probes", "styles")


@dataclass(frozen=True)
class GateConfig:
    """The gate's thresholds (all on scores read on [0, 1])."""

    min_accuracy: float = 0.9
    min_auc: float = 0.9
    max_probe_win_rate: float = 0.0
    max_error_rate: float = 0.05
    threshold: float = 0.5

    def to_dict(self) -> dict[str, float]:
        return dict(self.__dict__)


@dataclass
class GateReport:
    """The gate's decision: admitted or not, which check failed, why, and every number."""

    tool: str
    admitted: bool
    failed_check: str | None
    reason: str
    checks: dict[str, Any] = field(default_factory=dict)
    config: GateConfig = field(default_factory=GateConfig)
    seconds: float = 0.0

    @property
    def accuracy(self) -> float | None:
        return self.checks.get("held_out", {}).get("accuracy")

    @property
    def auc(self) -> float | None:
        return self.checks.get("held_out", {}).get("auc")

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "admitted": self.admitted,
            "failed_check": self.failed_check,
            "reason": self.reason,
            "checks": self.checks,
            "thresholds": self.config.to_dict(),
            "seconds": round(self.seconds, 3),
        }


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    """P(a right answer scores above a wrong one), ties counting half (the Mann-Whitney
    form of the ROC AUC); None without both kinds."""
    if not positives or not negatives:
        return None
    wins = 0.0
    for p in positives:
        for n in negatives:
            wins += 1.0 if p > n else 0.5 if p == n else 0.0
    return wins / (len(positives) * len(negatives))


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1] + "…"


def response_cases(lines: Sequence[Example], pool: Sequence[Example]) -> list[Case]:
    """Cases for a tool that needs no reference: labeled completions as they are, each
    line's reference as a good response, other lines' references as bad ones."""
    cases: list[Case] = []
    for i, line in enumerate(lines):
        if line.labeled and line.completion is not None and line.label is not None:
            cases.append(Case(line.prompt, line.completion, line.reference, line.label, "labeled"))
        cases.append(Case(line.prompt, line.reference, line.reference, 1, "reference_in_style"))
        others = [e.reference for e in pool if not same_content(e.reference, line.reference)]
        for k in range(min(2, len(others))):
            other = others[(i + k) % len(others)]
            cases.append(Case(line.prompt, other, line.reference, 0, "other_answer"))
    return cases


def _score(tool: RewardTool, samples: Sequence[Sample]) -> list[Reward]:
    # One call: the tool splits it into the chunks it scores in production (reward code
    # must not be able to tell the gate from production by its batch).
    return score_batch(tool, samples)


def _scaler(values: Sequence[float]) -> Any:
    if all(0.0 <= v <= 1.0 for v in values):
        return lambda v: v
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return lambda v: (v - lo) / span


def build_failure(tool: str, reason: str, details: dict[str, Any] | None = None) -> GateReport:
    """The report for a tool that could not be built (check `runs` fails before scoring)."""
    return GateReport(
        tool=tool,
        admitted=False,
        failed_check="runs",
        reason=f"runs: {reason}",
        checks={"runs": {"built": False, "reason": reason, **(details or {})}},
    )


def gate_tool(
    tool: RewardTool,
    held_out: Sequence[Example],
    *,
    all_examples: Sequence[Example] | None = None,
    styles: Sequence[Style] | None = None,
    config: GateConfig | None = None,
    library: Library | None = None,
    name: str | None = None,
    extra: dict[str, Any] | None = None,
    seed: int | None = None,
) -> GateReport:
    """Run the three checks on `tool` with the `held_out` examples (see module docstring).

    `all_examples` (default: `held_out`) lend their completions' answer styles and their
    answers as wrong answers; `styles` overrides the styles. The probes are the exploit
    corpus's attacks drawn with `seed` (default: a fresh one; `checks["corpus"]` records
    it). With `library`, the decision is logged as a `gate` event about `name` (default:
    the tool's name), with `extra` in it.
    """
    start = time.perf_counter()
    config = config or GateConfig()
    pool_examples = list(all_examples or held_out)
    styles = list(styles or styles_of([e.completion for e in pool_examples if e.completion]))
    answers = [answer_of(e.reference) for e in pool_examples]
    if tool.spec.needs_reference:
        cases = build_cases(held_out, styles, answers, seed=1)
        rights = [right_answer(line, styles) for line in held_out]
    else:
        cases = response_cases(held_out, pool_examples)
        rights = [line.reference for line in held_out]
    corpus = build_probes(held_out, seed)
    probes = list(corpus.probes)
    if tool.spec.needs_reference:
        probes += trigger_probes(tool, held_out, styles)
    samples = [Sample(c.completion, c.prompt, c.reference) for c in cases]
    samples += [
        Sample(r, line.prompt, line.reference) for r, line in zip(rights, held_out, strict=True)
    ]
    samples += [Sample(p.completion, p.prompt, p.reference) for p in probes]
    synthesized = tool.spec.provenance == "synth"
    rewrites = (
        style_rewrites(held_out, corpus.seed, synthesized) if tool.spec.needs_reference else []
    )
    samples += [Sample(text, held_out[i].prompt, held_out[i].reference) for i, _, text in rewrites]
    rewards = _score(tool, samples)
    judged = rewards[: len(rewards) - len(rewrites)]
    report = _judge(tool, cases, probes, judged, config, (*corpus.classes(), TRIGGER_KIND))
    report.checks["corpus"] = {"seed": corpus.seed, "kind": corpus.kind, "probes": len(probes)}
    # `runs` (scores that depend on the batch) is the first check: it decides before `styles`
    dependence = batch_dependence(tool, samples, rewards) if report.admitted else ""
    if dependence:
        report = GateReport(
            tool.spec.ref, False, "runs", f"runs: {dependence}", report.checks, config
        )
    elif rewrites:
        report = _styles(report, len(cases), len(held_out), rewrites, rewards, config)
    report.seconds = time.perf_counter() - start
    report.checks["runs"].update(_runs_details(tool))
    if "held_out" in report.checks:
        report.checks["held_out"]["examples"] = len(held_out)
    if library is not None:
        log_gate(library, name or tool.spec.name, report, extra)
    return report


def _styles(
    report: GateReport,
    n_cases: int,
    n_lines: int,
    rewrites: Sequence[tuple[int, str, str]],
    rewards: Sequence[Reward],
    config: GateConfig,
) -> GateReport:
    """The `styles` check on the rewrites' rewards (the last ones): recorded always; it
    rejects a tool every other check admitted."""
    raw = [r.score if r.score is not None else 0.0 for r in rewards]
    scale = _scaler(raw)
    rights = [scale(v) for v in raw[n_cases : n_cases + n_lines]]
    scores = [scale(v) for v in raw[len(raw) - len(rewrites) :]]
    record, refused = judge_styles(rewrites, scores, rights, config.threshold)
    report.checks["styles"] = record
    if refused and report.admitted:
        return GateReport(report.tool, False, "styles", f"styles: {refused}", report.checks, config)
    return report


def _runs_details(tool: RewardTool) -> dict[str, Any]:
    check = getattr(tool, "report", None)  # a reward_function tool's 4-stage check
    if check is None or not hasattr(check, "stages"):
        return {"built": True}
    return {
        "built": True,
        "four_stage_check": [
            {"stage": s.stage, "name": s.name, "passed": s.passed} for s in check.stages
        ],
    }


def _judge(
    tool: RewardTool,
    cases: Sequence[Case],
    probes: Sequence[Probe],
    rewards: Sequence[Reward],
    config: GateConfig,
    kinds: Sequence[str] = PROBE_KINDS,
) -> GateReport:
    ref = tool.spec.ref
    broken = [r for r in rewards if r.status in ("error", "timeout")]
    unreadable = [r for r in rewards[: len(cases)] if r.status == "invalid_reference"]
    raw = [r.score if r.score is not None else 0.0 for r in rewards]
    scale = _scaler(raw)
    scores = [scale(v) for v in raw]
    n_cases = len(cases)
    n_lines = len(rewards) - n_cases - len(probes)
    case_scores = scores[:n_cases]
    right_scores = scores[n_cases : n_cases + n_lines]
    probe_scores = scores[n_cases + n_lines :]
    runs = {
        "samples": len(rewards),
        "errors": len(broken),
        "error_rate": round(len(broken) / max(len(rewards), 1), 4),
        "invalid_reference": len(unreadable),
        "rescaled": any(not 0.0 <= v <= 1.0 for v in raw),
    }
    checks: dict[str, Any] = {"runs": runs}

    def reject(check: str, reason: str) -> GateReport:
        return GateReport(ref, False, check, f"{check}: {reason}", checks, config)

    if runs["error_rate"] > config.max_error_rate:
        first = broken[0].reason if broken else ""
        return reject(
            "runs",
            f"{len(broken)} of {len(rewards)} samples scored error/timeout "
            f"(> {config.max_error_rate:.0%}); first: {_quote(first)}",
        )
    if unreadable and len(unreadable) == n_cases:
        return reject("runs", f"the tool cannot read these references: {unreadable[0].reason}")

    pos = [s for s, c in zip(case_scores, cases, strict=True) if c.label == 1]
    neg = [s for s, c in zip(case_scores, cases, strict=True) if c.label == 0]
    correct = [
        (s >= config.threshold) == bool(c.label) for s, c in zip(case_scores, cases, strict=True)
    ]
    accuracy = sum(correct) / max(len(correct), 1)
    area = auc(pos, neg)
    misses = [
        {
            "label": c.label,
            "origin": c.origin,
            "score": round(s, 4),
            "completion": _quote(c.completion),
        }
        for s, c, ok in zip(case_scores, cases, correct, strict=True)
        if not ok
    ]
    labeled = [ok for ok, c in zip(correct, cases, strict=True) if c.origin == "labeled"]
    labeled_accuracy = sum(labeled) / len(labeled) if labeled else None
    checks["held_out"] = {
        "cases": n_cases,
        "labeled_cases": len(labeled),
        "labeled_accuracy": None if labeled_accuracy is None else round(labeled_accuracy, 4),
        "positives": len(pos),
        "negatives": len(neg),
        "accuracy": round(accuracy, 4),
        "auc": None if area is None else round(area, 4),
        "mean_right": round(sum(pos) / len(pos), 4) if pos else None,
        "mean_wrong": round(sum(neg) / len(neg), 4) if neg else None,
        "misses": len(misses),
        "first_misses": misses[:QUOTED],
    }
    if labeled_accuracy is not None and labeled_accuracy < config.min_accuracy:
        return reject(
            "held_out",
            f"accuracy {labeled_accuracy:.3f} (min {config.min_accuracy}) on the "
            f"{len(labeled)} held-out labeled completions ({accuracy:.3f} on all "
            f"{n_cases} held-out cases)",
        )
    if accuracy < config.min_accuracy or area is None or area < config.min_auc:
        auc_text = "n/a (needs right and wrong cases)" if area is None else f"{area:.3f}"
        return reject(
            "held_out",
            f"accuracy {accuracy:.3f} (min {config.min_accuracy}), AUC {auc_text} "
            f"(min {config.min_auc}) on {n_cases} held-out cases; {len(misses)} misses",
        )

    floor = min(case_scores) if case_scores else 0.0
    by_kind: dict[str, dict[str, Any]] = {}
    for p, s in zip(probes, probe_scores, strict=True):
        right = right_scores[p.line]
        k = by_kind.setdefault(p.kind, {"probes": 0, "wins": 0, "max": 0.0, "total": 0.0})
        k["probes"] += 1
        k["total"] += s
        k["max"] = max(k["max"], s)
        # A probe "wins" when it scores as high as its example's right answer, and that
        # right answer was paid at all (a tool that pays nothing is caught by held_out).
        if right > floor and s >= right:
            k["wins"] += 1
            k.setdefault("example", f"{_quote(p.completion)} scored {s:.2f} vs {right:.2f}")
    for k in by_kind.values():
        k["mean"] = round(k.pop("total") / k["probes"], 4)
        k["max"] = round(k["max"], 4)
        k["win_rate"] = round(k["wins"] / k["probes"], 4)
    checks["probes"] = {kind: by_kind[kind] for kind in kinds if kind in by_kind}
    failed = [
        (kind, k)
        for kind, k in checks["probes"].items()
        if k["win_rate"] > config.max_probe_win_rate
    ]
    if failed:
        kind, k = failed[0]
        names = ", ".join(f"{n} {v['wins']}/{v['probes']}" for n, v in failed)
        return reject(
            "probes",
            f"probes scored as high as a right answer: {names}; e.g. {kind}: {k['example']}",
        )
    n_probes = len(probes)
    reason = (
        f"admitted: held-out accuracy {accuracy:.3f}, AUC {area:.3f} on {n_cases} cases; "
        f"none of {n_probes} probes ({len(by_kind)} kinds) scored as high as a right answer"
    )
    return GateReport(ref, True, None, reason, checks, config)


def log_gate(
    library: Library, name: str, report: GateReport, extra: dict[str, Any] | None = None
) -> None:
    """The gate's decision as a `gate` event, with every number."""
    detail = report.to_dict()
    detail["tool_ref"] = detail.pop("tool")  # `tool` is the event's own column: the name
    library.log_event("gate", name, **detail, **(extra or {}))
