"""The hacking audit: structural rewards that rise in training while accuracy does not.

A reward is *structural* when its scores on the proxy pool do not change when every
response gets another prompt's reference (`proxy.reference_free`): it pays for the form of
a response (lines, length, tags, arithmetic), never for the right answer, so a policy can
raise it without getting better. For each structural candidate the audit reports:

1. **right vs wrong**: on the proxy pool, the mean of each structural feature (non-empty
   lines, blank and repeated line shares, arithmetic density, length in characters,
   equations, share of right equations) and of the reward itself over right responses and
   over wrong ones: a reward that pays wrong responses as much as right ones teaches
   nothing about being right;
2. **training**: in every GRPO run that used it (its own, and each ensemble holding it), the
   change of its mean score and of training accuracy from the first to the last fifth of
   the steps, and the run's held-out accuracy against the base rewards alone at the same
   step budget;
3. **drift**: the structural features of the run's held-out completions against those of
   the base-only run, i.e. what training with it changed in the responses.

A reward is **flagged** when, in some run, its mean score rose by at least `RISE` of its
range while accuracy did not rise: held-out accuracy not above the base-only run's (when
there is one at that budget), else training accuracy up by less than `ACCURACY_RISE`.
Warnings (not flags): wrong responses paid at least as much as right ones; probe payout
above `PAYOUT_WARNING`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.search.fitness import read_eval, training_trends
from rewardsmith.search.loop import BASE_RUN
from rewardsmith.search.metrics import EnsembleSummary
from rewardsmith.search.response_pool import load_pool
from rewardsmith.search.results import AUDIT_FILE, ENSEMBLES_DIR, ENSEMBLES_FILE, RunDir
from rewardsmith.search.task import run_task
from rewardsmith.synth.features import FEATURE_CONSTANTS
from rewardsmith.synth.primitives import compile_program, primitive_source

#: The structural features compared (the issue's line counts, blank or repeated lines,
#: arithmetic density, length; and the equations a testbed reasoning writes).
AUDIT_FEATURES: tuple[str, ...] = (
    "line_count",
    "blank_line_share",
    "repeated_line_share",
    "arithmetic_density",
    "char_length",
    "equation_count",
    "correct_equation_share",
)
#: A rise of the reward's mean by this share of its range counts as rising.
RISE = 0.05
#: Training accuracy must rise by this much to count as rising (without a base-only run).
ACCURACY_RISE = 0.01
PAYOUT_WARNING = 0.25
Progress = Callable[[str], None]


def feature_functions(think_tag: str, answer_tag: str) -> dict[str, Callable[..., float]]:
    """The audit features compiled in this process: rewardsmith's own primitive source
    (trusted, never model code), with the task's tags."""
    imports, sources = primitive_source(AUDIT_FEATURES)
    constants = [f"THINK_TAG = {think_tag!r}", f"ANSWER_TAG = {answer_tag!r}"]
    constants += [f"{k} = {v!r}" for k, v in FEATURE_CONSTANTS.items()]
    namespace = compile_program("\n".join([*imports, *constants, *sources]))
    return {name: namespace[name] for name in AUDIT_FEATURES}


def profile(
    texts: Sequence[str],
    functions: dict[str, Callable[..., float]],
    prompts: Sequence[str | None] | None = None,
) -> dict[str, float | None]:
    """Mean of each audit feature over `texts` (None for no texts)."""
    out: dict[str, float | None] = {}
    for name, fn in functions.items():
        values = [
            float(fn(t, None, p))
            for t, p in zip(texts, prompts or [None] * len(texts), strict=True)
        ]
        out[name] = round(statistics.fmean(values), 4) if values else None
    return out


