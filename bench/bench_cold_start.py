"""Cold start: a routed `score` and `serve` against the same commands with one tool, in one run.

Each command runs as a fresh process, as a user starts it:

- `rewardsmith score examples/mixed.jsonl -o OUT -q` (routed) against the same with
  `--tool gsm8k`: wall seconds from start to exit;
- `rewardsmith serve` (routed) against `rewardsmith serve --tool gsm8k`: wall seconds from
  start to the first `GET /health` 200 (workers built and warm), then SIGTERM.

Printed: the median seconds of each, and the ratios routed / single-tool (targets: score
<= 3x, routed serve healthy <= 15 s), and the floor of the routed `score`: work only it does,
each part timed as a process of its own (loading MiniLM; loading it and embedding the file's
distinct prompts; starting the math tool's worker pool). The commands alternate (single,
routed, single, ...), so load from other work on a shared machine falls on both sides alike;
the load average is printed.

`REWARDSMITH_HOME` is a fresh folder per run of the bench: the first routed command pays for
a cold exemplar cache (printed apart, as "first routed score"); the measured repeats start
with it warm, as every start after a user's first does. `--src DIR` runs another source tree
(e.g. a `git worktree add --detach` of an older commit: `--src ../base/src`) with this
virtualenv; `--before DIR` measures that tree and this one in turn, round after round, each
with its own fresh home, so before and after share the machine's load:

    python bench/bench_cold_start.py [--repeats 3] [--workers 2] [--src DIR] [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "mixed.jsonl"
SINGLE_TOOL = "gsm8k"
# A server that is not healthy by then has failed to start (a routed one took ~50 s before).
SERVE_TIMEOUT = 300.0
POLL_SECONDS = 0.05


def _env(src: Path | None, home: Path) -> dict[str, str]:
    env = dict(os.environ, REWARDSMITH_HOME=str(home))
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    return env


def _cli() -> list[str]:
    return [sys.executable, "-m", "rewardsmith.cli.main"]


def time_score(env: dict[str, str], out: Path, tool: str | None) -> float:
    """Seconds for one `rewardsmith score` process, start to exit."""
    cmd = [*_cli(), "score", str(EXAMPLES), "-o", str(out), "-q"]
    if tool:
        cmd += ["--tool", tool]
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _time_code(env: dict[str, str], code: str, *args: str) -> float:
    """Seconds for a fresh `python -c code args...`, start to exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], env=env, check=True)
    return time.perf_counter() - start


def time_model_load(env: dict[str, str]) -> float:
    """Seconds for a process that only loads MiniLM (on onnxruntime once it is exported, or
    with torch and transformers): the floor of any start that embeds a prompt with it."""
    code = "from rewardsmith.router.embedded import MiniLMEmbedder; MiniLMEmbedder().load()"
    return _time_code(env, code)


# What the router embeds of the file: each distinct prompt group's text, once (written to
# a file by an untimed process: reading features imports what routing needs besides MiniLM).
PROMPT_TEXTS = f"""
import json, sys
from rewardsmith.router.features import sample_features
from rewardsmith.samples import as_samples
lines = open({str(EXAMPLES)!r}, encoding="utf-8").read().splitlines()
texts = sorted({{sample_features(s).text for s in as_samples([json.loads(x) for x in lines])}})
json.dump(texts, open(sys.argv[1], "w"))
"""
EMBED_PROMPTS = """
import json, sys
from rewardsmith.router.embedded import MiniLMEmbedder
MiniLMEmbedder().encode(json.load(open(sys.argv[1])))
"""
# The math tool's worker pool started and stopped (each worker imports math-verify, warms up).
START_MATH = "from rewardsmith.tools.math import MathTool; t = MathTool(); t.start(); t.close()"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as resp:
            return int(resp.status) == 200
    except (urllib.error.URLError, OSError):
        return False


def time_serve(env: dict[str, str], tool: str | None, workers: int) -> float:
    """Seconds from starting `rewardsmith serve` to its first /health 200."""
    port = _free_port()
    cmd = [*_cli(), "serve", "--port", str(port), "--workers", str(workers)]
    cmd += ["--log-level", "warning"] + (["--tool", tool] if tool else [])
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        while not _healthy(port):
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode} before /health said 200")
            if time.perf_counter() - start > SERVE_TIMEOUT:
                raise RuntimeError(f"serve not healthy after {SERVE_TIMEOUT:.0f} s")
            time.sleep(POLL_SECONDS)
        return time.perf_counter() - start
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


