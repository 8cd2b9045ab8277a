"""The fallback where the kernel refuses namespaces (`Sandbox(namespaces=False)`): limits,
the wall-clock kill, clean-up of every leftover process, the scrubbed environment and the
temporary directory must hold without them."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from sandbox_helpers import GRACE, LIMITS, double_fork_daemon, leftover_processes, unique_marker

from rewardsmith.sandbox import Sandbox
from rewardsmith.sandbox.worker import _descendants


@pytest.fixture(scope="module")
def plain() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=1, limits=LIMITS, namespaces=False)
    yield sandbox
    sandbox.close()


def descendants_of_zygote(sandbox: Sandbox, settle: float = 1.0) -> list[int]:
    """The zygote's live descendants other than its one waiting child, after `settle` s."""
    [zygote] = sandbox.worker_pids()
    deadline = time.monotonic() + settle
    while True:
        tree = [p for p in _descendants(zygote, set()) if not _zombie(p)]
        if len(tree) <= 1 or time.monotonic() > deadline:
            return tree[1:] if len(tree) == 1 else tree
        time.sleep(0.02)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_nothing_is_isolated_by_namespaces_and_it_says_so(plain: Sandbox) -> None:
    info = plain.isolation
    assert not info["pid_ns"] and not info["net_ns"] and not info["private_tmp"]


def test_infinite_loop_times_out(plain: Sandbox) -> None:
    start = time.monotonic()
    result = plain.run("while True:\n    pass\n")
    assert result.status == "timeout"
    assert time.monotonic() - start < LIMITS.wall_seconds + GRACE


def test_fork_bomb_leaves_no_process(plain: Sandbox) -> None:
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    result = plain.run(code)
    assert result.status in ("timeout", "failed", "killed")
    assert descendants_of_zygote(plain) == []


def test_daemon_that_left_the_process_group_is_killed(plain: Sandbox) -> None:
    marker = unique_marker()
    code = double_fork_daemon(marker)
    assert plain.run(code).status == "ok"
    assert leftover_processes(plain.worker_pids(), marker) == []


def test_environment_is_scrubbed_and_directory_removed(plain: Sandbox) -> None:
    first = plain.run("import os\nprint(os.getcwd(), os.listdir('.'), sorted(os.environ))")
    cwd = first.stdout.split()[0]
    assert "['HOME', 'LANG', 'PATH']" in first.stdout
    assert plain.run(f"import os\nprint(os.path.exists({cwd!r}))").stdout == "False\n"


def test_run_folders_on_the_host_are_removed_on_close_and_after_a_crash() -> None:
    sandbox = Sandbox(workers=1, limits=LIMITS, namespaces=False)
    assert sandbox.run("print(1)").ok
    [first] = sandbox._all
    crashed = first.host_tmp_root
    assert crashed is not None and os.path.isdir(crashed)
    os.kill(first.pid, signal.SIGKILL)  # it cannot clean up after itself
    results = [sandbox.run("print(2)") for _ in range(2)]  # one meets the death
    assert results[-1].stdout == "2\n"
    assert not os.path.exists(crashed)
    [second] = sandbox._all
    assert second.host_tmp_root is not None and second.host_tmp_root != crashed
    sandbox.close()
    assert not os.path.exists(second.host_tmp_root)