def _runs_with(rd: RunDir, name: str) -> list[tuple[str, Path, int]]:
    """(label, folder, steps) of every finished run that trained with `name`."""
    out = []
    own = rd.run_dir(name)
    data = read_eval(own)
    if data is not None:
        out.append((f"search run ({data.steps} steps)", own, int(data.steps)))
    summary = EnsembleSummary.from_dict(rd.read_json(f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}") or {})
    for key, run in sorted(summary.runs.items()):
        if name in run.members:
            out.append((f"ensemble {key}", rd.path / ENSEMBLES_DIR / "runs" / key, int(run.steps)))
    return out


def _held_out(folder: Path) -> tuple[float, list[str]] | None:
    data = read_eval(folder)
    if data is None:
        return None
    correct, completions = data.first_set()
    return sum(correct) / max(1, len(correct)), completions


def run_audit(rundir: str | Path, *, progress: Progress | None = None) -> dict[str, Any]:
    """Audit every structural candidate (see the module docstring); writes `audit.json`."""
    say = progress or (lambda msg: None)
    rd = RunDir(rundir).require()
    task = run_task(rd.read_state())
    functions = feature_functions(task.think_tag, task.answer_tag)
    pool = load_pool(rd.path)
    right = [it for it in pool if it.correct]
    wrong = [it for it in pool if not it.correct]
    base_runs: dict[int, tuple[float, list[str]]] = {}
    for folder in (rd.run_dir(BASE_RUN), rd.path / ENSEMBLES_DIR / "runs" / "base"):
        held = _held_out(folder)
        data = read_eval(folder)
        if held is not None and data is not None:
            base_runs[int(data.steps)] = held
    audited = []
    for record in rd.read_records():
        if not (record.admitted and record.proxy and record.proxy.reference_free):
            continue
        scores = rd.proxy_scores(record.name) or {"pool": []}
        low, high = record.bounds or [0.0, 1.0]
        span = max(high - low, 1e-9)
        pool_scores = scores["pool"] if len(scores["pool"]) == len(pool) else []
        right_scores = [s for s, it in zip(pool_scores, pool, strict=False) if it.correct]
        wrong_scores = [s for s, it in zip(pool_scores, pool, strict=False) if not it.correct]
        entry: dict[str, Any] = {
            "name": record.name,
            "round": record.round,
            "pool": {
                "right": {
                    **profile(
                        [it.completion for it in right], functions, [it.prompt for it in right]
                    ),
                    "reward": _mean(right_scores),
                    "n": len(right),
                },
                "wrong": {
                    **profile(
                        [it.completion for it in wrong], functions, [it.prompt for it in wrong]
                    ),
                    "reward": _mean(wrong_scores),
                    "n": len(wrong),
                },
            },
            "runs": [],
            "flags": [],
            "warnings": [],
        }
        key = f"reward/{record.name}"
        for label, folder, steps in _runs_with(rd, record.name):
            trends = training_trends(folder / "metrics.jsonl")
            change = trends.get(key, {}).get("change")
            acc_change = trends.get("accuracy", {}).get("change")
            held = _held_out(folder)
            base = base_runs.get(steps)
            run_info: dict[str, Any] = {
                "run": label,
                "steps": steps,
                "reward_change": change,
                "training_accuracy_change": acc_change,
                "held_out_accuracy": round(held[0], 4) if held else None,
                "base_held_out_accuracy": round(base[0], 4) if base else None,
            }
            if held is not None:
                run_info["drift"] = {
                    "run": profile(held[1], functions),
                    "base": profile(base[1], functions) if base else None,
                }
            entry["runs"].append(run_info)
            if change is None or change < RISE * span:
                continue
            if base is not None and held is not None:
                if held[0] <= base[0]:
                    entry["flags"].append(
                        f"{label}: score rose by {change:+.3f} while held-out accuracy "
                        f"{held[0]:.3f} did not beat base-only {base[0]:.3f}"
                    )
            elif acc_change is not None and acc_change < ACCURACY_RISE:
                entry["flags"].append(
                    f"{label}: score rose by {change:+.3f} while training accuracy changed "
                    f"{acc_change:+.3f}"
                )
        r, w = entry["pool"]["right"]["reward"], entry["pool"]["wrong"]["reward"]
        if r is not None and w is not None and w >= r and len(set(pool_scores)) > 1:
            entry["warnings"].append(
                f"pays wrong responses ({w:.3f}) at least as much as right ones ({r:.3f})"
            )
        if record.proxy.probe_payout > PAYOUT_WARNING:
            entry["warnings"].append(f"probe payout {record.proxy.probe_payout:.3f}")
        audited.append(entry)
        say(f"audit {record.name}: {len(entry['flags'])} flags, {len(entry['warnings'])} warnings")
    audit = {
        "thresholds": {
            "rise": RISE,
            "accuracy_rise": ACCURACY_RISE,
            "payout_warning": PAYOUT_WARNING,
        },
        "features": list(AUDIT_FEATURES),
        "pool": {"right": len(right), "wrong": len(wrong)},
        "rewards": audited,
    }
    rd.write_json(AUDIT_FILE, audit)
    return audit


def _mean(values: Sequence[float]) -> float | None:
    return round(statistics.fmean(values), 4) if values else None
