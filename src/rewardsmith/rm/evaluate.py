"""Reward-model evaluation: pairwise accuracy, best-of-4 and best-of-N (`rewardsmith rm eval`).

Formats read (detected per file):

- **LLMBar** (`.json` array of `{input, output_1, output_2, label}`, label 1 or 2 names the
  better output): pairwise accuracy.
- **HH-RLHF** (`{chosen, rejected}` whole dialogues, `.jsonl[.gz]`): the prompt is the
  dialogue up to the last `Assistant:` turn, the two completions are the final turns.
- **RewardBench** rows (`{prompt, chosen, rejected}`; `chosen` / `rejected` a string or a
  list): a row counts only if its chosen completion beats *every* rejected one, which for
  RewardBench-2 rows (1 chosen, 3 rejected) is the best-of-4 rule (Malik et al. 2025).
  Optional `group` (rows of one problem: resampled together) and `kind` (reported apart as
  `NAME/KIND` too), as `rm pairs` writes them (`rm.pairsets`).
- **Best-of-N** files (`{question, response: [N], score: [N] bools}`, as
  `math/qwen25_math_cot_100_8samples.jsonl`): pick the highest-scored of the N responses per
  problem; reported beside a uniformly random pick (its expected accuracy), majority vote
  over the file's extracted answers (`pred`), the oracle (any correct), and the file's own
  reward-model scores (`pred_score`, Qwen2.5-Math-RM-72B) when present. The same file also
  gives *math pairs*: every (correct, incorrect) pair of responses to one problem.

Ties (equal scores) count as wrong in every pairwise metric: a model that scores everything
the same must not get 50%. Each distinct (prompt, completion) is scored once.

Intervals: rows of one group are resampled together (the math pairs of one problem share
its responses, so 128 pairs from 10 problems are 10 independent units); other rows are
their own group. `compare_outcomes` gives the paired difference of two models on the same
rows, its interval, and a sign test over groups.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rewardsmith.errors import InputError
from rewardsmith.jsonl import read_jsonl

ScoreFn = Callable[[Sequence[str], Sequence[str]], list[float]]
BOOTSTRAP_RESAMPLES = 2000
_HH_ASSISTANT = "\n\nAssistant:"


@dataclass(frozen=True)
class PrefRow:
    """One preference item: a prompt, its chosen completion(s) and rejected completion(s)."""

    prompt: str
    chosen: tuple[str, ...]
    rejected: tuple[str, ...]
    #: Rows of one group are not independent (the math pairs of one problem); "" = own group.
    group: str = ""
    #: A subset reported on its own as well (`rm.pairsets`: "final", "step"); "" = none.
    kind: str = ""


@dataclass(frozen=True)
class BestOfNRow:
    """One problem with N responses, their correctness and optional extra columns."""

    prompt: str
    responses: tuple[str, ...]
    correct: tuple[bool, ...]
    answers: tuple[str, ...] = ()
    reference_scores: tuple[float, ...] = ()


@dataclass
class EvalSet:
    """A named evaluation set read from one file."""

    name: str
    kind: str  # "pairwise", "best_of_4" or "best_of_n"
    pref: list[PrefRow] = field(default_factory=list)
    bon: list[BestOfNRow] = field(default_factory=list)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = read_jsonl(path, allow_array=True)  # LLMBar files are arrays
    if not rows:
        raise InputError(f"{path}: expected JSON objects (a JSON array or JSONL), found none")
    return rows


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        return list(ast.literal_eval(value))  # the Qwen file stores some lists as strings
    return list(value) if isinstance(value, list | tuple) else [value]


def _split_hh(dialogue: str) -> tuple[str, str]:
    cut = dialogue.rfind(_HH_ASSISTANT)
    if cut < 0:
        raise InputError("HH-RLHF dialogue without an 'Assistant:' turn")
    end = cut + len(_HH_ASSISTANT)
    return dialogue[:end].strip(), dialogue[end:].strip()


def _bon_row(row: dict[str, Any]) -> BestOfNRow:
    responses = [str(r) for r in _as_list(row["response"])]
    correct = [bool(s) for s in _as_list(row["score"])]
    if len(responses) != len(correct):
        raise InputError("best-of-N row: response and score lists differ in length")
    answers = [str(a).strip() for a in _as_list(row["pred"])] if "pred" in row else []
    ref: list[float] = []
    if "pred_score" in row:
        ref = [float(_as_list(v)[0]) for v in _as_list(row["pred_score"])]
    return BestOfNRow(
        prompt=str(row.get("question") or row.get("problem") or row.get("prompt") or ""),
        responses=tuple(responses),
        correct=tuple(correct),
        answers=tuple(answers) if len(answers) == len(responses) else (),
        reference_scores=tuple(ref) if len(ref) == len(responses) else (),
    )


def load_eval_set(path: str | Path, limit: int | None = None) -> EvalSet:
    """Read one evaluation file (format detected from its first row); `limit` keeps the first
    `limit` rows (a deterministic subset)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"evaluation file {path} does not exist")
    rows = _read_rows(path)[:limit]
    first = rows[0]
    name = path.name.split(".")[0]
    try:
        if {"output_1", "output_2", "label"} <= first.keys():
            pref = []
            for r in rows:
                good, bad = (
                    (r["output_1"], r["output_2"])
                    if int(r["label"]) == 1
                    else (r["output_2"], r["output_1"])
                )
                pref.append(PrefRow(r["input"], (good,), (bad,)))
            return EvalSet(name, "pairwise", pref=pref)
        if {"response", "score"} <= first.keys():
            return EvalSet(name, "best_of_n", bon=[_bon_row(r) for r in rows])
        if {"chosen", "rejected"} <= first.keys():
            if "prompt" in first:
                pref = [
                    PrefRow(
                        str(r["prompt"]),
                        tuple(_as_list(r["chosen"])),
                        tuple(_as_list(r["rejected"])),
                        group=str(r.get("group") or ""),
                        kind=str(r.get("kind") or ""),
                    )
                    for r in rows
                ]
                multi = any(len(p.rejected) > 1 or len(p.chosen) > 1 for p in pref)
                return EvalSet(name, "best_of_4" if multi else "pairwise", pref=pref)
            pref = []
            for r in rows:
                prompt, good = _split_hh(r["chosen"])
                prompt_r, bad = _split_hh(r["rejected"])
                pref.append(PrefRow(prompt, (good,), (bad,)))
            return EvalSet(name, "pairwise", pref=pref)
    except (KeyError, TypeError, ValueError, SyntaxError) as exc:
        raise InputError(f"{path}: malformed row: {exc}") from exc
    raise InputError(
        f"{path}: unknown format; expected LLMBar {{input, output_1, output_2, label}}, "
        "HH-RLHF {chosen, rejected}, RewardBench {prompt, chosen, rejected} or best-of-N "
        "{question, response, score}"
    )


