"""The reward server under RL-style load, against in-process `score` on the same batches.

Load: 64 clients in 4 processes on loopback post batches of 64 GSM8K samples (test-set
solutions, every third with a wrong final number) for 60 s; every reward is checked.
Printed: rewards/s, p50/p99 latency, failed and lost requests (a non-200 after retries, a
missing or different reward), 503s retried, and both ratios of the same run: server
rewards/s over in-process rewards/s (`Scorer.score` on the same batches in this process: the
median of one-second windows before and after the load, as other work on a shared machine
comes and goes; target >= 0.8), and the server's CPU time per reward (event loop and workers)
over in-process scoring's (target <= 1.5). Then with one hanging sample in every batch: it
must come back `timeout` at the deadline and the other 63 with their in-process values.

    python bench/bench_server.py [--seconds 60] [--clients 64] [--workers 2]

Also printed: the machine's load (the ratios move with it) and how the workers spent the run
(/proc/PID/schedstat): running, waiting for a CPU, or waiting for work (the server's overhead).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardsmith.tools.gsm8k import GSM8KTool
from rewardsmith.types import Reward, Sample, ToolSpec

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "gsm8k" / "test.jsonl"
BATCH = 64
PROCESSES = 4
HANG_MARKER = "<<hang forever>>"
# Issue 27, item 7: the server's throughput at least this share of in-process scoring's, and
# its CPU per reward (event loop and workers) at most this multiple of in-process scoring's.
TARGET_THROUGHPUT = 0.8
TARGET_CPU = 1.5


class GSM8KOrHang(GSM8KTool):
    """The gsm8k tool, except that a batch holding `HANG_MARKER` never returns (a stuck
    verifier); served as tool `gsm8k_or_hang` in the second run."""

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        if any(HANG_MARKER in s.completion for s in samples):
            while True:
                time.sleep(3600)
        return super().score(samples)


def gsm8k_batches() -> list[list[dict[str, Any]]]:
    rows = [json.loads(line) for line in DATA.read_text().splitlines()]
    samples = []
    for i, row in enumerate(rows):
        gold = row["answer"].split("####")[-1].strip()
        completion = row["answer"] if i % 3 else row["answer"].rsplit("####", 1)[0] + "#### 0"
        samples.append({"prompt": row["question"], "completion": completion, "reference": gold})
    return [samples[i : i + BATCH] for i in range(0, len(samples) - BATCH + 1, BATCH)]


def in_process_windows(
    batches: list[list[dict[str, Any]]], windows: int, library: str
) -> tuple[list[float], float]:
    """`in_process_rate` over `windows` one-second windows: on a shared machine one long
    window can land on a burst of someone else's work."""
    runs = [in_process_rate(batches, 1.0, library) for _ in range(windows)]
    return [rate for rate, _ in runs], statistics.median(cpu for _, cpu in runs)


def in_process_rate(
    batches: list[list[dict[str, Any]]], seconds: float, library: str
) -> tuple[float, float]:
    """Rewards per second of `Scorer.score` on the batches, and CPU microseconds per reward."""
    from rewardsmith.scoring import Scorer

    scorer = Scorer("gsm8k", library=library)
    scorer.score(batches[0])
    done, start, cpu = 0, time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        for batch in batches:
            done += len(scorer.score(batch))
    rate = done / (time.perf_counter() - start)
    cpu_per_reward = (time.process_time() - cpu) / done * 1e6
    scorer.close()
    return rate, cpu_per_reward


def expected_rewards(
    batches: list[list[dict[str, Any]]], library: str, tool: str
) -> list[list[dict[str, Any]]]:
    from rewardsmith.scoring import score

    return [[r.to_dict("api") for r in score(b, tool, library=library)] for b in batches]


# -- the load: one process of asyncio clients ------------------------------------------------


def client_process(
    url: str,
    bodies: list[bytes],
    expected: list[list[dict[str, Any]]],
    clients: int,
    seconds: float,
    hang_index: int | None,
    out: Any,
) -> None:
    out.send(asyncio.run(_clients(url, bodies, expected, clients, seconds, hang_index)))


