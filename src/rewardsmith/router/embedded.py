"""The embedded (offline, default) routing backend: MiniLM-L6 sentence embeddings plus
reference-format, content, marker and prompt features, scored against each tool's
description and exemplars, with a calibrated confidence.

How a decision is made (RLAR's policy router, without an LLM), per prompt group (see
evidence.py) or pooled over a task signature's groups (see router.py):

1. *Candidates* are the library's tools that bring exemplars (a tool joins routing by
   bringing them; shaping terms such as `overlong` have none) and can read the group's
   reference format (`features.can_grade` > 0): a wrong-format tool is never chosen.
2. Each candidate gets a feature row and "synthesize" one more (logit.py): similarity to
   exemplars, format fit, markers, the task field, and content evidence (a passage in
   another language than the reference's, a reference naming a listed option, math
   notation, completions answering in the tool's form).
3. A conditional logit turns rows into probabilities; the top probability goes through the
   isotonic calibration fitted out-of-fold (calibration.py), so the confidence is the
   probability that the decision is right. A tool decision whose kind of task needs content
   evidence and has none (translation without a passage in another language, a choice
   letter that names no listed option) is capped at `UNSUPPORTED_CAP`: a keyword or a
   look-alike prompt alone never makes a confident decision. Under the threshold the answer
   is "synthesize".

Heavy imports (torch, transformers) happen only in `MiniLMEmbedder.load` (embedder.py), which
runs when a text needs embedding: exemplar embeddings come from the on-disk cache
(exemplar_cache.py) after the first start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.router.calibration import Calibration
from rewardsmith.router.decision import Backend, Decision, SynthKind, ToolWeight, synthesize
from rewardsmith.router.defaults import load_defaults
from rewardsmith.router.embedder import MODEL_MODULES, MiniLMEmbedder
from rewardsmith.router.evidence import GroupEvidence
from rewardsmith.router.exemplar_cache import exemplar_vectors
from rewardsmith.router.features import (
    NON_LATIN_LIMIT,
    RefFormat,
    SampleFeatures,
    can_grade,
    embed_text,
    spec_markers,
)
from rewardsmith.router.logit import (
    CONTENT_FEATURES,
    DEFAULT_WEIGHTS,
    FEATURES,
    INDEX,
    fit_weights,
    probabilities,
    synth_row,
    tool_row,
)
from rewardsmith.types import ToolSpec

# re-exported: the logit's and the embedder's homes moved
__all__ = ["FEATURES", "DEFAULT_WEIGHTS", "MODEL_MODULES", "MiniLMEmbedder", "fit_weights"]

log = logging.getLogger(__name__)


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


@dataclass
class Candidate:
    """A routable tool: its spec, expected format, markers and exemplar embeddings."""

    spec: ToolSpec
    markers: frozenset[str]
    texts: tuple[str, ...]
    vectors: Any = None  # np.ndarray (n, dim) once embedded

    @property
    def fmt(self) -> RefFormat:
        """The reference format the tool reads: its spec's typed key, never its prose."""
        return self.spec.ref_format


# Isotonic maps from the logit's top probability to P(right), fitted out-of-fold with the
# default weights (bench/fit_router_defaults.py; see calibration.py).
DEFAULT_CALIBRATION = Calibration.from_dict(load_defaults().get("calibration"))
# The most confidence a tool decision gets when its kind of task needs content evidence and
# the group shows none (see the module docstring): under the bench's "confident" 0.9.
UNSUPPORTED_CAP = 0.75


