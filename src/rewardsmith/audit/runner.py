"""Run a reward function on the exploit corpus and judge every probe.

`audit_tool(tool, lines)` builds the corpus of the example lines (`rewardsmith.exploits`),
scores every probe with the tool (in chunks, through `score_batch`: a tool that breaks costs
its chunk `error`, never the audit), and judges each probe against the best right answer of
its line (`rewardsmith.audit.report`). A tool that needs no reference, or judges only form
or length (the format and length penalties), is not an answer checker: its report says so
and holds no rates. `log_audit` keeps the rates in the library, as an `audit` event about
the tool and its version; `latest_audit` reads them back (`rewardsmith tools show`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rewardsmith.audit.report import (
    EXAMPLES_PER_CLASS,
    AuditReport,
    ClassRate,
    FailOn,
    Side,
    quote,
)
from rewardsmith.audit.stats import wilson_interval
from rewardsmith.exploits import (
    Corpus,
    ExampleLine,
    Probe,
    build_corpus,
    classes_for,
    corpus_kind,
)
from rewardsmith.library.store import Library
from rewardsmith.tools.base import score_batch
from rewardsmith.types import RefFormat, Reward, RewardTool, Sample

# Samples per scoring call: progress is reported between them.
CHUNK = 64
# Tools of these domains judge form or length, not whether an answer is right.
FORM_DOMAINS = frozenset({"format", "length"})
EPSILON = 1e-9


# Tools whose references are of these formats claim that equal values are equal answers
# (1,000 = 1000, 0.5 = 1/2); others (a dataset's own scorer, free text) are not audited on
# equivalent forms unless asked.
EQUIVALENCE_FORMATS: frozenset[RefFormat] = frozenset({"number", "latex", "choice"})


def default_classes(tool: RewardTool, kind: str, from_file: bool) -> list[str] | None:
    """The corpus classes an audit runs when none are named: all of them, but equivalent
    forms only for tools that claim equivalence (and for files, which may)."""
    if from_file or tool.spec.ref_format in EQUIVALENCE_FORMATS:
        return None
    return [c for c in classes_for(kind) if c != "equivalent"]  # type: ignore[arg-type]


def not_applicable(tool: RewardTool) -> str:
    """Why the corpus does not apply to `tool` ("" when it does)."""
    spec = tool.spec
    if "label_free" in spec.domains:  # `majority_vote`: a group's agreement is its reward
        return "label-free: it pays a group's agreement and never reads a reference"
    if not spec.needs_reference:
        return "needs no reference: it judges the form or length of a completion, not its answer"
    if spec.domains and set(spec.domains) <= FORM_DOMAINS:
        return f"judges {' and '.join(spec.domains)}, not whether an answer is right"
    return ""


def _score(
    tool: RewardTool, probes: Sequence[Probe], progress: Callable[[int], None] | None
) -> list[Reward]:
    out: list[Reward] = []
    for start in range(0, len(probes), CHUNK):
        chunk = probes[start : start + CHUNK]
        out += score_batch(tool, [Sample(p.completion, p.prompt, p.reference) for p in chunk])
        if progress is not None:
            progress(len(chunk))
    return out


def judge_corpus(corpus: Corpus, rewards: Sequence[Reward]) -> list[bool]:
    """For each probe, whether the reward got it wrong (a false pass or a false fail)."""
    scores = [r.score if r.score is not None else 0.0 for r in rewards]
    floor = min([0.0, *scores])
    best: dict[int, float] = {}
    for probe, s in zip(corpus.probes, scores, strict=True):
        if probe.right:
            best[probe.line] = max(best.get(probe.line, s), s)
    wrong = []
    for probe, s in zip(corpus.probes, scores, strict=True):
        top = best.get(probe.line)
        if probe.right:
            assert top is not None
            wrong.append(s <= floor + EPSILON or s < top - EPSILON)
        else:
            wrong.append(s > floor + EPSILON and (top is None or s >= top - EPSILON))
    return wrong


def _rates(
    corpus: Corpus, rewards: Sequence[Reward], wrong: Sequence[bool]
) -> tuple[list[ClassRate], list[ClassRate]]:
    attacks: list[ClassRate] = []
    variants: list[ClassRate] = []
    for name in corpus.classes():
        members = [i for i, p in enumerate(corpus.probes) if p.kind == name]
        bad = [i for i in members if wrong[i]]
        low, high = wilson_interval(len(bad), len(members))
        side: Side = "variant" if corpus.probes[members[0]].right else "attack"
        examples = [
            {
                "form": corpus.probes[i].form,
                "line": corpus.probes[i].line + 1,
                "completion": quote(corpus.probes[i].completion),
                "score": rewards[i].score,
                "reason": quote(rewards[i].reason, 120),
            }
            for i in bad[:EXAMPLES_PER_CLASS]
        ]
        rate = ClassRate(name, side, len(members), len(bad), low, high, examples)
        (variants if side == "variant" else attacks).append(rate)
    return attacks, variants


def audit_tool(
    tool: RewardTool,
    lines: Sequence[ExampleLine],
    *,
    seed: int | None = None,
    classes: Sequence[str] | None = None,
    max_false_pass: float = 0.0,
    fail_on: FailOn = "exploit",
    check_applies: bool = True,
    progress: Callable[[int], None] | None = None,
    target: str | None = None,
) -> AuditReport:
    """Audit `tool` on the corpus of `lines` (see the module docstring). `check_applies`
    False audits a tool whatever its spec says (reward functions from files); `target`
    names it in the report (default: its `name@version`)."""
    start = time.perf_counter()
    if classes is None:
        classes = default_classes(tool, corpus_kind(lines), not check_applies)
    corpus = build_corpus(lines, seed=seed, classes=classes)
    report = AuditReport(
        target=target or tool.spec.ref,
        seed=corpus.seed,
        corpus=corpus.kind,
        lines=len(lines),
        max_false_pass=max_false_pass,
        fail_on=fail_on,
        skipped=list(corpus.skipped),
    )
    reason = not_applicable(tool) if check_applies else ""
    if reason:
        report.not_applicable = reason
        return report
    rewards = _score(tool, corpus.probes, progress)
    report.errors = sum(r.status in ("error", "timeout") for r in rewards)
    report.attacks, report.variants = _rates(corpus, rewards, judge_corpus(corpus, rewards))
    report.seconds = time.perf_counter() - start
    return report


def log_audit(library: Library, name: str, version: int | None, report: AuditReport) -> None:
    """The audit's rates as an `audit` event about `name` (its `version` in the detail)."""
    library.log_event("audit", name, version=version, tool_ref=report.target, **report.summary())


def latest_audit(library: Library, name: str, version: int) -> dict[str, Any] | None:
    """The detail of the last `audit` event about `name@version`, or None."""
    for event in reversed(library.history(name, kind="audit")):
        if event.detail.get("version") == version:
            return dict(event.detail)
    return None
