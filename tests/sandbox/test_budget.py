"""The run budget's cgroups (`rewardsmith.sandbox.budget`): one per zygote, and none left
behind: not after `close`, not after the pool kills a zygote, not after the caller is killed,
and those of zygotes that died with their caller are swept by the next one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import LIMITS

from rewardsmith.sandbox import Sandbox
from rewardsmith.sandbox.budget import PREFIX, group_name


@pytest.fixture(scope="module")
def kind() -> Iterator[str]:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        found = str(sandbox.isolation["budget"]["kind"])
    if found not in ("cgroup1", "cgroup2"):
        pytest.skip(f"no cgroup can be made here ({found})")
    yield found


def _gone(paths: list[str], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(os.path.exists(p) for p in paths):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_one_cgroup_per_zygote_removed_on_close(kind: str) -> None:
    sandbox = Sandbox(workers=2, limits=LIMITS)
    sandbox.map([{"mode": "exec", "source": "print(1)"}] * 2)
    paths = [p for worker in sandbox._all for p in worker.cgroups]
    assert len(paths) == (2 if kind == "cgroup1" else 1) * 2
    assert all(os.path.isdir(p) and PREFIX in p for p in paths)
    sandbox.close()
    assert _gone(paths)


def test_the_cgroup_of_a_killed_zygote_is_removed_by_the_pool(kind: str) -> None:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        assert sandbox.run("print(1)").ok
        [worker] = sandbox._all
        paths = list(worker.cgroups)
        os.kill(worker.pid, signal.SIGKILL)
        for n in (2, 3):
            sandbox.run(f"print({n})")  # one of them meets the death, the pool replaces it
        assert _gone(paths)


def test_a_killed_caller_leaves_no_cgroup(kind: str) -> None:
    caller = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import json, time\n"
            "from rewardsmith.sandbox import Sandbox\n"
            "box = Sandbox(workers=2)\n"
            "box.map([{'mode': 'exec', 'source': 'print(1)'}] * 2)\n"
            "print(json.dumps([p for w in box._all for p in w.cgroups]), flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert caller.stdout is not None
    paths = json.loads(caller.stdout.readline())
    assert paths and all(os.path.isdir(p) for p in paths)
    caller.kill()  # no close(): the zygotes see their pipe close and clean up themselves
    caller.wait()
    assert _gone(paths)


def test_cgroups_of_zygotes_that_died_with_their_caller_are_swept(kind: str) -> None:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        parents = {str(Path(p).parent) for p in sandbox.isolation["budget"]["paths"]}
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = [os.path.join(parent, group_name(dead.pid)) for parent in parents]
    # Another PID namespace's cgroup is not ours to judge, whatever its pid.
    foreign = [os.path.join(parent, f"{PREFIX}1-{dead.pid}") for parent in parents]
    for path in stale + foreign:
        os.mkdir(path)
    try:
        with Sandbox(workers=1, limits=LIMITS) as sandbox:
            assert sandbox.run("print(1)").ok
            assert _gone(stale)
            assert all(os.path.isdir(path) for path in foreign)
    finally:
        for path in foreign:
            os.rmdir(path)