class _Cache:
    """Scores each distinct (prompt, completion) once, in one batched call."""

    def __init__(self, score_fn: ScoreFn) -> None:
        self.score_fn = score_fn
        self.values: dict[tuple[str, str], float] = {}

    def fill(self, items: Sequence[tuple[str, str]]) -> None:
        todo = list(dict.fromkeys(i for i in items if i not in self.values))
        if todo:
            scores = self.score_fn([p for p, _ in todo], [c for _, c in todo])
            self.values.update(zip(todo, scores, strict=True))

    def __getitem__(self, item: tuple[str, str]) -> float:
        return self.values[item]


@dataclass(frozen=True)
class Outcomes:
    """Per-row wins of one model on one set, with the group each row belongs to."""

    wins: tuple[bool, ...]
    groups: tuple[str, ...]

    @property
    def accuracy(self) -> float:
        return sum(self.wins) / len(self.wins) if self.wins else float("nan")


def pairwise_outcomes(rows: Sequence[PrefRow], score_fn: ScoreFn) -> Outcomes:
    """Per row: does every chosen completion beat every rejected one (strictly)?"""
    cache = _Cache(score_fn)
    cache.fill([(r.prompt, c) for r in rows for c in r.chosen + r.rejected])
    wins = tuple(
        min(cache[(r.prompt, c)] for c in r.chosen) > max(cache[(r.prompt, c)] for c in r.rejected)
        for r in rows
    )
    return Outcomes(wins, tuple(r.group or f"row {i}" for i, r in enumerate(rows)))