NAMES = ("single", "routed", "model", "embed", "math", "s_serve", "r_serve")


def measure_round(
    env: dict[str, str], out: Path, times: dict[str, list[float]], serve: bool, workers: int
) -> None:
    """One measurement of every command, for one source tree."""
    texts = out.with_name("prompt_texts.json")
    subprocess.run([sys.executable, "-c", PROMPT_TEXTS, str(texts)], env=env, check=True)
    times["model"].append(time_model_load(env))
    times["embed"].append(_time_code(env, EMBED_PROMPTS, str(texts)))
    times["math"].append(_time_code(env, START_MATH))
    times["single"].append(time_score(env, out, SINGLE_TOOL))
    times["routed"].append(time_score(env, out, None))
    if serve:
        times["s_serve"].append(time_serve(env, SINGLE_TOOL, workers))
        times["r_serve"].append(time_serve(env, None, workers))


def report(label: str, times: dict[str, list[float]]) -> None:
    """The medians, ratios and floor of one source tree."""
    med = {k: statistics.median(v) for k, v in times.items() if v}
    single = med["single"]
    print(f"--- {label}")
    print(
        f"score: routed {med['routed']:.1f} s, --tool {SINGLE_TOOL} {single:.1f} s: "
        f"ratio {med['routed'] / single:.1f}x (target <= 3x)"
    )
    print("floor: work only the routed run does, each in a process of its own:")
    print(f"  loading MiniLM (its runtime's imports included) {med['model']:.1f} s")
    print(f"  ... and embedding the file's distinct prompts {med['embed']:.1f} s")
    print(f"  starting the math tool's workers (math-verify, warm-up) {med['math']:.1f} s")
    floor = single + med["embed"] + med["math"]
    print(
        f"  one-tool score + both: {floor:.1f} s = {floor / single:.1f}x the one-tool score "
        "(the math workers can overlap other work only on a free core)"
    )
    if "r_serve" in med:
        print(
            f"serve healthy: routed {med['r_serve']:.1f} s (target <= 15 s), --tool "
            f"{SINGLE_TOOL} {med['s_serve']:.1f} s: ratio "
            f"{med['r_serve'] / med['s_serve']:.1f}x"
        )
    print("all runs (s):", {k: [round(x, 1) for x in v] for k, v in times.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="Measured runs of each command.")
    parser.add_argument("--workers", type=int, default=2, help="`serve --workers`.")
    parser.add_argument("--src", type=Path, default=None, help="Source tree to run instead.")
    parser.add_argument(
        "--before", type=Path, default=None, help="Another source tree, measured in turn."
    )
    parser.add_argument("--skip-serve", action="store_true", help="Measure `score` only.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rs-coldstart-") as tmp:
        trees = [("before", args.before)] if args.before is not None else []
        trees.append(("this tree" if args.before is not None else "", args.src))
        envs: dict[str, dict[str, str]] = {}
        for label, src in trees:
            home = Path(tmp) / f"home-{len(envs)}"
            home.mkdir()
            envs[label] = _env(src, home)
        print(f"load: {os.getloadavg()[0]:.1f} (1-min average, {os.cpu_count()} CPUs)")
        out = Path(tmp) / "out.jsonl"
        for label, env in envs.items():
            where = subprocess.run(
                [sys.executable, "-c", "import rewardsmith; print(rewardsmith.__file__)"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            first = time_score(env, out, None)
            print(f"{label or 'rewardsmith'} from {where}")
            print(f"  first routed score (empty REWARDSMITH_HOME): {first:.1f} s")
        times: dict[str, dict[str, list[float]]] = {lab: {k: [] for k in NAMES} for lab in envs}
        for _ in range(args.repeats):
            for label, env in envs.items():
                measure_round(env, out, times[label], not args.skip_serve, args.workers)
        print(f"load after: {os.getloadavg()[0]:.1f}")
        for label in envs:
            report(label or "rewardsmith", times[label])


if __name__ == "__main__":
    main()