async def _clients(
    url: str,
    bodies: list[bytes],
    expected: list[list[dict[str, Any]]],
    clients: int,
    seconds: float,
    hang_index: int | None,
) -> dict[str, Any]:
    # aiohttp: the load generator shares the machine's CPUs with the server, and needs
    # several times less of them per request than httpx.
    import aiohttp

    stats: dict[str, Any] = {
        "ok": 0,
        "failed": 0,
        "lost": 0,
        "retried_503": 0,
        "latency": [],
        "served": [],
        "rewards": 0,
        "lost_samples": 0,
        "lost_example": None,
    }
    headers = {"content-type": "application/json"}
    stop = time.monotonic() + seconds

    async def post(http: aiohttp.ClientSession, body: bytes) -> tuple[int, bytes, float]:
        give_up = stop + 120  # a request started in the run may finish after it
        while time.monotonic() < give_up:
            try:
                attempt = time.monotonic()
                async with http.post(f"{url}/v1/score", data=body, headers=headers) as response:
                    data = await response.read()
                    if response.status == 503:
                        stats["retried_503"] += 1
                        await asyncio.sleep(float(response.headers.get("retry-after", 1)))
                        continue
                    return response.status, data, time.monotonic() - attempt
            except aiohttp.ClientError:
                await asyncio.sleep(0.5)
        return 0, b"", 0.0

    async def one_client(k: int, http: aiohttp.ClientSession) -> None:
        i = k
        while time.monotonic() < stop:
            n = i % len(bodies)
            i += clients
            start = time.monotonic()
            status, data, served = await post(http, bodies[n])
            stats["latency"].append(time.monotonic() - start)
            stats["served"].append(served)
            if status != 200:
                stats["failed"] += 1
                continue
            got = json.loads(data)["rewards"]
            want = expected[n]
            if hang_index is not None:
                hung = got.pop(hang_index) if len(got) == len(want) + 1 else None
                if hung is None or hung["status"] != "timeout":
                    stats["lost"] += 1
                    continue
            if got != want:
                stats["lost"] += 1
                wrong = [g for g, w in zip(got, want, strict=False) if g != w]
                stats["lost_samples"] += len(wrong) + abs(len(got) - len(want))
                if wrong:
                    stats["lost_example"] = wrong[0]
                continue
            stats["ok"] += 1
            stats["rewards"] += len(got)

    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        await asyncio.gather(*(one_client(k, http) for k in range(clients)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    stats["cpu"] = usage.ru_utime + usage.ru_stime
    return stats


def run_load(
    url: str,
    batches: list[list[dict[str, Any]]],
    expected: list[list[dict[str, Any]]],
    clients: int,
    seconds: float,
    hang_index: int | None,
    tool: str,
) -> dict[str, Any]:
    bodies = []
    for batch in batches:
        samples = list(batch)
        if hang_index is not None:
            samples.insert(hang_index, {"completion": HANG_MARKER, "reference": "0"})
        bodies.append(json.dumps({"samples": samples, "tool": tool}).encode())
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    per_process = clients // PROCESSES
    for p in range(PROCESSES):
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=client_process,
            args=(
                url,
                bodies[p::PROCESSES] or bodies,
                expected[p::PROCESSES] or expected,
                per_process,
                seconds,
                hang_index,
                child,
            ),
        )
        proc.start()
        pipes.append(parent)
        procs.append(proc)
    start = time.monotonic()
    results = [pipe.recv() for pipe in pipes]
    elapsed = time.monotonic() - start
    for proc in procs:
        proc.join()
    total: dict[str, Any] = {
        k: sum(r[k] for r in results) for k in ("ok", "failed", "lost", "retried_503", "rewards")
    }
    latency = sorted(x for r in results for x in r["latency"])
    total["p50"] = statistics.median(latency) if latency else float("nan")
    total["p99"] = latency[int(0.99 * (len(latency) - 1))] if latency else float("nan")
    served = sorted(x for r in results for x in r["served"])
    total["served_p50"] = statistics.median(served) if served else float("nan")
    total["served_p99"] = served[int(0.99 * (len(served) - 1))] if served else float("nan")
    total["rate"] = total["rewards"] / elapsed
    total["requests"] = len(latency)
    total["client_cpu"] = sum(r["cpu"] for r in results)
    total["lost_samples"] = sum(r["lost_samples"] for r in results)
    total["lost_example"] = next((r["lost_example"] for r in results if r["lost_example"]), None)
    total["elapsed"] = elapsed
    return total


# -- the server --------------------------------------------------------------------------------


def register_hang_tool(folder: Path) -> Path:
    """Make `GSM8KOrHang` a tool plugin, as a package would (an entry point in the group
    `rewardsmith.tools`, here a dist-info folder in `folder`): the library imports no other
    factory. `folder` goes on the path of this process and of the server's."""
    info = folder / "rewardsmith_bench_hang-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: rewardsmith-bench-hang\nVersion: 0\n"
    )
    (info / "entry_points.txt").write_text(
        "[rewardsmith.tools]\ngsm8k_or_hang = bench_server:GSM8KOrHang\n"
    )
    sys.path.insert(0, str(folder))
    return folder