def pairwise_accuracy(rows: Sequence[PrefRow], score_fn: ScoreFn) -> dict[str, float]:
    """Share of rows whose every chosen completion beats every rejected one (strictly)."""
    return {"accuracy": pairwise_outcomes(rows, score_fn).accuracy, "n": len(rows)}


def math_pairs(rows: Sequence[BestOfNRow]) -> list[PrefRow]:
    """Every (correct, incorrect) pair of responses to the same problem (one group each)."""
    out = []
    for i, r in enumerate(rows):
        good = [x for x, ok in zip(r.responses, r.correct, strict=True) if ok]
        bad = [x for x, ok in zip(r.responses, r.correct, strict=True) if not ok]
        out += [PrefRow(r.prompt, (g,), (b,), group=f"problem {i}") for g in good for b in bad]
    return out


def _argmax(values: Sequence[float]) -> int:
    return max(range(len(values)), key=lambda i: (values[i], -i))


def best_of_n(rows: Sequence[BestOfNRow], score_fn: ScoreFn | None) -> dict[str, float]:
    """Accuracy of the response each selector picks per problem (see the module doc), each
    with a 95% bootstrap interval over problems (`SELECTOR_ci_low` / `_ci_high`), and the
    paired differences `model_minus_random` / `model_minus_majority` (per problem: the
    model's pick minus the other selector's, also with intervals over problems).

    `score_fn=None` gives only the baselines (random, majority, oracle, reference RM).
    """
    n = len(rows)
    picks: dict[str, list[float]] = {
        "random": [sum(r.correct) / len(r.correct) for r in rows],  # its expected accuracy
        "oracle": [float(any(r.correct)) for r in rows],
    }
    if all(r.answers for r in rows):
        majority = []
        for r in rows:
            counts = Counter(r.answers)
            top = max(counts.values())
            pick = next(i for i, a in enumerate(r.answers) if counts[a] == top)  # first on ties
            majority.append(float(r.correct[pick]))
        picks["majority"] = majority
    if all(r.reference_scores for r in rows):
        picks["reference_rm"] = [float(r.correct[_argmax(r.reference_scores)]) for r in rows]
    if score_fn is not None:
        cache = _Cache(score_fn)
        cache.fill([(r.prompt, x) for r in rows for x in r.responses])
        picks["model"] = [
            float(r.correct[_argmax([cache[(r.prompt, x)] for x in r.responses])]) for r in rows
        ]
        for other in ("random", "majority"):
            if other in picks:
                picks[f"model_minus_{other}"] = [
                    a - b for a, b in zip(picks["model"], picks[other], strict=True)
                ]
    out: dict[str, float] = {"n": n}
    for name, values in picks.items():
        out[name] = sum(values) / n
        if n > 1:
            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = _group_bootstrap(values, [1] * n)
    return out


def evaluate_sets(
    sets: Sequence[EvalSet],
    score_fn: ScoreFn,
    outcomes: dict[str, Outcomes] | None = None,
) -> dict[str, dict[str, float]]:
    """Metrics per set: `NAME` (pairwise), `NAME/best_of_4` (RewardBench rows with several
    rejected), and for a best-of-N file `NAME/pairs` (its math pairs) and `NAME/best_of_n`.

    Pairwise metrics carry `groups` (independent units) and, with more than one group, a 95%
    bootstrap interval over groups (`ci_low`, `ci_high`). `outcomes`, when given, receives the
    per-row wins of every pairwise metric (what `compare_outcomes` needs).
    """
    results: dict[str, dict[str, float]] = {}
    for s in sets:
        if s.kind == "best_of_n":
            key, rows = f"{s.name}/pairs", math_pairs(s.bon)
            results[f"{s.name}/best_of_n"] = best_of_n(s.bon, score_fn)
        else:
            key, rows = (f"{s.name}/best_of_4" if s.kind == "best_of_4" else s.name), s.pref
        got = pairwise_outcomes(rows, score_fn)
        results[key] = {"accuracy": got.accuracy, "n": len(rows), **accuracy_interval(got)}
        if outcomes is not None:
            outcomes[key] = got
        for kind in dict.fromkeys(r.kind for r in rows if r.kind):
            keep = [i for i, r in enumerate(rows) if r.kind == kind]
            part = Outcomes(tuple(got.wins[i] for i in keep), tuple(got.groups[i] for i in keep))
            results[f"{key}/{kind}"] = {
                "accuracy": part.accuracy,
                "n": len(keep),
                **accuracy_interval(part),
            }
            if outcomes is not None:
                outcomes[f"{key}/{kind}"] = part
    return results


