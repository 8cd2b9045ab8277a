"""`rewardsmith bench routing`: routing accuracy, "synthesize" share and cost on a labeled
mixed-task set (see routing_data.py), against a baseline in the same run.

Reports, without and with `task` fields:
- accuracy on the built-in tools' tasks (target >= 95% without task fields),
- share of out-of-library tasks sent to "synthesize" (target >= 90%), and how often the
  requested kind (code verifier / reward model) is the right one,
- confident mistakes (a wrong tool with confidence >= 0.9; should be 0),
- a confusion table (label x decision),
- p50 per-sample routing time in a batch of 1,000 distinct prompts (embedded, cold caches),
  against the per-sample path with no batching or signature cache (ratio printed), and in a
  GRPO-like batch of 1,000 (125 prompts x 8 completions: each prompt is embedded once).
Baseline: the same router with no embeddings ("rules": reference format, markers, task
names). A marker-free slice (no LaTeX, no `\boxed`, no "translate") is reported apart, for
both, to show what the embeddings add where the markers are absent. `--fit` also fits the router on the fit split first and reports the fitted router.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardsmith.bench import routing_data
from rewardsmith.library.store import Library
from rewardsmith.router.decision import Decision
from rewardsmith.router.router import BackendName, Router

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
    confident_wrong = sum(
        1
        for it, d in zip(items, decisions, strict=True)
        if d.action == "tool" and d.label != it["label"] and d.confidence >= CONFIDENT
    )
    return {
        "n_in_library": len(inlib),
        "n_out_of_library": len(ool),
        "accuracy": sum(d.label == it["label"] for it, d in inlib) / max(len(inlib), 1),
        "synthesize_share": len(synth_ok) / max(len(ool), 1),
        "kind_accuracy": sum(kind_ok) / max(len(kind_ok), 1),
        "confident_wrong": confident_wrong,
        "confusion": {f"{a} -> {b}": n for (a, b), n in sorted(confusion.items())},
        "per_source": {s: round(sum(v) / len(v), 4) for s, v in sorted(per_source.items())},
        "signatures": len({d.signature for d in decisions}),
    }


def route_all(
    library: Library, items: Sequence[dict[str, Any]], backend: BackendName
) -> list[Decision]:
    router = Router(library, backend, log_events=False)
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
    start = time.perf_counter()
    router.route(records)
    total = time.perf_counter() - start
    batch = sorted(router.last_seconds)
    # A GRPO-like batch of the same size: GROUP completions per prompt (prompts repeat).
    fresh._cache.clear()
    router._cache.clear()
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
) -> dict[str, Any]:
    """Build the set, route it every way, and return all numbers (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = library_path or Path(tmp) / "bench.db"
        library = Library(path)
        try:
            code = "code" in library.names() and bool(library.record("code").spec.exemplars)
            items = routing_data.build(data, "eval", seed, has_code_tool=code)
            tasked = [routing_data.with_task(it) for it in items]
            out: dict[str, Any] = {"items": len(items), "code_tool": code}
            t0 = time.perf_counter()
            out["embedded"] = evaluate(items, route_all(library, items, "embedded"))
            out["embedded"]["seconds"] = time.perf_counter() - t0
            out["embedded_task"] = evaluate(tasked, route_all(library, tasked, "embedded"))
            out["rules"] = evaluate(items, route_all(library, items, "rules"))
            hard = routing_data.build_marker_free(data, "eval", seed)
            out["marker_free"] = evaluate(hard, route_all(library, hard, "embedded"))
            out["marker_free_rules"] = evaluate(hard, route_all(library, hard, "rules"))
            if code:  # the same set in a library without the code tool: tests -> synthesize
                no_code = Library(Path(tmp) / "no_code.db")
                for name in ("code", "code_strict"):
                    if name in no_code.names():
                        no_code.retire(name, "bench: a library without a code tool")
                plain = routing_data.build(data, "eval", seed, has_code_tool=False)
                out["embedded_no_code"] = evaluate(plain, route_all(no_code, plain, "embedded"))
                no_code.close()
            if fit:
                fit_items = routing_data.build(data, "fit", seed, has_code_tool=code)
                fit_lib = Library(Path(tmp) / "fit.db")
                router = Router(fit_lib, "embedded", log_events=False)
                out["fit"] = {
                    k: v
                    for k, v in router.fit(
                        _records(fit_items), [i["label"] for i in fit_items]
                    ).items()
                    if k != "weights"
                }
                out["fit"]["weights"] = router.state.weights
                router.close()
                out["embedded_fitted"] = evaluate(items, route_all(fit_lib, items, "embedded"))
                fit_lib.close()
            if do_timing:
                pool = _records(items) + _records(routing_data.build(data, "fit", seed + 1, code))
                distinct = list({_key(r): r for r in pool}.values())[:TIMING_BATCH]
                out["timing"] = timing(library, distinct)
        finally:
            library.close()
    return out


def _key(record: dict[str, Any]) -> str:
    return str(record["prompt"])
