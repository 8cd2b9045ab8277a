"""`Router.route(samples) -> list[Decision]`: pick library tool(s) per task signature, or
ask for a new tool ("synthesize").

The unit of decision is a *prompt group*: the samples of a batch that share task, prompt
and reference (GRPO's G completions of one prompt). A group's decision reads all its
samples (evidence.py: what the completions say is averaged) and nothing else, so the same
multiset of samples gives the same decisions in any order, and samples of one prompt are
never graded by different tools.

- Without a `task` field, each group is decided on its own content and embedding, and its
  *signature* is the prompt's embedding cluster plus the reference format, prompt flags,
  content evidence and the decision (`fmt=number|near=gsm8k|sim=0.6|markers=hashes|
  to=gsm8k`): groups of one cluster that are decided differently get different signatures
  (the signature is split), so a signature never stands for two decisions. Clusters are the
  Voronoi cells of the library's exemplars (the nearest exemplar's owner) split by
  similarity level, so signatures are stable across runs and readable.
- With a `task` field, the signature is `task=NAME|fmt=FORMAT` and its decision pools *all*
  the signature's groups in the batch (the mean of their feature rows, taken in key order).
  When the groups' own decisions disagree (the top one covers less than `SPLIT_SHARE` of
  them), the signature is split by decision: `task=NAME|fmt=FORMAT|split=LABEL`, each part
  pooled on its own.

Decisions are cached for the router's lifetime (per group, bounded; per task signature), so
a prompt seen again costs a dictionary lookup, and what later completions say cannot move a
decision already made.

Every new signature's decision is an event in the library log (`route`, or
`synthesize_request` for "synthesize"), with how many samples of the batch it covered;
`close()` appends one `route_counts` event with the totals per signature. A run gives the
first `max_signatures` signatures an LLM call and an event each; later ones are routed by the
embedded backend and counted together (ledger.py), and a locked library costs the run its
events, never its decisions.

Backends: `embedded` (default, offline; see embedded.py) and `llm` (any OpenAI-compatible
endpoint, asked once per signature; see llm.py), which falls back to the embedded backend,
with a warning, when the endpoint is unreachable or its answer is malformed.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from rewardsmith.errors import ConfigError, MissingDependencyError
from rewardsmith.library.store import Library
from rewardsmith.router.decision import Decision
from rewardsmith.router.embedded import (
    SYNTHESIZE,
    EmbeddedBackend,
    MiniLMEmbedder,
    RouterState,
)
from rewardsmith.router.evidence import (
    ContentCache,
    GroupEvidence,
    group_evidence,
    group_key,
    mean_rows,
)
from rewardsmith.router.features import SampleFeatures, sample_features
from rewardsmith.router.learning import learned_state
from rewardsmith.router.ledger import MAX_SIGNATURES, RouteLedger
from rewardsmith.samples import as_samples
from rewardsmith.types import Sample

if TYPE_CHECKING:
    from rewardsmith.llm.client import LLMClient
    from rewardsmith.router.llm import LLMBackend

log = logging.getLogger(__name__)

BackendName = Literal["embedded", "llm", "rules"]
BACKENDS: tuple[BackendName, ...] = ("embedded", "llm", "rules")
FIT_EVENT = "router_fit"
# A task signature is split by decision when its most common group decision covers less
# than this share of its groups (a task field naming two kinds of task).
SPLIT_SHARE = 0.8
# Similarity levels that split an exemplar's cell into separate signatures: a prompt that
# barely resembles its nearest exemplar must not inherit a close neighbour's decision.
SIM_BUCKET = 0.1
# Group decisions kept in memory (least recently used dropped).
GROUP_CACHE_SIZE = 100_000
# L2 pull toward the current weights in `fit`: a user's few labels nudge the router...
FIT_L2 = 0.05
# ... while the defaults are fitted on the bench's fit splits (~1,100 samples) with a weak
# pull, so the data, not the hand-set start, decides.
DEFAULTS_L2 = 0.002

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
    try:
        return RouterState.from_dict(fits[-1].detail.get("state", {}))
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        log.warning(
            "router: the library's latest router_fit (event %s) is malformed (%s); routing with "
            "the default state",
            fits[-1].id,
            str(exc)[:120],
        )
        return RouterState()


class Router:
    """Routes samples to library tools; see the module docstring.

    `backend`: "embedded" (MiniLM, offline), "llm" (OpenAI-compatible endpoint: `llm_client`,
    or one configured as `rewardsmith.llm.client` says), or "rules" (format, content and markers only, no
    model). `threshold` overrides the library's confidence threshold. `llm_fallback=False`
    makes the llm backend strict: an endpoint that is missing, unreachable or refuses the key
    raises instead of falling back to the embedded backend (`rewardsmith.router.llm`).
    `max_signatures`: distinct signatures per run with an LLM call and an event of their own
    (`rewardsmith.router.ledger`).
    """

    def __init__(
        self,
        library: Library | str | Path | None = None,
        backend: BackendName = "embedded",
        *,
        threshold: float | None = None,
        llm_client: LLMClient | None = None,
        llm_fallback: bool = True,
        embedder: MiniLMEmbedder | None = None,
        log_events: bool = True,
        max_signatures: int = MAX_SIGNATURES,
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
        if backend == "llm":  # a bad endpoint fails before the embedding model loads
            from rewardsmith.router.llm import LLMBackend, open_llm_client

            llm_client = open_llm_client(llm_client, strict=not llm_fallback)
        self.embedded = self._embedded_backend(backend, embedder)
        self.llm: LLMBackend | None = None
        if backend == "llm":
            self.llm = LLMBackend(
                self.library, self.embedded, llm_client, strict=not llm_fallback, opened=True
            )
        self._content = ContentCache()
        self._groups: OrderedDict[str, Decision] = OrderedDict()  # group key -> decision
        self._tasks: dict[str, Decision | None] = {}  # task signature -> pooled (None: split)
        self.ledger = RouteLedger(self.library, log_events, max_signatures)
        self._llm_decisions: dict[str, Decision] = {}  # signature -> the LLM's decision
        #: Seconds attributed to each sample of the last `route` call.
        self.last_seconds: list[float] = []

    def clear_caches(self) -> None:
        """Forget every decision and content analysis (the next batch starts cold)."""
        self._content = ContentCache()
        self._groups.clear()
        self._tasks.clear()
        self._llm_decisions.clear()

    def _embedded_backend(
        self, backend: BackendName, embedder: MiniLMEmbedder | None
    ) -> EmbeddedBackend:
        specs = [r.spec for r in self.library.records()]
        if backend == "rules":
            return EmbeddedBackend(specs, self.state, None)
        try:
            emb = embedder or shared_embedder()
            emb.check()  # no import: with cached exemplars the model loads on a prompt
        except MissingDependencyError as exc:
            log.warning("router: %s; routing by reference format and markers only", exc)
            return EmbeddedBackend(specs, self.state, None)
        return EmbeddedBackend(specs, self.state, emb)

    # -- routing ---------------------------------------------------------------------------

    def route(self, samples: Iterable[Sample | Mapping[str, Any]]) -> list[Decision]:
        """One decision per sample, in order (decided per prompt group; see the module
        docstring)."""
        batch = as_samples(samples)
        start = time.perf_counter()
        keys = [group_key(s) for s in batch]
        members: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            members.setdefault(key, []).append(i)
        decided: dict[str, Decision] = {}
        todo: list[str] = []
        for key, idx in members.items():
            lead = batch[idx[0]]
            cached = self._groups.get(key)
            if cached is None and lead.task is not None:
                pooled = self._tasks.get(_task_sig(lead, sample_features(lead)))
                cached = pooled  # a split task (None) decides per group
            if cached is not None:
                decided[key] = cached
            else:
                todo.append(key)
        todo.sort()  # everything below runs in key order, never input order
        feats = {i: sample_features(batch[i]) for key in todo for i in members[key]}
        vectors: dict[str, Any] = {}
        if todo and self.embedded.embedder is not None:
            mat = self.embedded.embed([feats[members[k][0]].text for k in todo])
            vectors = {k: mat[n] for n, k in enumerate(todo)}
        evidence = {
            k: group_evidence(
                [batch[i] for i in members[k]], [feats[i] for i in members[k]], self._content
            )
            for k in todo
        }
        shared = (time.perf_counter() - start) / max(len(batch), 1)
        seconds = [shared] * len(batch)
        by_task: dict[str, list[str]] = {}
        for key in todo:
            lead = batch[members[key][0]]
            if lead.task is None:
                t0 = time.perf_counter()
                decided[key] = self._decide_group(key, evidence[key], vectors.get(key), lead)
                per = (time.perf_counter() - t0) / len(members[key])
                for i in members[key]:
                    seconds[i] += per
            else:
                by_task.setdefault(_task_sig(lead, evidence[key].features), []).append(key)
        for sig, task_keys in sorted(by_task.items()):
            t0 = time.perf_counter()
            decided.update(self._decide_task(sig, task_keys, evidence, vectors, batch, members))
            per = (time.perf_counter() - t0) / sum(len(members[k]) for k in task_keys)
            for k in task_keys:
                for i in members[k]:
                    seconds[i] += per
        for key in todo:
            self._remember(key, decided[key])
        self.ledger.record(decided, members, batch)
        self.last_seconds = seconds
        return [decided[key] for key in keys]

    def _decide_group(self, key: str, ev: GroupEvidence, vector: Any, lead: Sample) -> Decision:
        """A group without a task field: its own decision, under its cluster signature."""
        decision = self.embedded.decide(ev, vector, None)
        sig = self._cluster_sig(ev, vector) + f"|to={decision.label}"
        if self.llm is not None and self.ledger.admit(sig):
            # asked once per signature, for its first group in key order
            if sig not in self._llm_decisions:
                self._llm_decisions[sig] = self.llm.decide(lead, ev, decision, signature=sig)
            return self._llm_decisions[sig]
        return replace(decision, signature=sig)

    def _decide_task(
        self,
        sig: str,
        keys: list[str],
        evidence: Mapping[str, GroupEvidence],
        vectors: Mapping[str, Any],
        batch: Sequence[Sample],
        members: Mapping[str, list[int]],
    ) -> dict[str, Decision]:
        """A task signature's groups: one pooled decision, or one per decision when the
        groups disagree (the signature is split)."""
        task = batch[members[keys[0]][0]].task
        alts = {k: self.embedded.alternatives(evidence[k], vectors.get(k), task) for k in keys}
        own = {k: self.embedded.decide_alternatives(alts[k], evidence[k]).label for k in keys}
        label_counts = Counter(own.values())
        n_top = max(label_counts.values())
        if sig not in self._tasks and n_top >= SPLIT_SHARE * len(keys):
            decision = self._pooled(sig, keys, alts, evidence, batch, members)
            self._tasks[sig] = decision
            return dict.fromkeys(keys, decision)
        self._tasks[sig] = None  # split: later groups of this task are decided per group
        out: dict[str, Decision] = {}
        for label in sorted(label_counts):
            part = [k for k in keys if own[k] == label]
            sub = f"{sig}|split={label}"
            known = self.ledger.known(sub)
            decision = known or self._pooled(sub, part, alts, evidence, batch, members)
            out.update(dict.fromkeys(part, decision))
        return out

    def _pooled(
        self,
        sig: str,
        keys: list[str],
        alts: Mapping[str, dict[str, list[float]]],
        evidence: Mapping[str, GroupEvidence],
        batch: Sequence[Sample],
        members: Mapping[str, list[int]],
    ) -> Decision:
        """The decision from the mean feature rows of `keys` (alternatives every group has)."""
        names = [n for n in alts[keys[0]] if all(n in alts[k] for k in keys)]
        pooled = {n: mean_rows([alts[k][n] for k in keys]) for n in names}
        lead = keys[0]
        decision = self.embedded.decide_alternatives(pooled, evidence[lead], sig)
        if self.llm is not None and self.ledger.admit(sig):
            return self.llm.decide(batch[members[lead][0]], evidence[lead], decision, sig)
        return decision

    def _remember(self, key: str, decision: Decision) -> None:
        self._groups[key] = decision
        self._groups.move_to_end(key)
        if len(self._groups) > GROUP_CACHE_SIZE:
            self._groups.popitem(last=False)

    def decide_one(self, sample: Sample | Mapping[str, Any]) -> Decision:
        """A decision for one sample without signatures or cache (for tests and tools)."""
        (s,) = as_samples([sample])
        ev = group_evidence([s], [sample_features(s)], self._content)
        vec = None
        if self.embedded.embedder is not None:
            vec = self.embedded.embed([ev.features.text])[0]
        return self.embedded.decide(ev, vec, s.task, signature="-")

    def _cluster_sig(self, ev: GroupEvidence, vector: Any) -> str:
        f = ev.features
        near, sim = self.embedded.nearest(vector)
        seen = ev.seen_markers & self.embedded.all_markers
        parts = [f"fmt={f.ref_format}", f"near={near}", f"sim={_bucket(sim)}"]
        if seen:
            parts.append("markers=" + "+".join(sorted(seen)))
        lang = ev.content.language
        flags = [
            name
            for name, on in (
                ("empty", f.empty_prompt),
                ("dialogue", f.dialogue),
                ("foreign", ev.content.foreign),
                ("options", f.options),
                ("option_ref", f.reference_is_option),
                ("crosslingual", lang.crosslingual >= 0.5),
                ("same_language", lang.same_language),
            )
            if on
        ]
        if flags:
            parts.append("flags=" + "+".join(flags))
        return "|".join(parts)

    # -- events ----------------------------------------------------------------------------

    @property
    def counts(self) -> Counter[str]:
        """Samples per signature this run (`ledger.OVERFLOW`: those past the cap)."""
        return self.ledger.counts

    def close(self) -> None:
        """Append the per-signature totals to the library log; close an owned library."""
        self.ledger.close(
            self.backend_name, self.llm.usage.to_dict() if self.llm is not None else None
        )
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
        self,
        samples: Sequence[Sample | Mapping[str, Any]],
        labels: Sequence[str],
        *,
        l2: float = FIT_L2,
        learn_exemplars: bool = True,
    ) -> dict[str, Any]:
        """Learn from labeled samples (label: a tool name or "synthesize").

        The logit weights are refitted on all of them (an L2 pull of strength `l2` toward the
        current weights: the default keeps a small or one-sided set from overturning the
        router; the bench fits its defaults with `DEFAULTS_L2`);
        with at least `MIN_CALIBRATION_SAMPLES`, the calibration is refitted on out-of-fold
        predictions (`CALIBRATION_FOLDS` folds by sample content, so the result does not
        depend on the order of the samples); misrouted samples become exemplars of their
        label (unless `learn_exemplars` is False). The new state is stored in the library (a `router_fit` event: the log stays
        append-only, the latest fit wins). Returns accuracy before and after.
        """
        batch = as_samples(samples)
        if len(batch) != len(labels):
            raise ConfigError(f"{len(batch)} samples but {len(labels)} labels")
        known = {c.spec.name for c in self.embedded.candidates} | set(self.library.names())
        bad = sorted({lab for lab in labels if lab != SYNTHESIZE and lab not in known})
        if bad:
            raise ConfigError(
                f"unknown labels {bad}: a label is a tool in the library or 'synthesize'"
            )
        self.embedded.embed([sample_features(s).text for s in batch])  # one batched pass
        before = self._accuracy(batch, labels)
        specs = [r.spec for r in self.library.records()]
        state = learned_state(
            self.state,
            batch,
            labels,
            self._alternatives,
            before["correct"],
            l2=l2,
            learn_exemplars=learn_exemplars,
        )
        self.state = state
        self.embedded = EmbeddedBackend(specs, state, self.embedded.embedder)
        self.clear_caches()
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
            "calibration": state.calibration.to_dict(),
        }

    def _alternatives(self, sample: Sample) -> dict[str, list[float]]:
        ev = group_evidence([sample], [sample_features(sample)], self._content)
        vec = None
        if self.embedded.embedder is not None:
            vec = self.embedded.embed([ev.features.text])[0]
        return self.embedded.alternatives(ev, vec, sample.task)

    def _accuracy(self, batch: list[Sample], labels: Sequence[str]) -> dict[str, Any]:
        correct = [self.decide_one(s).label == lab for s, lab in zip(batch, labels, strict=True)]
        return {"accuracy": sum(correct) / max(len(correct), 1), "correct": correct}


def _task_sig(sample: Sample, f: SampleFeatures) -> str:
    flags = "+dialogue" if f.dialogue else ""
    return f"task={sample.task}|fmt={f.ref_format}{flags}"


def _bucket(sim: float) -> str:
    return f"{int(max(sim, 0.0) / SIM_BUCKET) * SIM_BUCKET:.1f}"