def _by_group(*runs: Outcomes) -> tuple[list[str], list[list[int]], list[int]]:
    """Group names, wins per group for each run, and rows per group."""
    names = list(dict.fromkeys(runs[0].groups))
    index = {g: i for i, g in enumerate(names)}
    sizes = [0] * len(names)
    for g in runs[0].groups:
        sizes[index[g]] += 1
    wins = []
    for run in runs:
        if run.groups != runs[0].groups:
            raise InputError("outcomes to compare must cover the same rows")
        per = [0] * len(names)
        for g, w in zip(run.groups, run.wins, strict=True):
            per[index[g]] += w
        wins.append(per)
    return names, wins, sizes


def _group_bootstrap(values: Sequence[float], sizes: Sequence[int]) -> tuple[float, float]:
    """95% percentile interval of sum(values) / sum(sizes), resampling whole groups."""
    import numpy as np
    from scipy.stats import bootstrap

    res = bootstrap(
        (np.asarray(values, dtype=float), np.asarray(sizes, dtype=float)),
        lambda v, n, axis=-1: v.sum(axis=axis) / n.sum(axis=axis),
        paired=True,
        vectorized=True,
        n_resamples=BOOTSTRAP_RESAMPLES,
        method="percentile",
        random_state=0,
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def accuracy_interval(run: Outcomes) -> dict[str, float]:
    """`groups` and a 95% bootstrap interval of the accuracy over groups (rows of one problem
    stay together: 128 math pairs from 10 problems are 10 units, not 128)."""
    _, (wins,), sizes = _by_group(run)
    out: dict[str, float] = {"groups": len(sizes)}
    if len(sizes) > 1:
        out["ci_low"], out["ci_high"] = _group_bootstrap(wins, sizes)
    return out


def compare_outcomes(a: Outcomes, b: Outcomes) -> dict[str, float]:
    """How model `a` differs from model `b` on the same rows.

    `difference`: accuracy of a minus accuracy of b, with a 95% bootstrap interval over
    groups; `groups_better` / `groups_worse` / `groups_tied`: groups where a wins more / fewer
    / as many rows; `sign_test_p`: two-sided binomial test of better vs worse groups.
    """
    from scipy.stats import binomtest

    _, (wa, wb), sizes = _by_group(a, b)
    diffs = [x - y for x, y in zip(wa, wb, strict=True)]
    better = sum(d > 0 for d in diffs)
    worse = sum(d < 0 for d in diffs)
    out: dict[str, float] = {
        "difference": sum(diffs) / sum(sizes) if sizes else float("nan"),
        "groups": len(sizes),
        "groups_better": better,
        "groups_worse": worse,
        "groups_tied": len(sizes) - better - worse,
        "sign_test_p": binomtest(better, better + worse).pvalue if better + worse else 1.0,
    }
    if len(sizes) > 1:
        out["ci_low"], out["ci_high"] = _group_bootstrap(diffs, sizes)
    return out


def random_scores(seed: int = 0) -> ScoreFn:
    """A score function drawing uniform noise: the chance level of every metric."""
    rng = random.Random(seed)

    def fn(prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
        return [rng.random() for _ in prompts]

    return fn
