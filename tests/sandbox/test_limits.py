"""`SandboxLimits`: every key the zygote reads is a real limit, result records come back
whole up to `channel_bytes` and overflow it loudly, `disk_mb` sizes the private /tmp."""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.sandbox import Sandbox, SandboxLimits
from rewardsmith.sandbox.child import RLIMIT_FIELDS
from rewardsmith.sandbox.probe import parse_reward_records, reward_job

SANDBOX_SRC = Path(__file__).resolve().parents[2] / "src" / "rewardsmith" / "sandbox"
# The zygote's side: where a run's limits are read.
ZYGOTE_FILES = ("worker.py", "child.py", "outcome.py", "supervise.py")
LIMIT_NAMES = {"limits", "job_limits", "prepared"}
# A reward function whose scores are as long as floats get in a record.
# Each sample's score from its own completion (`reward` sees one sample at a time).
LONG_FLOATS = "def reward(completions, **kw):\n    return [1 / 3 + int(c) for c in completions]\n"
NUMBERS = [str(i) for i in range(10_000)]


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=1, limits=SandboxLimits(wall_seconds=20, cpu_seconds=20))
    yield sandbox
    sandbox.close()


def test_every_limit_the_zygote_reads_is_a_field() -> None:
    fields = {f.name for f in dataclasses.fields(SandboxLimits)}
    read: set[str] = set(RLIMIT_FIELDS)
    for name in ZYGOTE_FILES:
        tree = ast.parse((SANDBOX_SRC / name).read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in LIMIT_NAMES
                and isinstance(node.slice, ast.Constant)
            ):
                read.add(node.slice.value)
            # No `limits.get(key, default)`: a default would be a limit nobody can set.
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                target = node.func.value
                if node.func.attr == "get" and isinstance(target, ast.Name):
                    assert target.id not in LIMIT_NAMES, f"{name}: {target.id}.get(...)"
    assert {"channel_bytes", "output_bytes", "wall_seconds"} <= read
    assert read <= fields, read - fields


def test_a_reward_batch_of_ten_thousand_comes_back_whole(box: Sandbox) -> None:
    job = reward_job(LONG_FLOATS, [{"completions": NUMBERS}])
    result = box.run_job(job)
    assert result.status == "ok", result.reason
    [scores] = parse_reward_records(result, job["nonce"], 1)
    assert scores == [1 / 3 + i for i in range(10_000)]


def test_overflowing_the_channel_is_an_error_that_names_the_limit(box: Sandbox) -> None:
    job = reward_job(LONG_FLOATS, [{"completions": NUMBERS}])
    result = box.run_job(job, SandboxLimits(wall_seconds=20, cpu_seconds=20, channel_bytes=4096))
    assert result.status == "error"
    assert "channel_bytes" in result.reason and "4096" in result.reason


def test_disk_mb_sizes_the_private_tmp() -> None:
    with Sandbox(workers=1, limits=SandboxLimits(disk_mb=48)) as sandbox:
        if not sandbox.isolation["private_tmp"]:
            pytest.skip("no private /tmp here")
        size = "import os\ns = os.statvfs('/tmp')\nprint(s.f_blocks * s.f_frsize >> 20)"
        assert sandbox.run(size).stdout == "48\n"
        # It is the zygote's: a run cannot ask for another size.
        assert sandbox.run(size, limits=SandboxLimits(disk_mb=8)).stdout == "48\n"


def test_a_checkout_under_tmp_still_imports_in_the_sandbox(tmp_path: Path) -> None:
    # CI clones often live under /tmp, which the zygote covers with its private tmpfs.
    shutil.copytree(
        SANDBOX_SRC.parent, tmp_path / "rewardsmith", ignore=shutil.ignore_patterns("__pycache__")
    )
    script = (
        "import rewardsmith.sandbox as sb\n"
        f"assert sb.__file__.startswith({str(tmp_path)!r})\n"
        "from rewardsmith.sandbox import Sandbox, check_reward_code\n"
        "with Sandbox(workers=1) as box:\n"
        "    print(check_reward_code('def reward(completions, **kw):\\n"
        "    return [0.5 for c in completions]\\n', sandbox=box).reason)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.stdout.strip() == "admitted", done.stderr[-2000:]


# -- the deadline on a busy machine -------------------------------------------------------------

# Uses exactly this much CPU time, however long that takes on the wall clock.
CPU_BOUND = "import time\nwhile time.process_time() < 0.6:\n    pass\nprint('done')\n"


@pytest.fixture
def one_busy_cpu() -> Iterator[None]:
    """Pin this process (and the zygotes it starts) to one CPU, with three busy processes
    on it: a run gets a quarter of a CPU at most. Each hog has a session of its own: with
    the kernel's autogroup scheduling a session is one scheduling group, and a run (which
    calls setsid) would otherwise share the CPU half and half with all three hogs together,
    finishing 0.6 s of CPU in about 1.2 s, too close to the 1 s limit to decide."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(3)
    ]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, before)


@pytest.mark.parametrize(("stretch", "status"), [(6.0, "ok"), (1.0, "timeout")])
def test_waiting_for_a_cpu_does_not_count_against_the_wall_clock(
    one_busy_cpu: None, stretch: float, status: str
) -> None:
    # 0.6 s of CPU at a quarter of a CPU takes 2.4 s: past a 1 s wall-clock limit, which
    # stretches while the run waits for the CPU (and does not with wall_stretch=1).
    limits = SandboxLimits(wall_seconds=1.0, wall_stretch=stretch, cpu_seconds=5.0)
    with Sandbox(workers=1, limits=limits) as sandbox:
        result = sandbox.run(CPU_BOUND)
    assert result.status == status, result
    if status == "timeout":
        assert result.reason == "wall-clock limit of 1.0 s"


@pytest.mark.parametrize(
    "program",
    [
        "import time\ntime.sleep(60)\n",
        # a run that keeps itself waiting: eight busy processes of its own
        "import os\nfor _ in range(3):\n    os.fork()\nwhile True:\n    pass\n",
    ],
)
def test_a_run_that_sleeps_or_starves_itself_ends_at_the_wall_clock(program: str) -> None:
    limits = SandboxLimits(wall_seconds=1.0, wall_stretch=6.0, cpu_seconds=30.0)
    with Sandbox(workers=1, limits=limits) as sandbox:
        start = time.monotonic()
        result = sandbox.run(program)
        elapsed = time.monotonic() - start
    assert result.status == "timeout", result
    assert elapsed < limits.wall_seconds + 3.0, f"{elapsed:.1f} s"
