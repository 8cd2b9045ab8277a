# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""The warm pool: statuses, replacement of dead workers, no deadlock under overload."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sandbox_helpers import GRACE, LIMITS, box, leftover_processes, unique_marker  # noqa: F401

from rewardsmith.sandbox import Sandbox, SandboxLimits
from rewardsmith.sandbox.child import READY_NAME
from rewardsmith.sandbox.worker import SANDBOX_UID_BASE


def zygote_pid(pid: int) -> int:
    """The zygote: the worker process itself, or its child when it entered a PID namespace."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = f.read().split()
    return int(children[0]) if children else pid


def test_statuses_of_ordinary_runs(box: Sandbox) -> None:
    # (program, status, exit code)
    table = [
        ("print('hi')", "ok", 0),
        ("import sys\nsys.exit(3)", "failed", 3),
        ("raise ValueError('x')", "failed", 1),
        ("def f(:", "failed", 1),
    ]
    for source, status, code in table:
        result = box.run(source)
        assert (result.status, result.exit_code) == (status, code), (source, result)
    assert "ValueError: x" in box.run("raise ValueError('x')").stderr


def test_stdin_reaches_the_program(box: Sandbox) -> None:
    result = box.run("import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))", "1 2 3\n")
    assert result.stdout == "6\n"
    big = " ".join(["1"] * 100_000)  # larger than a pipe buffer
    assert box.run("import sys\nprint(len(sys.stdin.read().split()))", big).stdout == "100000\n"


NAMESPACES = {"pid_ns": "pid", "net_ns": "net", "mount_ns": "mnt", "ipc_ns": "ipc"}


def test_isolation_report_matches_what_a_run_sees(box: Sandbox) -> None:
    # Each flag the report gives is checked against the run itself, whatever this machine
    # allows: its namespaces against ours, its uid, and whether its /tmp is the host's.
    info = box.isolation
    name = f"rs-isolation-{unique_marker()}"
    probe = (
        "import json, os\n"
        f"open('/tmp/{name}', 'w').close()\n"
        "ns = {k: os.readlink(f'/proc/self/ns/{k}') for k in ('pid', 'net', 'mnt', 'ipc')}\n"
        "print(json.dumps({'ns': ns, 'uid': os.getuid(), 'ppid': os.getppid()}))\n"
    )
    seen = json.loads(box.run(probe).stdout)
    host_file = Path("/tmp") / name
    try:
        assert host_file.exists() is not info["private_tmp"]
    finally:
        host_file.unlink(missing_ok=True)
    for flag, kind in NAMESPACES.items():
        assert info[flag] is (seen["ns"][kind] != os.readlink(f"/proc/self/ns/{kind}")), flag
    # The run's parent is its zygote: PID 1 of its own namespace, or a host process.
    assert (seen["ppid"] == 1) is info["pid_ns"]
    if info["drop_uid"]:
        assert seen["uid"] - SANDBOX_UID_BASE in box.worker_pids()
    else:
        assert seen["uid"] == os.getuid()


def test_overload_never_deadlocks(box: Sandbox) -> None:
    # Six hanging jobs on two workers: three rounds of the wall-clock limit, then back.
    start = time.monotonic()
    results = box.map([{"mode": "exec", "source": "while True: pass"}] * 6)
    elapsed = time.monotonic() - start
    assert [r.status for r in results] == ["timeout"] * 6
    assert elapsed < 3 * LIMITS.wall_seconds + GRACE
    assert box.run("print(1)").stdout == "1\n"


def test_a_killed_worker_is_replaced() -> None:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        assert sandbox.run("print(1)").ok
        [killed] = sandbox.worker_pids()
        os.kill(killed, signal.SIGKILL)
        # The pool may see the death before the next run (it replaces the worker quietly)
        # or meet it during one of the next two (the zygote may still answer once while its
        # parent is gone): that run says so. None hangs or fakes success, and the runs after
        # it work on the replacement.
        results = [sandbox.run(f"print({n})") for n in (2, 3, 4)]
        errors = [r for r in results if r.status == "error"]
        assert len(errors) <= 1 and all("died" in r.reason for r in errors)
        assert all(
            r.stdout == f"{n}\n"
            for n, r in zip((2, 3, 4), results, strict=True)
            if r.status != "error"
        )
        assert results[-1].stdout == "4\n"
        assert sandbox.stats.restarts == 1
        [replacement] = sandbox.worker_pids()
        assert replacement != killed and not _alive(killed)


def test_a_worker_that_stops_answering_is_replaced_in_time() -> None:
    limits = SandboxLimits(wall_seconds=0.5, wall_stretch=1.0, cpu_seconds=0.5)
    # The runs around the wedged one get room, so a busy machine cannot time them out.
    roomy = SandboxLimits(wall_seconds=30.0, cpu_seconds=5.0)
    with Sandbox(workers=1, limits=limits) as sandbox:
        assert sandbox.run("print(1)", limits=roomy).ok
        [stopped] = sandbox.worker_pids()
        os.kill(zygote_pid(stopped), signal.SIGSTOP)  # wedged in the kernel, say
        start = time.monotonic()
        result = sandbox.run("print(2)")
        assert result.status == "timeout"
        assert time.monotonic() - start < limits.wall_seconds + GRACE + 0.5
        assert sandbox.run("print(3)", limits=roomy).stdout == "3\n"
        zygotes = [stopped, *sandbox.worker_pids()]
    assert leftover_processes(zygotes) == []
    assert not any(_alive(pid) for pid in zygotes)


def test_closing_the_sandbox_ends_every_process() -> None:
    sandbox = Sandbox(workers=2, limits=LIMITS)
    sandbox.map([{"mode": "exec", "source": "print(1)"}] * 2)
    pids = sandbox.worker_pids()
    assert len(pids) == 2
    sandbox.close()
    assert not any(_alive(pid) for pid in pids)
    assert leftover_processes(pids) == []
    assert sandbox.worker_pids() == []
    assert sandbox.run("print(1)").status == "error"  # closed: a result, not an exception


def test_oversized_source_is_refused_without_running() -> None:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        result = sandbox.run("x = 1\n" * 400_000)
        assert result.status == "failed" and "longer than" in result.reason


def test_zygotes_exit_when_the_caller_dies() -> None:
    script = (
        "import os, sys\n"
        "from rewardsmith.sandbox import Sandbox\n"
        "box = Sandbox(workers=2)\n"
        "box.map([{'mode': 'exec', 'source': 'pass'}] * 2)\n"
        "print(' '.join(str(pid) for pid in box.worker_pids()), flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)
    assert leftover_processes(pids) == []


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return " Z " not in stat.read_text()
    except OSError:
        return False


def test_a_forked_caller_gets_its_own_workers() -> None:
    # Trainers fork (DataLoader workers): the child must not talk over the parent's pipes.
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        assert sandbox.run("print(1)").ok
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            ok = sandbox.run("print(2)").stdout == "2\n"
            sandbox.close()
            os.write(write, b"ok" if ok else b"no")
            os._exit(0)
        os.close(write)
        os.waitpid(pid, 0)
        assert os.read(read, 2) == b"ok"
        os.close(read)
        assert sandbox.run("print(3)").stdout == "3\n"  # the parent's zygote still works


def test_per_call_limits_below_and_above_the_pools() -> None:
    # Children are prepared with the pool's rlimits before their job arrives: a job with
    # lower limits lowers them, one with higher limits gets a child prepared for it.
    pool_limits = SandboxLimits(wall_seconds=5.0, cpu_seconds=5.0, memory_mb=64)
    hog = "x = bytearray(150 * 1024 * 1024)\nprint('allocated')"
    with Sandbox(workers=1, limits=pool_limits) as sandbox:
        assert sandbox.run(hog).status == "memory"
        higher = sandbox.run(hog, limits=SandboxLimits(memory_mb=400))
        assert higher.status == "ok" and higher.stdout == "allocated\n"
        assert sandbox.run(hog).status == "memory"  # the next child has the pool's limits
        lower = SandboxLimits(wall_seconds=5.0, cpu_seconds=1.0, memory_mb=64)
        spin = sandbox.run("while True:\n    pass\n", limits=lower)
        # The lowered CPU limit ended it, not the wall clock (however busy the machine is).
        assert spin.status == "timeout" and "CPU time limit of 1 s" in spin.reason
        assert sandbox.run("print(sum(range(4)))", stdin="x" * 100_000).stdout == "6\n"
        echo = "import sys\nprint(len(sys.stdin.read()))"
        assert sandbox.run(echo, stdin="y" * 100_000).stdout == "100000\n"
        assert sandbox.stats.restarts == 0


def _prepared_child(zygote: int) -> int:
    """The zygote's prepared child, once it is blocked reading its job (wchan)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with open(f"/proc/{zygote}/task/{zygote}/children") as f:
            children = f.read().split()
        for pid in children:
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/comm") as comm:
                    if comm.read().strip() != READY_NAME.decode():
                        continue
                with open(f"/proc/{pid}/wchan") as wchan:
                    if "pipe_read" in wchan.read():
                        return int(pid)
        time.sleep(0.01)
    raise AssertionError("no prepared child blocked on its job pipe")


def test_a_killed_prepared_child_costs_one_error_then_runs_go_on() -> None:
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        assert sandbox.run("print(1)").ok
        [zygote] = sandbox.worker_pids()
        child = _prepared_child(zygote_pid(zygote))
        os.kill(child, signal.SIGKILL)
        # Killed while waiting for its job, it might have read part of one: the zygote
        # cannot trust the pipe, so it exits and the pool replaces it. The next run meets
        # that (an error that says so) or, if the pool saw the zygote gone first, runs on
        # the replacement; no run is answered from the old pipe.
        results = [sandbox.run(f"print({n})") for n in (2, 3)]
        first = results[0]
        assert first.stdout == "2\n" or (first.status == "error" and "died" in first.reason)
        assert results[1].stdout == "3\n"
        assert sandbox.stats.restarts == 1
        assert sandbox.worker_pids() != [zygote]
