"""Benchmark: the `math` tool against a plain per-sample math-verify loop, in one run.

The baseline is what TRL's `accuracy_reward` does: for each sample,
`verify(parse(gold), parse(completion))` in the calling process. The tool scores the same
samples in GRPO-like batches (groups of completions sharing a reference): each reference
parsed once, duplicate completions verified once, the work spread over worker processes.

Data: Qwen2.5-Math's 100 MATH problems x 8 real model responses
(`../shared/data/math/qwen25_math_cot_100_8samples.jsonl`), or the bundled slice in
`tests/fixtures/math/` when the shared data is absent. References are given as `$gt$`,
which plain `parse` and the tool read the same way (the tool wraps a bare `gt` so itself),
so the two must agree on every decision; the script exits 1 if they do not.

Both sides are warmed the same way first (`MathTool.warm_up`: sympy's lazy imports and
the LaTeX grammar), and the pool's start-up is timed apart. The first round sees every
completion for the first time, like a training step; `--repeat N` adds rounds over the same
samples, where math-verify's and sympy's caches are warm on both sides, and reports medians.
Timings on a shared 2-vCPU machine vary by +-10% from run to run.

Run from the repository root:

    .venv/bin/python bench/bench_math.py [--limit N] [--workers W] [--batch-groups G]
                                         [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from math_verify import parse, verify

from rewardsmith.tools.math import MathTool, default_workers
from rewardsmith.types import Sample

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "math" / "qwen25_math_cot_100_8samples.jsonl"
FIXTURE = REPO / "tests" / "fixtures" / "math" / "qwen25_math_cot_slice.jsonl"


def load(limit: int | None) -> tuple[Path, list[dict[str, Any]]]:
    """Problems with `gt`, `response` (list of completions) and `score` (list of labels)."""
    path = SHARED if SHARED.exists() else FIXTURE
    rows = []
    with path.open() as f:
        for line in f:
            row = json.loads(line)
            rows.append({"gt": row["gt"], "response": row["response"], "score": row["score"]})
            if limit is not None and len(rows) >= limit:
                break
    return path, rows


def baseline(samples: list[Sample]) -> list[bool]:
    """TRL-style: parse the gold and the completion for every sample, then verify."""
    return [bool(verify(parse(s.reference or ""), parse(s.completion))) for s in samples]


def agreement(a: list[bool], b: list[bool]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="number of problems (default: all)")
    ap.add_argument(
        "--workers", type=int, default=None, help="tool workers (default: min(2, CPUs))"
    )
    ap.add_argument("--batch-groups", type=int, default=16, help="reference groups per score call")
    ap.add_argument(
        "--repeat", type=int, default=1, help="rounds (median reported; later rounds run warm)"
    )
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)

    path, rows = load(args.limit)
    samples = [
        Sample(completion=resp, reference=f"${row['gt']}$")
        for row in rows
        for resp in row["response"]
    ]
    labels = [bool(label) for row in rows for label in row["score"]]
    per_call = args.batch_groups * max(1, len(rows[0]["response"])) if rows else 1
    distinct = len({(s.reference, s.completion) for s in samples})
    print(f"data: {path} ({len(rows)} problems, {len(samples)} samples, {distinct} distinct)")

    MathTool(workers=0).warm_up()  # first uses of sympy and the LaTeX grammar, as workers do
    tool = MathTool(workers=args.workers)
    base_times, tool_times = [], []
    try:
        t0 = time.perf_counter()
        tool.start()
        startup_s = time.perf_counter() - t0
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            base = baseline(samples)
            base_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            rewards = []
            for start in range(0, len(samples), per_call):
                rewards += tool.score(samples[start : start + per_call])
            tool_times.append(time.perf_counter() - t0)
    finally:
        tool.close()
    base_s, tool_s = statistics.median(base_times), statistics.median(tool_times)
    got = [r.score == 1.0 for r in rewards]

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = default_workers() if args.workers is None else args.workers
    same = agreement(got, base)
    print(f"cpus: {cpus}, tool workers: {workers}, samples per score call: {per_call}")
    print(
        f"baseline (per-sample verify(parse(gold), parse(completion))): {base_s:6.2f} s, "
        f"{len(samples) / base_s:6.0f} samples/s"
    )
    print(
        f"math tool (pool start {startup_s:.2f} s, not counted):            {tool_s:6.2f} s, "
        f"{len(samples) / tool_s:6.0f} samples/s"
    )
    if args.repeat > 1:
        rounds = ", ".join(f"{b / t:.2f}x" for b, t in zip(base_times, tool_times, strict=True))
        print(f"rounds: {rounds} (times above are medians)")
    print(f"ratio (tool / baseline throughput): {base_s / tool_s:.2f}x")
    print(f"identical decisions: {same}/{len(samples)}")
    print(
        f"agreement with the file's labels: tool {agreement(got, labels)}/{len(labels)}, "
        f"baseline {agreement(base, labels)}/{len(labels)}"
    )
    statuses: dict[str, int] = {}
    for r in rewards:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    print(f"tool statuses: {statuses}")
    if same != len(samples):
        for i, (a, b) in enumerate(zip(got, base, strict=True)):
            if a != b:
                print(f"  differs at {i}: tool={a} baseline={b} reason={rewards[i].reason!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