def start_server(
    library: str, port: int, workers: int, deadline: float, max_pending: int, plugins: Path
) -> subprocess.Popen[bytes]:
    path = os.pathsep.join(
        [str(Path(__file__).resolve().parent), str(plugins), os.environ.get("PYTHONPATH", "")]
    )
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rewardsmith.cli.main",
            "serve",
            "--port",
            str(port),
            "--library",
            library,
            "--tool",
            "gsm8k",
            "--task-map",
            "hang=gsm8k_or_hang",
            "--workers",
            str(workers),
            "--deadline",
            str(deadline),
            "--max-pending",
            str(max_pending),
            "--log-level",
            "warning",
        ],
        env=env,
    )
    import httpx

    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start")


def process_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds so far of a process itself and of its descendants (from /proc; the
    scoring workers are children of the forkserver, a child of the server)."""
    ticks = os.sysconf("SC_CLK_TCK")

    def own(p: int) -> float:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError):
            return 0.0

    def descendants(p: int) -> list[int]:
        children = []
        for task in Path(f"/proc/{p}/task").glob("*"):  # any thread may have started one
            with contextlib.suppress(OSError):
                children += [int(c) for c in (task / "children").read_text().split()]
        return children + [d for c in children for d in descendants(c)]

    return own(pid), sum(own(d) for d in descendants(pid))


def worker_schedstat(pid: int) -> dict[int, tuple[int, int]]:
    """Nanoseconds each scoring worker (a child of the forkserver, itself a child of the
    server) has spent running and runnable but waiting for a CPU (/proc/PID/schedstat)."""
    out = {}
    for forkserver in _children(pid):
        for worker in _children(forkserver):
            with contextlib.suppress(OSError, ValueError):
                run, wait, _ = Path(f"/proc/{worker}/schedstat").read_text().split()
                out[worker] = (int(run), int(wait))
    return out


def _children(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            children += [int(c) for c in (task / "children").read_text().split()]
    return children


def worker_time_shares(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], wall: float
) -> str:
    """How the workers present all through the run spent it: running, waiting for a CPU
    (the machine is busy), or neither (waiting for a job: the server's own doing)."""
    pids = before.keys() & after.keys()
    if not pids:
        return "no worker lasted the whole run"
    run = sum(after[p][0] - before[p][0] for p in pids) / 1e9 / len(pids) / wall
    wait = sum(after[p][1] - before[p][1] for p in pids) / 1e9 / len(pids) / wall
    return (
        f"{len(pids)} workers, each: running {run:.0%}, waiting for a CPU {wait:.0%}, "
        f"waiting for work {max(0.0, 1 - run - wait):.0%} of the run"
    )


def stop_server(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=120)


def report(name: str, result: dict[str, Any]) -> None:
    print(
        f"{name}: {result['rate']:.0f} rewards/s, {result['requests']} requests, "
        f"p50 {result['p50'] * 1000:.0f} ms, p99 {result['p99'] * 1000:.0f} ms, "
        f"failed {result['failed']}, lost {result['lost']}, 503s retried {result['retried_503']}"
    )
    if result["retried_503"]:
        print(
            f"  latency of the admitted attempt (without waiting out 503s): p50 "
            f"{result['served_p50'] * 1000:.0f} ms, p99 {result['served_p99'] * 1000:.0f} ms"
        )
    if result["lost"]:
        print(f"  lost samples: {result['lost_samples']}, e.g. {result['lost_example']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--baseline-seconds", type=float, default=10)
    parser.add_argument("--hang-deadline", type=float, default=2.0)
    parser.add_argument("--hang-workers", type=int, default=16)
    parser.add_argument("--skip-hang", action="store_true")
    args = parser.parse_args()
    from rewardsmith.library.store import Library
    from rewardsmith.server.config import DEFAULT_MAX_PENDING

    folder = Path(tempfile.mkdtemp(prefix="bench_server-"))
    library = str(folder / "library.db")
    plugins = register_hang_tool(folder / "plugins")
    with Library(library) as lib:
        spec = ToolSpec(name="gsm8k_or_hang", domains=("math",), provenance="user")
        lib.add(spec, {"factory": "bench_server:GSM8KOrHang", "params": {}})
    print("load:", os.getloadavg(), f"({os.cpu_count()} CPUs)")
    batches = gsm8k_batches()
    expected = expected_rewards(batches, library, "gsm8k")
    before, base_cpu = in_process_windows(batches, int(args.baseline_seconds), library)

    port = 18000 + os.getpid() % 1000
    server = start_server(library, port, args.workers, 60, DEFAULT_MAX_PENDING, plugins)
    cpu_before = process_cpu(server.pid)
    sched_before, sched_start = worker_schedstat(server.pid), time.monotonic()
    normal = run_load(
        f"http://127.0.0.1:{port}", batches, expected, args.clients, args.seconds, None, "gsm8k"
    )
    cpu_after = process_cpu(server.pid)
    shares = worker_time_shares(
        sched_before, worker_schedstat(server.pid), time.monotonic() - sched_start
    )
    main_cpu = cpu_after[0] - cpu_before[0]
    server_cpu = main_cpu + cpu_after[1] - cpu_before[1]
    print(f"exit code after SIGTERM: {stop_server(server)}")
    report(f"server ({args.workers} workers, {args.clients} clients)", normal)
    after, _ = in_process_windows(batches, int(args.baseline_seconds), library)
    rates = sorted(before + after)
    base = statistics.median(rates)
    print(
        f"in-process score (batches of {BATCH}, one process), {len(rates)} one-second windows "
        f"before and after the run: median {base:.0f} rewards/s (min {rates[0]:.0f}, max "
        f"{rates[-1]:.0f}), {base_cpu:.1f} CPU us per reward"
    )
    elapsed = normal["elapsed"]
    rewards = normal["rewards"]
    server_us = server_cpu / rewards * 1e6
    print(
        f"CPU us per reward: server and workers {server_us:.1f} (its event loop "
        f"{main_cpu / rewards * 1e6:.1f}, the workers {(server_cpu - main_cpu) / rewards * 1e6:.1f}), "
        f"clients {normal['client_cpu'] / rewards * 1e6:.1f}, in-process score {base_cpu:.1f}"
    )
    print(
        f"server / in-process: throughput {normal['rate'] / base:.2f} (target >= "
        f"{TARGET_THROUGHPUT}), CPU per reward {server_us / base_cpu:.2f} (target <= "
        f"{TARGET_CPU})"
    )
    print(
        f"CPU used over the {elapsed:.0f} s: server {server_cpu:.1f} s (its event loop "
        f"{main_cpu:.1f} s, the workers {server_cpu - main_cpu:.1f} s), "
        f"load-generating clients {normal['client_cpu']:.1f} s ({os.cpu_count()} CPUs = {(os.cpu_count() or 1) * elapsed:.0f} s)"
    )
    print(f"scoring workers: {shares}")
    print("load:", os.getloadavg())

    if not args.skip_hang:
        server = start_server(
            library,
            port,
            args.hang_workers,
            args.hang_deadline,
            max(1, args.hang_workers // 4),
            plugins,
        )
        expected = expected_rewards(batches, library, "gsm8k_or_hang")
        hang = run_load(
            f"http://127.0.0.1:{port}",
            batches,
            expected,
            args.clients,
            args.seconds,
            BATCH // 2,
            "gsm8k_or_hang",
        )
        print(f"exit code after SIGTERM: {stop_server(server)}")
        report(
            f"one hanging sample per batch ({args.hang_workers} workers, "
            f"{max(1, args.hang_workers // 4)} requests admitted at once, deadline "
            f"{args.hang_deadline:g} s)",
            hang,
        )
        print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
