"""`Router.route(samples) -> list[Decision]`: pick library tool(s) per task signature, or
ask for a new tool ("synthesize").

A *task signature* is `task=NAME` plus the reference format when the sample has a `task`
field; otherwise the prompt's embedding cluster plus the reference format and prompt flags.
Clusters are the Voronoi cells of the library's exemplars (the nearest exemplar's owner,
tool or "synthesize") split by similarity level, so they are stable across runs and a
signature reads as `fmt=number|near=gsm8k|sim=0.6|markers=hashes`. One decision is made per
signature and cached for the router's lifetime: a batch of thousands costs one embedding
pass plus a dictionary lookup per sample.

Every new signature's decision is an event in the library log (`route`, or
`synthesize_request` for "synthesize"), with how many samples of the batch it covered;
`close()` appends one `route_counts` event with the totals per signature.

Backends: `embedded` (default, offline; see embedded.py) and `llm` (any OpenAI-compatible
endpoint; see llm.py), which falls back to the embedded backend, with a warning, when the
endpoint is unreachable or its answer is malformed.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rewardsmith.errors import ConfigError, MissingDependencyError
from rewardsmith.jsonl import as_samples
from rewardsmith.library.store import Library
from rewardsmith.router.decision import Decision
from rewardsmith.router.embedded import (
    EmbeddedBackend,
    MiniLMEmbedder,
    RouterState,
    fit_weights,
)
from rewardsmith.router.features import SampleFeatures, markers, sample_features
from rewardsmith.types import Sample

if TYPE_CHECKING:
    from rewardsmith.llm.client import LLMClient
    from rewardsmith.router.llm import LLMBackend

log = logging.getLogger(__name__)

BackendName = Literal["embedded", "llm", "rules"]
BACKENDS: tuple[BackendName, ...] = ("embedded", "llm", "rules")
FIT_EVENT = "router_fit"
# Samples of one task signature whose embeddings are averaged for the decision.
TASK_SAMPLE_SIZE = 8
# Similarity levels that split an exemplar's cell into separate signatures: a prompt that
# barely resembles its nearest exemplar must not inherit a close neighbour's decision.
SIM_BUCKET = 0.1
# Learned exemplars kept per label by `fit` (the newest win): the library stays small and
# routing cost stays flat.
MAX_LEARNED_EXEMPLARS = 200
# Characters of a signature's first prompt kept in its library event.
EVENT_EXAMPLE_CHARS = 80

_SHARED_EMBEDDER: MiniLMEmbedder | None = None


def shared_embedder() -> MiniLMEmbedder:
    """One MiniLM per process: loading it costs seconds, every router can share it."""
    global _SHARED_EMBEDDER
    if _SHARED_EMBEDDER is None:
        _SHARED_EMBEDDER = MiniLMEmbedder()
    return _SHARED_EMBEDDER


def load_state(library: Library) -> RouterState:
    """The latest `router_fit` state stored in the library (defaults when never fitted)."""
    fits = library.history(kind=FIT_EVENT, limit=1)  # one row, however long the log
    if not fits:
        return RouterState()
    return RouterState.from_dict(fits[-1].detail.get("state", {}))


class Router:
    """Routes samples to library tools; see the module docstring.

    `backend`: "embedded" (MiniLM, offline), "llm" (OpenAI-compatible endpoint from
    `REWARDSMITH_LLM_*` or `llm_client`), or "rules" (format and markers only, no model).
    `threshold` overrides the library's calibrated confidence threshold.
    """

    def __init__(
        self,
        library: Library | str | Path | None = None,
        backend: BackendName = "embedded",
        *,
        threshold: float | None = None,
        llm_client: LLMClient | None = None,
        embedder: MiniLMEmbedder | None = None,
        log_events: bool = True,
    ) -> None:
        if backend not in BACKENDS:
            raise ConfigError(f"unknown router backend {backend!r}; expected one of {BACKENDS}")
        self._owns_library = not isinstance(library, Library)
        self.library = library if isinstance(library, Library) else Library(library)
        self.log_events = log_events
        self.state = load_state(self.library)
        if threshold is not None:
            self.state.threshold = threshold
        self.backend_name = backend
        self.embedded = self._embedded_backend(backend, embedder)
        self.llm: LLMBackend | None = None
        if backend == "llm":
            from rewardsmith.router.llm import LLMBackend

            self.llm = LLMBackend(self.library, self.embedded, client=llm_client)
        self._cache: dict[str, Decision] = {}
        self.counts: Counter[str] = Counter()
        #: Seconds attributed to each sample of the last `route` call.
        self.last_seconds: list[float] = []

    def _embedded_backend(
        self, backend: BackendName, embedder: MiniLMEmbedder | None
    ) -> EmbeddedBackend:
        specs = [r.spec for r in self.library.records()]
        if backend == "rules":
            return EmbeddedBackend(specs, self.state, None)
        try:
            emb = embedder or shared_embedder()
            emb.load()
        except MissingDependencyError as exc:
            log.warning("router: %s; routing by reference format and markers only", exc)
            return EmbeddedBackend(specs, self.state, None)
        return EmbeddedBackend(specs, self.state, emb)

    # -- routing ---------------------------------------------------------------------------

    def route(self, samples: Iterable[Sample | Mapping[str, Any]]) -> list[Decision]:
        """One decision per sample, in order (decided once per task signature)."""
        batch = as_samples(samples)
        start = time.perf_counter()
        feats = [sample_features(s) for s in batch]
        ref_markers = [_reference_markers(s) for s in batch]
        seconds = [0.0] * len(batch)
        # Samples with a task field need no embedding once their signature is cached.
        sigs: list[str] = [""] * len(batch)
        need_vec = [
            i
            for i, s in enumerate(batch)
            if s.task is None or _task_sig(s, feats[i]) not in self._cache
        ]
        vectors: dict[int, Any] = {}
        if need_vec and self.embedded.embedder is not None:
            mat = self.embedded.embed([feats[i].text for i in need_vec])
            vectors = {i: mat[k] for k, i in enumerate(need_vec)}
        members: dict[str, list[int]] = {}
        for i, s in enumerate(batch):
            if s.task is not None:
                sigs[i] = _task_sig(s, feats[i])
            else:
                sigs[i] = self._cluster_sig(feats[i], vectors.get(i), ref_markers[i])
            members.setdefault(sigs[i], []).append(i)
        shared = (time.perf_counter() - start) / max(len(batch), 1)
        for sig, idx in members.items():
            t0 = time.perf_counter()
            decision = self._cache.get(sig)
            if decision is None:
                decision = self._decide(sig, [batch[i] for i in idx], idx, feats, vectors)
                self._cache[sig] = decision
                self._log_decision(decision, batch[idx[0]], len(idx))
            self.counts[sig] += len(idx)
            per = (time.perf_counter() - t0) / len(idx)
            for i in idx:
                seconds[i] = shared + per
        self.last_seconds = seconds
        return [self._cache[sig] for sig in sigs]

    def decide_one(self, sample: Sample | Mapping[str, Any]) -> Decision:
        """A decision for one sample without signatures or cache (for tests and tools)."""
        (s,) = as_samples([sample])
        f = sample_features(s)
        vec = None
        if self.embedded.embedder is not None:
            vec = self.embedded.embed([f.text])[0]
        return self.embedded.decide(f, vec, s.task, _reference_markers(s), signature="-")

    def _cluster_sig(self, f: SampleFeatures, vector: Any, ref_markers: frozenset[str]) -> str:
        near, sim = self.embedded.nearest(vector)
        seen = (f.prompt_markers | f.completion_markers | ref_markers) & self.embedded.all_markers
        parts = [f"fmt={f.ref_format}", f"near={near}", f"sim={_bucket(sim)}"]
        if seen:
            parts.append("markers=" + "+".join(sorted(seen)))
        flags = [
            name
            for name, on in (
                ("empty", f.empty_prompt),
                ("dialogue", f.dialogue),
                ("nonlatin", f.key[3]),
                ("options", f.options),
            )
            if on
        ]
        if flags:
            parts.append("flags=" + "+".join(flags))
        return "|".join(parts)

    def _decide(
        self,
        sig: str,
        samples: list[Sample],
        idx: list[int],
        feats: list[SampleFeatures],
        vectors: Mapping[int, Any],
    ) -> Decision:
        lead = samples[0]
        f = feats[idx[0]]
        vec = vectors.get(idx[0])
        if lead.task is not None and vectors:
            vec = _mean_vector([vectors[i] for i in idx[:TASK_SAMPLE_SIZE] if i in vectors])
        if self.llm is not None:
            return self.llm.decide(lead, f, vec, signature=sig)
        return self.embedded.decide(f, vec, lead.task, _reference_markers(lead), signature=sig)

    # -- events ----------------------------------------------------------------------------

    def _log_decision(self, decision: Decision, example: Sample, count: int) -> None:
        if not self.log_events:
            return
        kind = "route" if decision.action == "tool" else "synthesize_request"
        tool = decision.label if decision.action == "tool" else None
        self.library.log_event(
            kind,
            tool,
            signature=decision.signature,
            decision=decision.to_dict(),
            samples=count,
            example=example.prompt_text()[:EVENT_EXAMPLE_CHARS],
        )

    def close(self) -> None:
        """Append the per-signature totals to the library log; close an owned library."""
        if self.log_events and self.counts:
            self.library.log_event(
                "route_counts",
                None,
                counts=dict(self.counts),
                backend=self.backend_name,
                synthesize=sum(
                    n for sig, n in self.counts.items() if self._cache[sig].action != "tool"
                ),
                llm_usage=self.llm.usage.to_dict() if self.llm is not None else None,
            )
            self.counts.clear()
        if self.llm is not None:
            self.llm.close()
        if self._owns_library:
            self.library.close()

    def __enter__(self) -> Router:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- learning --------------------------------------------------------------------------

    def fit(
        self, samples: Sequence[Sample | Mapping[str, Any]], labels: Sequence[str]
    ) -> dict[str, Any]:
        """Learn from labeled samples (label: a tool name or "synthesize").

        Misrouted samples become exemplars of their label, and the logit weights are refitted
        on all of them; the new state is stored in the library (a `router_fit` event: the log
        stays append-only, the latest fit wins). Returns accuracy before and after.
        """
        batch = as_samples(samples)
        if len(batch) != len(labels):
            raise ConfigError(f"{len(batch)} samples but {len(labels)} labels")
        known = {c.spec.name for c in self.embedded.candidates} | set(self.library.names())
        bad = sorted({lab for lab in labels if lab != "synthesize" and lab not in known})
        if bad:
            raise ConfigError(
                f"unknown labels {bad}: a label is a tool in the library or 'synthesize'"
            )
        self.embedded.embed([sample_features(s).text for s in batch])  # one batched pass
        before = self._accuracy(batch, labels)
        specs = [r.spec for r in self.library.records()]
        # The weights are fitted first, on similarities to the exemplars the router has now
        # (a sample added as an exemplar would look perfectly similar to itself).
        state = RouterState.from_dict(self.state.to_dict())
        rows, targets = [], []
        for s, lab in zip(batch, labels, strict=True):
            f = sample_features(s)
            vec = self.embedded.embed([f.text])[0] if self.embedded.embedder is not None else None
            cands, r = self.embedded.rows(f, vec, s.task, _reference_markers(s))
            names = [c.spec.name for c in cands]
            if lab != "synthesize" and lab not in names:
                continue  # the label's tool cannot read this reference: nothing to learn
            rows.append(r)
            targets.append(len(cands) if lab == "synthesize" else names.index(lab))
        state.weights = fit_weights(rows, targets, init=state.weights)
        # Then the samples the router got wrong join their label's exemplars.
        for s, lab, ok in zip(batch, labels, before["correct"], strict=True):
            text = sample_features(s).text
            bucket = state.exemplars.setdefault(lab, [])
            if not ok and text not in bucket:
                bucket.append(text)
        state.exemplars = {k: v for k, v in state.exemplars.items() if v}
        for lab, texts in state.exemplars.items():
            state.exemplars[lab] = texts[-MAX_LEARNED_EXEMPLARS:]
        self.state = state
        self.embedded = EmbeddedBackend(specs, state, self.embedded.embedder)
        self._cache.clear()
        after = self._accuracy(batch, labels)
        self.library.log_event(
            FIT_EVENT,
            None,
            state=state.to_dict(),
            examples=len(batch),
            accuracy_before=before["accuracy"],
            accuracy_after=after["accuracy"],
        )
        return {
            "examples": len(batch),
            "accuracy_before": before["accuracy"],
            "accuracy_after": after["accuracy"],
            "learned_exemplars": {k: len(v) for k, v in state.exemplars.items()},
            "weights": state.weights,
        }

    def _accuracy(self, batch: list[Sample], labels: Sequence[str]) -> dict[str, Any]:
        correct = [self.decide_one(s).label == lab for s, lab in zip(batch, labels, strict=True)]
        return {"accuracy": sum(correct) / max(len(correct), 1), "correct": correct}


def _task_sig(sample: Sample, f: SampleFeatures) -> str:
    flags = "+dialogue" if f.dialogue else ""
    return f"task={sample.task}|fmt={f.ref_format}{flags}"


def _bucket(sim: float) -> str:
    return f"{int(max(sim, 0.0) / SIM_BUCKET) * SIM_BUCKET:.1f}"


def _reference_markers(sample: Sample) -> frozenset[str]:
    ref = sample.reference
    return markers(ref[-500:]) if ref else frozenset()


def _mean_vector(vectors: list[Any]) -> Any:
    import numpy as np

    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean
