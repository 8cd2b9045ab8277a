"""The router's conditional logit (McFadden 1974): one weight vector shared by all
alternatives (each candidate tool, and "synthesize"), a feature row per alternative,
softmax over the rows.

Tool rows read how the tool fits the group: similarity of the prompt to the tool's
exemplars, whether the tool reads the reference's format (and exactly), the markers its
description names, the `task` field, and *content* evidence for the tool's kind of task:
for translation tools, a passage in another language than the reference's, of about its
length (and, against, a reference in the prompt's own language); for choice tools, a
reference naming one of the options the prompt lists; for math-verify tools, mathematical
notation in the prompt; for number tools, an everyday story with quantities; for every tool, whether the completions answer in the form it
grades. The synthesize row reads what says "no library tool": similarity to
out-of-library exemplars, a dialogue, no or free-text reference, a prompt not in English,
a free-text reference in the prompt's own language, and (negatively) the best tool
similarity.

Weights are fitted by `fit_weights` (maximum likelihood with an L2 pull toward the
current weights); the defaults were fitted by `rewardsmith bench routing --fit` on the
bench's fit splits (see docs/router.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rewardsmith.router.defaults import load_defaults
from rewardsmith.router.evidence import GroupEvidence
from rewardsmith.router.features import NON_LATIN_LIMIT, RefFormat, can_grade

FEATURES: tuple[str, ...] = (
    # tool rows
    "sim",  # max cosine similarity to the tool's exemplars
    "log_compat",  # log of format compatibility
    "markers",  # share of the tool's markers present in prompt/completion/reference
    "task_match",  # the task field names the tool
    "ref_none_tool",  # the tool reads no reference (format checks) and none was given
    "fmt_exact",  # the tool expects exactly this reference format
    "crosslingual",  # translation tools: a passage in another language, of the reference's length
    "same_language",  # translation tools: the reference is in the prompt's own language
    "option_label",  # choice tools: the reference names one of the prompt's listed options
    "math_notation",  # math-verify (LaTeX) tools: mathematics in the prompt
    "word_problem",  # number tools: an everyday story with quantities in the prompt
    "completion_fit",  # the completions answer in the form the tool grades
    # the synthesize row
    "synth_bias",
    "synth_sim",  # max cosine similarity to out-of-library exemplars
    "dialogue",
    "empty_prompt",
    "non_latin",
    "ref_none",
    "ref_free_text",
    "best_sim",  # the best tool similarity (low: nothing in the library looks like this)
    "foreign_prompt",  # the prompt's main language is not English (MiniLM reads English)
    "open_answer",  # a free-text reference in the prompt's own language
)
INDEX: Mapping[str, int] = {name: i for i, name in enumerate(FEATURES)}
# What the router reads of a group's content (beyond format, markers and embeddings); the
# bench's "markers" baseline zeroes these.
CONTENT_FEATURES = frozenset(
    {
        "crosslingual",
        "same_language",
        "option_label",
        "math_notation",
        "word_problem",
        "completion_fit",
        "foreign_prompt",
        "open_answer",
    }
)
# Where the fit of the defaults starts (set by hand: the earlier router's fitted weights and
# a guess for each content feature). The defaults themselves are fitted from here.
INITIAL_WEIGHTS: dict[str, float] = {
    "sim": 4.2036,
    "log_compat": 2.2587,
    "markers": 5.5079,
    "task_match": 2.0,  # set by hand: the fit split has no task fields
    "ref_none_tool": -2.1847,
    "fmt_exact": 2.171,
    "crosslingual": 3.0,
    "same_language": -3.0,
    "option_label": 2.0,
    "math_notation": 1.0,
    "word_problem": 1.0,
    "completion_fit": 1.0,
    "synth_bias": -0.3322,
    "synth_sim": 3.6529,
    "dialogue": 1.1228,
    "empty_prompt": 2.0,  # set by hand: the fit split has no empty prompts
    "non_latin": 2.0,  # set by hand: the fit split has no non-Latin prompts
    "ref_none": 2.1847,
    "ref_free_text": 3.9721,
    "best_sim": -3.3264,
    "foreign_prompt": 1.0,
    "open_answer": 2.0,
}
# The defaults: fitted by bench/fit_router_defaults.py on the fit splits of the main and the
# hard bench (router/defaults.json, see docs/router.md); `route fit` on a user's labeled
# data refits them in that user's library.
DEFAULT_WEIGHTS: dict[str, float] = {**INITIAL_WEIGHTS, **load_defaults().get("weights", {})}
# Features no fit split shows; `fit_weights` keeps them at their starting values.
HAND_SET = frozenset({"task_match", "empty_prompt", "non_latin"})


def tool_row(
    fmt: RefFormat,
    tool_markers: frozenset[str],
    domains: Sequence[str],
    sim: float,
    task_match: bool,
    ev: GroupEvidence,
) -> list[float] | None:
    """A tool's feature row for a group, or None when the tool cannot read its reference."""
    f = ev.features
    compat = can_grade(fmt, tool_markers, f)
    if compat <= 0.0:
        return None
    row = [0.0] * len(FEATURES)
    row[INDEX["sim"]] = sim
    row[INDEX["log_compat"]] = math.log(compat)
    if tool_markers:
        row[INDEX["markers"]] = len(tool_markers & ev.seen_markers) / len(tool_markers)
    row[INDEX["task_match"]] = 1.0 if task_match else 0.0
    row[INDEX["ref_none_tool"]] = 1.0 if fmt == "none" and f.ref_format == "none" else 0.0
    row[INDEX["fmt_exact"]] = 1.0 if fmt == f.ref_format and fmt != "none" else 0.0
    lang = ev.content.language
    if "translation" in domains:
        row[INDEX["crosslingual"]] = lang.crosslingual
        row[INDEX["same_language"]] = 1.0 if lang.same_language else 0.0
    if fmt in ("choice", "choice_index"):
        row[INDEX["option_label"]] = 1.0 if f.reference_is_option else 0.0
    if fmt == "latex":
        row[INDEX["math_notation"]] = ev.content.math
    if fmt == "number":
        row[INDEX["word_problem"]] = ev.content.word_problem
    row[INDEX["completion_fit"]] = ev.completion_fit.get(fmt, 0.0)
    return row


