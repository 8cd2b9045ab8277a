"""Benchmark: the warm sandbox pool against a fresh `python -c` subprocess per run, in one run.

Snippets: HumanEval programs (prompt + canonical solution + the task's `check`, called on the
entry point), i.e. what grading one completion runs. Each snippet runs once per round on
each side, one at a time (one worker), alternating sides so both see the same machine load:

- pool: `Sandbox.run(program)`: a fork of a warm zygote per run, with the full isolation
  (limits, the run's cgroup budget, namespaces, the minimal read-only root, uid drop, temp
  directory);
- baseline: `subprocess.run([sys.executable, "-c", program])`: a new interpreter per run,
  with no isolation at all (what a human-eval-style harness pays at the least).

Overhead per run = wall time per run minus the snippet's own run time, measured by running
the same program with `compile` + `exec` in this process (median of several runs). The script prints
both raw times, both overheads and their ratio; then the same runs as one batch over two
workers (and two concurrent subprocesses), the way a trainer's reward batch is run, as cost
per run; the CPU time per run of every process involved (this one, the zygotes and their
children; the subprocesses), which does not depend on how busy the machine is; then
HumanEval grading throughput of the `code` tool (all 164 canonical solutions, each `check`
split into one test per assertion, each decided by the caller or a judge run, 2 workers),
in tests/s and samples/s, on a first pass (new references: split, and prepared by a judge
run where the program's run needs values of the test's own) and again (kept). Data: `../shared/data/code/HumanEval.jsonl.gz`, or
the bundled slice in `tests/fixtures/code/` when absent. Timings on a shared 2-vCPU machine
vary from run to run; the ratio is steadier than the absolute numbers.

    .venv/bin/python bench/bench_sandbox.py [--snippets N] [--rounds R]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rewardsmith.sandbox import Sandbox
from rewardsmith.tools.code import CodeTool
from rewardsmith.tools.code.dataset import to_samples
from rewardsmith.types import Sample, ToolSpec

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data" / "code" / "HumanEval.jsonl.gz"
FIXTURE = REPO / "tests" / "fixtures" / "code" / "humaneval_slice.jsonl"


def load() -> tuple[Path, list[dict[str, Any]]]:
    path = SHARED if SHARED.exists() else FIXTURE
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return path, [json.loads(line) for line in f]


def program(record: dict[str, Any]) -> str:
    return (
        record["prompt"]
        + record["canonical_solution"]
        + "\n"
        + record["test"]
        + f"\ncheck({record['entry_point']})\n"
    )


def own_time(source: str, repeats: int = 5) -> float:
    """Median seconds the program itself takes (compile and run) in this warm process."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        exec(compile(source, "<snippet>", "exec"), {"__name__": "snippet"})  # noqa: S102 - canonical solutions, our own data
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _proc_cpu(pid: int) -> float:
    """CPU seconds of a process and its reaped children, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + stime + cutime + cstime) / os.sysconf("SC_CLK_TCK")


def pool_cpu(box: Sandbox) -> float:
    """CPU seconds used so far by this process and the sandbox's zygotes (and their runs)."""
    total = time.process_time()
    for pid in box.worker_pids():
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(k) for k in f.read().split()]
        total += sum(_proc_cpu(p) for p in [pid, *kids])
    return total


