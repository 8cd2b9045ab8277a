"""`rewardsmith bench routing`: routing accuracy, "synthesize" share, calibration and cost
on labeled mixed-task sets, against baselines in the same run.

The main set (routing_data.py) is reported without and with `task` fields:
- accuracy on the built-in tools' tasks (target >= 95% without task fields),
- share of out-of-library tasks sent to "synthesize" (target >= 90%), and how often the
  requested kind (code verifier / reward model) is the right one,
- confident mistakes: a wrong decision with confidence >= 0.9 (tool or synthesize), as a
  count and as a share of all confident decisions, and a reliability table (per confidence
  bin: decisions, share right, mean confidence),
- a confusion table (label x decision),
- p50 per-sample routing time in a batch of 1,000 distinct prompts (embedded, cold caches),
  against the per-sample path with no batching or signature cache (ratio printed), and in a
  GRPO-like batch of 1,000 (125 prompts x 8 completions: each prompt is embedded once).

`--hard` reports the hard slice (routing_hard.py: no `\boxed`, `####`, "translate" or
"(A)" options; other languages; open requests with task words; JSON that is no dataset
entry), with its reliability table, for the embedded router and two baselines: `rules` (the
same router with no embeddings: format, content and markers) and `markers` (format and
markers only, no content evidence and no embeddings: the router as it decided before it
read content). `--fit` fits the router on the fit splits of both sets first (weights,
out-of-fold calibration, exemplars) and reports the fitted router on the held-out eval
splits; no eval record is ever used to fit.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.bench import routing_data, routing_hard
from rewardsmith.library.store import Library
from rewardsmith.router.calibration import Calibration, reliability
from rewardsmith.router.decision import Decision
from rewardsmith.router.embedded import RouterState
from rewardsmith.router.logit import INITIAL_WEIGHTS
from rewardsmith.router.router import DEFAULTS_L2, FIT_EVENT, BackendName, Router

# Confidence at or above which a wrong tool counts as a confident mistake.
CONFIDENT = 0.9
TIMING_BATCH = 1_000
# Samples timed one by one on the unbatched, uncached path (the ratio's baseline).
UNBATCHED_SAMPLES = 200
# Completions per prompt in the GRPO-like timing batch.
GROUP = 8

RECORD_KEYS = ("prompt", "completion", "reference", "task")


def _records(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: it.get(k) for k in RECORD_KEYS} for it in items]


def evaluate(items: Sequence[dict[str, Any]], decisions: Sequence[Decision]) -> dict[str, Any]:
    """Accuracy, synthesize share, kind accuracy, confusion and per-source accuracy."""
    inlib = [(it, d) for it, d in zip(items, decisions, strict=True) if it["label"] != "synthesize"]
    ool = [(it, d) for it, d in zip(items, decisions, strict=True) if it["label"] == "synthesize"]
    confusion: Counter[tuple[str, str]] = Counter(
        (it["label"], d.label) for it, d in zip(items, decisions, strict=True)
    )
    per_source: dict[str, list[bool]] = defaultdict(list)
    for it, d in zip(items, decisions, strict=True):
        per_source[it["source"]].append(d.label == it["label"])
    synth_ok = [d for _, d in ool if d.action == "synthesize"]
    kind_ok = [d.kind == it["kind"] for it, d in ool if d.action == "synthesize" and it.get("kind")]
    pairs = list(zip(items, decisions, strict=True))
    confident_wrong = sum(
        1
        for it, d in pairs
        if d.action == "tool" and d.label != it["label"] and d.confidence >= CONFIDENT
    )
    confident = [(it, d) for it, d in pairs if d.confidence >= CONFIDENT]
    confident_wrong_any = sum(1 for it, d in confident if d.label != it["label"])
    right = [d.label == it["label"] for it, d in pairs]
    return {
        "n_in_library": len(inlib),
        "n_out_of_library": len(ool),
        "accuracy": sum(d.label == it["label"] for it, d in inlib) / max(len(inlib), 1),
        "synthesize_share": len(synth_ok) / max(len(ool), 1),
        "kind_accuracy": sum(kind_ok) / max(len(kind_ok), 1),
        "confident_wrong": confident_wrong,
        "confident": len(confident),
        "confident_wrong_any": confident_wrong_any,
        "confident_wrong_rate": confident_wrong_any / max(len(confident), 1),
        "reliability": [
            row.to_dict() for row in reliability([d.confidence for d in decisions], right)
        ],
        "confusion": {f"{a} -> {b}": n for (a, b), n in sorted(confusion.items())},
        "per_source": {s: round(sum(v) / len(v), 4) for s, v in sorted(per_source.items())},
        "signatures": len({d.signature for d in decisions}),
    }


def route_all(
    library: Library, items: Sequence[dict[str, Any]], backend: BackendName | str
) -> list[Decision]:
    """Route `items` with a fresh router; backend "markers" is the rules backend with no
    content evidence (the baseline of a router that reads markers and formats only)."""
    markers_only = backend == "markers"
    router = Router(library, "rules" if markers_only else backend, log_events=False)  # type: ignore[arg-type]
    if markers_only:
        router.embedded.use_content = False
    try:
        return router.route(_records(items))
    finally:
        router.close()


def timing(library: Library, records: list[dict[str, Any]]) -> dict[str, float]:
    """p50/p90 per-sample seconds routing one batch of distinct prompts from cold caches,
    and p50 on the unbatched, uncached path (one sample at a time, no signatures)."""
    from rewardsmith.router import router as router_mod
    from rewardsmith.router.embedded import MiniLMEmbedder

    embedder = router_mod.shared_embedder()
    fresh = MiniLMEmbedder()
    fresh._model, fresh._tokenizer = embedder._model, embedder._tokenizer  # same weights, no cache
    router = Router(library, "embedded", embedder=fresh, log_events=False)
    fresh._cache.clear()  # exemplars are embedded at start-up; prompts start cold
    router.clear_caches()
    start = time.perf_counter()
    router.route(records)
    total = time.perf_counter() - start
    batch = sorted(router.last_seconds)
    # A GRPO-like batch of the same size: GROUP completions per prompt (prompts repeat).
    fresh._cache.clear()
    router.clear_caches()
    grouped = [rec for rec in records[: len(records) // GROUP] for _ in range(GROUP)]
    start = time.perf_counter()
    router.route(grouped)
    grouped_total = time.perf_counter() - start
    grouped_p50 = statistics.median(router.last_seconds)
    fresh._cache.clear()
    single = []
    for rec in records[:UNBATCHED_SAMPLES]:
        t0 = time.perf_counter()
        router.decide_one(rec)
        single.append(time.perf_counter() - t0)
    router.close()
    p50 = statistics.median(batch)
    p50_single = statistics.median(single)
    return {
        "batch": len(records),
        "batch_total_s": total,
        "p50_ms": p50 * 1e3,
        "p90_ms": batch[int(0.9 * (len(batch) - 1))] * 1e3,
        "unbatched_p50_ms": p50_single * 1e3,
        "grpo_group": GROUP,
        "grpo_p50_ms": grouped_p50 * 1e3,
        "grpo_total_s": grouped_total,
        "speedup": p50_single / p50 if p50 > 0 else float("inf"),
    }


def run(
    data: Path,
    seed: int = 0,
    fit: bool = False,
    library_path: Path | None = None,
    do_timing: bool = True,
    hard: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Build the set, route it every way, and return all numbers (see the module docstring).
    `progress(what)` is called as each stage starts (the CLI prints it: a `--hard --fit` run
    takes minutes)."""
    say = progress or (lambda _what: None)
    with tempfile.TemporaryDirectory() as tmp:
        path = library_path or Path(tmp) / "bench.db"
        library = Library(path)
        try:
            code = "code" in library.names() and bool(library.record("code").spec.exemplars)
            say("building the labeled set")
            items = routing_data.build(data, "eval", seed, has_code_tool=code)
            tasked = [routing_data.with_task(it) for it in items]
            out: dict[str, Any] = {"items": len(items), "code_tool": code}
            say(f"routing {len(items)} samples: embedded, no task field")
            t0 = time.perf_counter()
            out["embedded"] = evaluate(items, route_all(library, items, "embedded"))
            out["embedded"]["seconds"] = time.perf_counter() - t0
            say("routing: embedded, task field")
            out["embedded_task"] = evaluate(tasked, route_all(library, tasked, "embedded"))
            say("routing: rules baseline")
            out["rules"] = evaluate(items, route_all(library, items, "rules"))
            if hard:
                say("building the hard slice")
                slice_ = routing_hard.build_hard(data, "eval", seed)
                out["hard_items"] = len(slice_)
                for name, backend in (
                    ("hard", "embedded"),
                    ("hard_rules", "rules"),
                    ("hard_markers", "markers"),
                ):
                    say(f"routing the hard slice ({len(slice_)} samples): {backend}")
                    out[name] = evaluate(slice_, route_all(library, slice_, backend))
            if code:  # the same set in a library without the code tool: tests -> synthesize
                say("routing: a library without the code tool")
                no_code = Library(Path(tmp) / "no_code.db")
                for name in ("code", "code_strict"):
                    if name in no_code.names():
                        no_code.retire(name, "bench: a library without a code tool")
                plain = routing_data.build(data, "eval", seed, has_code_tool=False)
                out["embedded_no_code"] = evaluate(plain, route_all(no_code, plain, "embedded"))
                no_code.close()
            if fit:
                say("fitting the router on the fit split")
                fit_lib = Library(Path(tmp) / "fit.db")
                out["fit"] = fit_defaults(fit_lib, data, seed, has_code_tool=code)
                out["embedded_fitted"] = evaluate(items, route_all(fit_lib, items, "embedded"))
                if hard:
                    say("routing the hard slice: embedded, fitted")
                    out["hard_fitted"] = evaluate(slice_, route_all(fit_lib, slice_, "embedded"))
                fit_lib.close()
            if do_timing:
                say("timing a batch of distinct prompts")
                pool = _records(items) + _records(routing_data.build(data, "fit", seed + 1, code))
                distinct = list({_key(r): r for r in pool}.values())[:TIMING_BATCH]
                out["timing"] = timing(library, distinct)
        finally:
            library.close()
    return out


def fit_defaults(
    library: Library, data: Path, seed: int = 0, has_code_tool: bool = True
) -> dict[str, Any]:
    """Fit the router's weights and calibration on the fit splits of the main set and the
    hard slice, from the hand-set start (`logit.INITIAL_WEIGHTS`, no calibration), with the
    weak pull `DEFAULTS_L2` and no learned exemplars, into `library`. This is how
    router/defaults.json is made (bench/fit_router_defaults.py). Returns the fit's report."""
    items = routing_data.build(data, "fit", seed, has_code_tool=has_code_tool)
    items += routing_hard.build_hard(data, "fit", seed)
    start = RouterState(weights=dict(INITIAL_WEIGHTS), calibration=Calibration())
    library.log_event(FIT_EVENT, None, state=start.to_dict(), examples=0)
    router = Router(library, "embedded", log_events=False)
    try:
        report = router.fit(
            _records(items), [i["label"] for i in items], l2=DEFAULTS_L2, learn_exemplars=False
        )
    finally:
        router.close()
    report["labels"] = dict(Counter(i["label"] for i in items))
    return report


def _key(record: dict[str, Any]) -> str:
    return str(record["prompt"])