def synth_row(ev: GroupEvidence, synth_sim: float, best_sim: float) -> list[float]:
    """The synthesize alternative's feature row."""
    f = ev.features
    row = [0.0] * len(FEATURES)
    row[INDEX["synth_bias"]] = 1.0
    row[INDEX["synth_sim"]] = synth_sim
    row[INDEX["dialogue"]] = 1.0 if f.dialogue else 0.0
    row[INDEX["empty_prompt"]] = 1.0 if f.empty_prompt else 0.0
    row[INDEX["non_latin"]] = 1.0 if f.non_latin > NON_LATIN_LIMIT else 0.0
    row[INDEX["ref_none"]] = 1.0 if f.ref_format == "none" else 0.0
    row[INDEX["ref_free_text"]] = 1.0 if f.ref_format == "free_text" else 0.0
    row[INDEX["best_sim"]] = best_sim
    row[INDEX["foreign_prompt"]] = 1.0 if ev.content.foreign else 0.0
    row[INDEX["open_answer"]] = 1.0 if ev.content.language.same_language else 0.0
    return row


def probabilities(weights: Mapping[str, float], rows: Sequence[Sequence[float]]) -> list[float]:
    """Softmax of the rows' linear scores."""
    w = [weights.get(name, 0.0) for name in FEATURES]
    logits = [sum(a * b for a, b in zip(w, row, strict=True)) for row in rows]
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [e / total for e in exps]


def fit_weights(
    rows_per_sample: Sequence[Sequence[Sequence[float]]],
    labels: Sequence[int],
    init: Mapping[str, float] | None = None,
    l2: float = 0.05,
    steps: int = 3000,
    lr: float = 0.5,
) -> dict[str, float]:
    """Maximum-likelihood conditional-logit weights (full-batch gradient descent with
    momentum), with an L2 penalty toward the starting weights so a small or one-sided
    labeled set nudges the router instead of overturning it. Features in `HAND_SET` keep
    their starting values.

    `rows_per_sample[i]` are sample i's alternatives' feature rows, `labels[i]` the index of
    the right one. Returns the weights by feature name.
    """
    import numpy as np

    start = {**DEFAULT_WEIGHTS, **(init or {})}
    w = np.array([float(start.get(n, 0.0)) for n in FEATURES])
    if not rows_per_sample:
        return {name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)}
    n, k_max = len(rows_per_sample), max(len(r) for r in rows_per_sample)
    x = np.zeros((n, k_max, len(FEATURES)))
    mask = np.zeros((n, k_max), dtype=bool)
    for i, rows in enumerate(rows_per_sample):
        x[i, : len(rows)] = rows
        mask[i, : len(rows)] = True
    target = x[np.arange(n), np.asarray(labels)]
    free = np.array([name not in HAND_SET for name in FEATURES], dtype=float)
    # The penalty pulls toward the starting weights, so a feature the data never shows
    # keeps its value instead of decaying to zero.
    w0 = w.copy()
    velocity = np.zeros_like(w)
    for _ in range(steps):
        z = np.where(mask, x @ w, -np.inf)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = np.einsum("nk,nkf->f", p, x) / n - target.mean(axis=0) + l2 * (w - w0)
        velocity = 0.9 * velocity - lr * grad * free
        w += velocity
    return {name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)}
