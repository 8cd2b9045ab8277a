"""Every example a `--help` page shows runs when pasted from the project's root: the files it
reads ship in examples/ (or an earlier example writes them under out/ or runs/), and, in the
slow run, each example is run in that order as a user would, in a fresh folder holding only
`examples/`. The grpo and search examples build the testbed policy on first use (an hour on
a busy 2-core machine): set `REWARDSMITH_TESTBED_CACHE` to a folder holding a build to reuse
it."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rewardsmith.cli.examples import EXAMPLES
from rewardsmith.cli.main import app
from support import REPO_ROOT, SHARED_DATA

# The order a user would meet them in: what an example reads, an earlier one wrote.
RUN_ORDER = [
    "",
    "score",
    "route run",
    "route",
    "route fit",
    "tools",
    "tools list",
    "tools show",
    "audit",
    "tools add",
    "rescore",
    "compare",
    "profile",
    "tools history",
    "tools retire",
    "convert",
    "serve",
    "synth",
    "synth codeverify",
    "synth gate",
    "rm",
    "rm corpus",
    "rm pairs",
    "rm train",
    "rm eval",
    "synth wrapllm",
    "grpo",
    "grpo train",
    "grpo eval",
    "grpo testbed",
    "report",
    "search",
    "search run",
    "search report",
    "search audit",
    "search ensemble",
    "search promote",
    "bench",
    "bench routing",
]
# Exit 3 is a result, not a failure: the gate refused a tool (`synth`), the audit flagged a
# reward (`search audit`, `audit`). Everything else must exit 0.
RESULT_EXIT_3 = ("synth gate", "synth wrapllm", "synth codeverify", "search audit", "audit")
# Where examples may write; everything else they name ships in examples/.
OUTPUT_DIRS = ("out/", "runs/")


def _groups() -> list[str]:
    names = [""]
    for group in app.registered_groups:
        if group.name:
            names.append(group.name)
    return names


def test_run_order_covers_every_example() -> None:
    assert sorted(RUN_ORDER) == sorted(EXAMPLES)


@pytest.mark.parametrize("name", _groups())
def test_the_root_and_every_group_show_an_example(name: str) -> None:
    assert EXAMPLES.get(name), f"add an example for `rewardsmith {name}` to cli/examples.py"


def _paths(example: str) -> list[str]:
    return [w for w in shlex.split(example) if "/" in w and not w.startswith(("http", "-"))]


@pytest.mark.parametrize("name", sorted(EXAMPLES), ids=lambda n: n or "root")
def test_examples_name_files_that_ship_or_outputs(name: str) -> None:
    for example in EXAMPLES[name]:
        for path in _paths(example):
            if path.startswith(OUTPUT_DIRS):
                continue
            assert path.startswith("examples/"), f"{example!r}: {path} is not in the repo"
            assert (REPO_ROOT / path).exists(), f"{example!r}: {path} does not ship"


def _serve(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    """`serve` runs until stopped: it must come up healthy and stop cleanly on SIGTERM."""
    port = args[args.index("--port") + 1]
    proc = subprocess.Popen(args, cwd=cwd, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            raise AssertionError("serve did not become healthy")
        sample = {"completion": "#### 4", "reference": "4"}
        response = httpx.post(
            f"http://127.0.0.1:{port}/v1/score", json={"samples": [sample]}, timeout=60
        )
        assert response.json()["rewards"][0]["score"] == 1.0
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0


@pytest.mark.slow
def test_every_example_runs_from_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "examples").symlink_to(REPO_ROOT / "examples")
    if SHARED_DATA.is_dir():  # `bench routing` reads ../shared/data, beside the checkout
        (tmp_path / "shared").mkdir()
        (tmp_path / "shared" / "data").symlink_to(SHARED_DATA)
    env = {
        **os.environ,
        "REWARDSMITH_HOME": str(tmp_path / "home"),
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        "COLUMNS": "160",
    }
    done: set[str] = set()
    for name in RUN_ORDER:
        for example in EXAMPLES[name]:
            if example in done:
                continue
            done.add(example)
            words = shlex.split(example)
            if words[1:3] == ["bench", "routing"] and not SHARED_DATA.is_dir():
                continue  # needs the shared data folder, which does not ship
            args = [sys.executable, "-m", "rewardsmith.cli.main", *words[1:]]
            if words[1] == "serve":
                port = str(_free_port())
                args[args.index("8000")] = port
                _serve(args, root, env)
                continue
            proc = subprocess.run(
                args, cwd=root, env=env, capture_output=True, text=True, timeout=3600
            )
            allowed = (0, 3) if name in RESULT_EXIT_3 else (0,)
            assert proc.returncode in allowed, f"{example}\n{proc.stderr[-3000:]}"
            assert "Traceback" not in proc.stderr, f"{example}\n{proc.stderr[-3000:]}"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