def fresh_cpu() -> float:
    """CPU seconds used so far by this process and its reaped subprocesses."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snippets", type=int, default=40, help="HumanEval programs to run")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path, records = load()
    snippets = [program(r) for r in records[: args.snippets]]
    work = sum(own_time(s) for s in snippets) / len(snippets)

    with Sandbox(workers=1) as box:
        start = time.perf_counter()
        box.run("pass")
        startup = time.perf_counter() - start
        pool_times: list[float] = []
        fresh_times: list[float] = []
        for _ in range(args.rounds):
            for source in snippets:
                start = time.perf_counter()
                result = box.run(source)
                pool_times.append(time.perf_counter() - start)
                if result.status != "ok":
                    sys.exit(f"pool run failed: {result.status} {result.reason} {result.stderr}")
                start = time.perf_counter()
                done = subprocess.run([sys.executable, "-c", source], capture_output=True)
                fresh_times.append(time.perf_counter() - start)
                if done.returncode != 0:
                    sys.exit(f"baseline run failed: {done.stderr.decode()[-300:]}")
        isolation = box.isolation
        # CPU cost (independent of how busy the machine is): every snippet once more per side.
        before = pool_cpu(box)
        for source in snippets:
            box.run(source)
        pool_cpu_run = (pool_cpu(box) - before) / len(snippets)
    before = fresh_cpu()
    for source in snippets:
        subprocess.run([sys.executable, "-c", source], capture_output=True)
    fresh_cpu_run = (fresh_cpu() - before) / len(snippets)

    # Throughput: the same snippets spread over 2 workers / 2 concurrent subprocesses, as a
    # trainer's reward batch would be; per-run cost = elapsed / runs.
    jobs = [{"mode": "exec", "source": s} for s in snippets] * args.rounds
    with Sandbox(workers=2) as box2, ThreadPoolExecutor(2) as threads:
        box2.map(jobs[:2])
        start = time.perf_counter()
        results = box2.map(jobs)
        pool_batch = (time.perf_counter() - start) / len(jobs)
        assert all(r.status == "ok" for r in results)
        start = time.perf_counter()
        runs = list(
            threads.map(
                lambda src: subprocess.run([sys.executable, "-c", src], capture_output=True),
                [j["source"] for j in jobs],
            )
        )
        fresh_batch = (time.perf_counter() - start) / len(jobs)
        assert all(r.returncode == 0 for r in runs)

    pool = statistics.median(pool_times)
    fresh = statistics.median(fresh_times)
    pool_over, fresh_over = max(pool - work, 1e-6), max(fresh - work, 1e-6)
    print(f"data: {path} ({len(snippets)} snippets x {args.rounds} rounds, one at a time)")
    keys = ("pid_ns", "net_ns", "mount_ns", "minimal_root", "drop_uid", "drop_caps")
    iso = ", ".join(k for k in keys if isolation.get(k))
    iso += f", budget {isolation.get('budget', {}).get('kind')}"
    print(f"isolation in the pool: {iso or 'rlimits and process group only'}")
    print(f"snippet's own time (in-process compile+exec, mean of medians): {work * 1e3:7.2f} ms")
    print(f"pool start-up (first zygote, once):                        {startup * 1e3:7.1f} ms")
    print(
        f"per run, median   warm pool: {pool * 1e3:6.2f} ms   fresh python -c: {fresh * 1e3:6.2f} ms"
    )
    print(
        f"overhead per run  warm pool: {pool_over * 1e3:6.2f} ms   fresh python -c: {fresh_over * 1e3:6.2f} ms"
    )
    print(f"overhead ratio (fresh / pool): {fresh_over / pool_over:.1f}x lower with the warm pool")
    print(
        f"CPU per run (all processes involved): warm pool {pool_cpu_run * 1e3:.2f} ms, fresh "
        f"python -c {fresh_cpu_run * 1e3:.2f} ms; CPU overhead ratio "
        f"{(fresh_cpu_run - work) / max(pool_cpu_run - work, 1e-6):.1f}x"
    )
    print(
        f"batch of {len(jobs)} runs over 2 workers, per run: warm pool {pool_batch * 1e3:.2f} ms, "
        f"fresh python -c {fresh_batch * 1e3:.2f} ms, ratio {fresh_batch / pool_batch:.1f}x"
    )

    samples = [
        Sample(completion=s["completion"], reference=s["reference"]) for s in to_samples(records)
    ]
    tool = CodeTool(ToolSpec(name="code", kind="code"), workers=2)
    tool.score(samples[:2])  # start the zygotes outside the timing
    # First pass: every reference is new (split, and prepared where it needs it); then the
    # same samples again, as a training run sees its prompts again.
    for label in ("first pass", "again"):
        start = time.perf_counter()
        rewards = tool.score(samples)
        elapsed = time.perf_counter() - start
        tests = sum(r.components.get("total", 0) for r in rewards)
        passed = sum(r.score == 1.0 for r in rewards)
        inside = sum(r.components.get("in_process", 0) for r in rewards)
        print(
            f"HumanEval grading, 2 workers, {label}: {len(samples)} samples ({passed} at 1.0, "
            f"{inside:.0f} tests in process), {tests:.0f} tests in {elapsed:.2f} s = "
            f"{tests / elapsed:.0f} tests/s, {len(samples) / elapsed:.0f} samples/s"
        )
    tool.close()


if __name__ == "__main__":
    main()