@dataclass
class RouterState:
    """What `route fit` learned: extra exemplars per label, the logit weights and the
    calibration. Stored in the library as the latest `router_fit` event."""

    exemplars: dict[str, list[str]] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    threshold: float = DEFAULT_THRESHOLD
    calibration: Calibration = DEFAULT_CALIBRATION

    def to_dict(self) -> dict[str, Any]:
        return {
            "exemplars": self.exemplars,
            "weights": self.weights,
            "threshold": self.threshold,
            "calibration": self.calibration.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RouterState:
        weights = dict(DEFAULT_WEIGHTS)
        weights.update({k: float(v) for k, v in dict(data.get("weights", {})).items()})
        exemplars = {str(k): [str(t) for t in v] for k, v in data.get("exemplars", {}).items()}
        stored = data.get("calibration")
        calibration = Calibration.from_dict(stored) if stored else DEFAULT_CALIBRATION
        threshold = float(data.get("threshold", DEFAULT_THRESHOLD))
        return cls(exemplars, weights, threshold, calibration)


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


SYNTHESIZE = "synthesize"


class EmbeddedBackend:
    """Decides per group from its evidence and prompt embedding (see module docstring).

    `embedder=None` runs the *rules* mode: the same model with every similarity at zero
    (format, content, markers and task names only); the bench uses it as the baseline, and
    the router falls back to it when the embedding model is not installed.
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
        #: False: ignore content evidence (format, markers and embeddings only): the bench's
        #: "markers" baseline, the router as it decided before it read content.
        self.use_content = True
        self.candidates = [
            Candidate(
                spec=s,
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
            embed_text(t) for t in (*SYNTH_EXEMPLARS, *self.state.exemplars.get(SYNTHESIZE, ()))
        )
        self._synth_vectors: Any = None
        if embedder is not None:
            self._embed_exemplars()

    def _embed_exemplars(self) -> None:
        assert self.embedder is not None
        groups = [c.texts for c in self.candidates] + [self.synth_texts]
        *vectors, self._synth_vectors = exemplar_vectors(self.embedder, groups)
        for c, v in zip(self.candidates, vectors, strict=True):
            c.vectors = v

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
                best, owner = sim, SYNTHESIZE
        return owner, best

    # -- the model --------------------------------------------------------------------------

    def alternatives(
        self, ev: GroupEvidence, vector: Any, task: str | None = None
    ) -> dict[str, list[float]]:
        """Feature rows by alternative: each candidate tool that can read the group's
        reference, in library order, then "synthesize" (last)."""
        alts: dict[str, list[float]] = {}
        best_sim = 0.0
        for c in self.candidates:
            if c.fmt == "none" and ev.features.ref_format != "none":
                continue  # a format check joins a graded reference as a companion, never alone
            sim = 0.0
            if vector is not None and c.vectors is not None:
                sim = float((c.vectors @ vector).max())
            row = tool_row(
                c.fmt, c.markers, c.spec.domains, sim, task_names_tool(task, c.spec.name), ev
            )
            if row is None:
                continue
            best_sim = max(best_sim, sim)
            alts[c.spec.name] = row
        synth_sim = 0.0
        if vector is not None and self._synth_vectors is not None:
            synth_sim = float((self._synth_vectors @ vector).max())
        alts[SYNTHESIZE] = synth_row(ev, synth_sim, best_sim)
        if not self.use_content:
            for row in alts.values():
                for name in CONTENT_FEATURES:
                    row[INDEX[name]] = 0.0
        return alts

    def decide(
        self, ev: GroupEvidence, vector: Any, task: str | None = None, signature: str = ""
    ) -> Decision:
        """The decision for one group."""
        return self.decide_alternatives(self.alternatives(ev, vector, task), ev, signature)

    def decide_alternatives(
        self, alts: Mapping[str, list[float]], ev: GroupEvidence, signature: str = ""
    ) -> Decision:
        """The decision from alternatives' rows (one group's, or a signature's pooled rows);
        `ev` (a representative group) supplies the synthesize kind and reasons."""
        f = ev.features
        names = list(alts)
        probs = probabilities(self.state.weights, [alts[n] for n in names])
        scores = {n: round(p, 4) for n, p in zip(names, probs, strict=True)}
        kind = synth_kind(f)
        backend = self.name
        cands = {c.spec.name: c for c in self.candidates}
        tools = [n for n in names if n != SYNTHESIZE]
        if self.use_content:
            crosslingual = ev.content.language.crosslingual >= 0.5
        else:
            crosslingual = "translate" in f.prompt_markers
        unreadable = f.empty_prompt or (f.non_latin > NON_LATIN_LIMIT and not crosslingual)
        if unreadable and f.ref_format not in DECISIVE_FORMATS:
            # Nothing (or nothing the English-only embedding can read) says what the task is.
            why = _synth_reason(ev, "-", 0.0)
            return synthesize(kind, why, 1.0 - 1e-3, backend, signature=signature, scores=scores)
        if not tools:
            why = _no_tool_reason(f)
            return synthesize(kind, why, 1.0 - 1e-3, backend, signature=signature, scores=scores)
        prob = dict(zip(names, probs, strict=True))
        best = max(tools, key=lambda n: (prob[n], n))  # ties: by name, never by order
        p_best, p_synth = prob[best], prob[SYNTHESIZE]
        calibrate = self.state.calibration
        if p_synth >= p_best:
            why = _synth_reason(ev, best, p_best)
            conf = calibrate(p_synth, SYNTHESIZE, f.ref_format)
            return synthesize(kind, why, conf, backend, signature=signature, scores=scores)
        primary = cands[best]
        conf = self.tool_confidence(best, p_best, ev)
        if conf < self.state.threshold:
            why = (
                f"best tool {best} has confidence {conf:.2f} < threshold "
                f"{self.state.threshold:.2f}"
                + ("" if supported(primary, ev) else f" ({_unsupported_reason(primary)})")
                * self.use_content
            )
            deferred = self.state.calibration.deferral(conf)
            return synthesize(kind, why, deferred, backend, signature=signature, scores=scores)
        chosen = [ToolWeight(primary.spec.ref, 1.0)]
        fmt_tool = self._format_companion(primary, f)
        if fmt_tool is not None:
            chosen = [
                ToolWeight(primary.spec.ref, 1.0 - FORMAT_WEIGHT),
                ToolWeight(fmt_tool.spec.ref, FORMAT_WEIGHT),
            ]
        return Decision("tool", conf, backend, tuple(chosen), signature=signature, scores=scores)

    def tool_confidence(self, name: str, p_raw: float, ev: GroupEvidence) -> float:
        """The calibrated probability that tool `name` is right, from the logit's `p_raw`,
        capped when the group lacks the content evidence the tool needs."""
        conf = self.state.calibration(p_raw, "tool", ev.features.ref_format)
        c = next((c for c in self.candidates if c.spec.name == name), None)
        if c is not None and self.use_content and not supported(c, ev):
            conf = min(conf, UNSUPPORTED_CAP)
        return conf

    def _format_companion(self, primary: Candidate, f: SampleFeatures) -> Candidate | None:
        """A reference-free format tool whose every marker the prompt names, when the primary
        tool grades a reference (the prompt asked for a format *and* has an answer)."""
        if primary.fmt == "none" or f.ref_format == "none":
            return None
        for c in self.candidates:
            if c.fmt == "none" and c.markers and can_grade(c.fmt, c.markers, f) > 0:
                return c
        return None


def supported(c: Candidate, ev: GroupEvidence) -> bool:
    """Does the group show the content evidence the tool's kind of task needs? Translation
    needs a passage in another language than the reference's; a choice tool needs the
    reference to name one of the prompt's listed options. Other tools' evidence is the
    reference format itself (a number, LaTeX, unit tests, a dataset entry)."""
    if "translation" in c.spec.domains:
        return ev.content.language.crosslingual >= 0.5
    if c.fmt in ("choice", "choice_index"):
        return ev.features.reference_is_option
    return True


def _unsupported_reason(c: Candidate) -> str:
    if "translation" in c.spec.domains:
        return "no passage in another language than the reference's"
    return "the reference names none of the options the prompt lists"


def _no_tool_reason(f: SampleFeatures) -> str:
    if f.ref_format == "json":
        return (
            "the JSON reference is no reasoning-gym entry (no registered "
            "metadata.source_dataset with a string answer) and no library tool reads it"
        )
    if f.ref_format == "choice_index":
        return (
            "the reference names a numbered option the prompt lists; the library's choice "
            "tool reads option letters"
        )
    return f"no library tool grades a {f.ref_format.replace('_', ' ')} reference"


def _synth_reason(ev: GroupEvidence, best_tool: str, p_best: float) -> str:
    f = ev.features
    if f.empty_prompt:
        return "empty prompt: nothing to tell which tool applies"
    if f.dialogue:
        return "multi-turn dialogue: needs a preference/reward model"
    if f.non_latin > NON_LATIN_LIMIT:
        return "prompt mostly outside the Latin script: the embedding cannot tell the task"
    if f.ref_format == "none":
        return "no reference and no checkable format: needs a reward model"
    if ev.content.language.same_language:
        return (
            "free-text reference in the prompt's own language: an answer to judge by "
            f"meaning, not a translation (best {best_tool}, p={p_best:.2f})"
        )
    return f"prompt unlike every library tool's exemplars (best {best_tool}, p={p_best:.2f})"
