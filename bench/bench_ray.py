"""Ray scale-out against in-process scoring on a mixed file (GSM8K, MATH-500, HumanEval).

Builds `mixed.jsonl` (>= 500 samples) from ../shared/data: GSM8K test solutions (every third
with a wrong final number), MATH-500 solutions (every third answering 0), HumanEval canonical
and `return None` programs (`rewardsmith convert`). Then:

1. `rewardsmith score` and `rewardsmith score --ray` on it (separate processes): the two
   output files must be identical, line for line;
2. in one process, the same samples through `Scorer` with a plain `Library` and with a
   `RayLibrary` on a local Ray with 2 CPUs (the code tool's 2 sandbox workers as actors):
   samples/s of each and their ratio (Ray start-up not counted).

    python bench/bench_ray.py [--out out/bench_ray] [--check-only]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TASK_MAP = {"gsm8k": "gsm8k", "math500": "math", "humaneval": "code"}
CLI = [sys.executable, "-m", "rewardsmith.cli.main"]


def build_mixed(folder: Path, gsm8k: int = 200, math: int = 150) -> Path:
    """Write folder/mixed.jsonl and return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    with open(DATA / "gsm8k" / "test.jsonl") as handle:
        for i, line in enumerate(handle):
            if i >= gsm8k:
                break
            row = json.loads(line)
            gold = row["answer"].split("####")[-1].strip()
            completion = row["answer"] if i % 3 else row["answer"].rsplit("####", 1)[0] + "#### 0"
            lines.append(
                {
                    "id": f"gsm8k-{i}",
                    "prompt": row["question"],
                    "completion": completion,
                    "reference": gold,
                    "task": "gsm8k",
                }
            )
    with open(DATA / "math" / "math500.jsonl") as handle:
        for i, line in enumerate(handle):
            if i >= math:
                break
            row = json.loads(line)
            completion = row["solution"] if i % 3 else "So the answer is $\\boxed{0}$."
            lines.append(
                {
                    "id": f"math-{i}",
                    "prompt": row["problem"],
                    "completion": completion,
                    "reference": row["answer"],
                    "task": "math500",
                }
            )
    for kind in ("canonical", "return_none"):
        out = folder / f"humaneval_{kind}.jsonl"
        subprocess.run(
            [
                *CLI,
                "convert",
                str(DATA / "code" / "HumanEval.jsonl.gz"),
                "-o",
                str(out),
                "--completion",
                kind,
            ],
            check=True,
            capture_output=True,
        )
        for line in out.read_text().splitlines():
            lines.append({**json.loads(line), "task": "humaneval"})
    path = folder / "mixed.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def cli_outputs(mixed: Path, folder: Path) -> dict[str, float]:
    """Score with and without --ray through the CLI; exit 1 unless the files are identical."""
    task_map = ",".join(f"{k}={v}" for k, v in TASK_MAP.items())
    seconds = {}
    for name, extra in (("in-process", []), ("ray", ["--ray"])):
        start = time.perf_counter()
        subprocess.run(
            [
                *CLI,
                "score",
                str(mixed),
                "-o",
                str(folder / f"{name}.jsonl"),
                "-q",
                "--task-map",
                task_map,
                "--library",
                str(folder / "library.db"),
                *extra,
            ],
            check=True,
        )
        seconds[name] = time.perf_counter() - start
    same = (folder / "in-process.jsonl").read_bytes() == (folder / "ray.jsonl").read_bytes()
    n = len(mixed.read_text().splitlines())
    print(f"score vs score --ray on {n} samples: outputs identical: {same}")
    print(
        f"  CLI wall time (Ray start-up included): in-process {seconds['in-process']:.1f} s, "
        f"--ray {seconds['ray']:.1f} s"
    )
    if not same:
        sys.exit(1)
    return seconds


def throughput(mixed: Path, folder: Path) -> None:
    import ray

    from rewardsmith.jsonl import read_records
    from rewardsmith.library.store import Library
    from rewardsmith.scoring import Scorer
    from rewardsmith.server.ray_backend import RayLibrary, start_ray

    records = read_records(mixed)
    rates = {}
    for name in ("in-process", "ray (2 local workers)"):
        if name.startswith("ray"):
            start_ray(num_cpus=2)
            lib: Library = RayLibrary(folder / "library.db")
        else:
            lib = Library(folder / "library.db")
        scorer = Scorer(None, TASK_MAP, lib)
        scorer.score(records[:8])  # start pools, zygotes and actors before timing
        start = time.perf_counter()
        for i in range(0, len(records), 256):  # the CLI's chunk size
            scorer.score(records[i : i + 256])
        rates[name] = len(records) / (time.perf_counter() - start)
        scorer.close()
        lib.close()  # closes its tools: sandboxes, actors, math workers
    ray.shutdown()
    base = rates["in-process"]
    for name, rate in rates.items():
        print(f"  {name:24s} {rate:8.1f} samples/s   ratio {rate / base:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/bench_ray"))
    parser.add_argument("--check-only", action="store_true", help="Only the identity check.")
    args = parser.parse_args()
    mixed = build_mixed(args.out)
    cli_outputs(mixed, args.out)
    if not args.check_only:
        throughput(mixed, args.out)


if __name__ == "__main__":
    main()
