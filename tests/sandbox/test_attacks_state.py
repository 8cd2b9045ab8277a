"""Attacks that leave something behind for later runs, or stretch a run's time.

State: one run of a zygote plants data where a later run of the same zygote (the next
sample of the batch) could find it or pay for it: System V shared memory and message
queues, POSIX message queues, the kernel keyring. The zygote's IPC namespace is bounded by the
run's memory budget and emptied after every run (`rewardsmith.sandbox.ipc`), and the keyring
calls are refused (`rewardsmith.sandbox.worker`).

Time: the deadline moves later only for CPU time the run was denied by others
(`rewardsmith.sandbox.supervise`): CPU burners of its own, orphaned or not, and a process
that gives its CPU away (nice) do not earn it more time."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator

import pytest
from sandbox_helpers import GRACE, leftover_processes

from rewardsmith.sandbox import Sandbox, SandboxLimits

# One zygote, so that every run below follows the previous one in the same zygote.
LIMITS = SandboxLimits(
    wall_seconds=2.0, wall_stretch=1.0, cpu_seconds=2.0, memory_mb=256, output_bytes=10_000
)
# A deadline that may stretch far (2 s to 20 s) while the run waits for a CPU others hold.
STRETCHY = SandboxLimits(wall_seconds=2.0, wall_stretch=10.0, cpu_seconds=30.0, memory_mb=256)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=1, limits=LIMITS)
    yield sandbox
    sandbox.close()


LIBC = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
def err():
    return os.strerror(ctypes.get_errno())
"""


def plant_then_look(box: Sandbox, plant: str, look: str) -> tuple[str, str]:
    """Run `plant`, then `look` in the next run of the same zygote: both stdouts."""
    planted = box.run(LIBC + plant)
    assert planted.status == "ok", planted
    looked = box.run(LIBC + look)
    assert looked.status == "ok", looked
    return planted.stdout, looked.stdout


# -- state left for the next run ---------------------------------------------------------------


def test_sysv_shared_memory_does_not_reach_the_next_run(zygote: Sandbox) -> None:
    plant = """
shmid = libc.shmget(0x5253, 4096, 0o1000 | 0o600)  # IPC_CREAT, not removed
addr = libc.shmat(shmid, None, 0)
ctypes.memmove(addr, b"answer=42", 9)
print("planted" if shmid >= 0 else err())
"""
    look = """
shmid = libc.shmget(0x5253, 0, 0)
if shmid < 0:
    print("gone", err(), open("/proc/sysvipc/shm").read().count(chr(10)) - 1)
else:
    print("found", ctypes.string_at(libc.shmat(shmid, None, 0), 9))
"""
    planted, looked = plant_then_look(zygote, plant, look)
    assert planted == "planted\n"
    assert looked == "gone No such file or directory 0\n"


def test_a_sysv_message_queue_does_not_reach_the_next_run(zygote: Sandbox) -> None:
    plant = """
q = libc.msgget(0x5254, 0o1000 | 0o600)
message = ctypes.create_string_buffer(b"\\x01\\0\\0\\0\\0\\0\\0\\0answer=42")
print("planted" if q >= 0 and libc.msgsnd(q, message, 9, 0) == 0 else err())
"""
    look = """
print("gone" if libc.msgget(0x5254, 0) < 0 else "found", err())
"""
    planted, looked = plant_then_look(zygote, plant, look)
    assert planted == "planted\n"
    assert looked == "gone No such file or directory\n"


def test_a_posix_message_queue_does_not_reach_the_next_run(zygote: Sandbox) -> None:
    plant = """
rt = ctypes.CDLL("librt.so.1", use_errno=True)
q = rt.mq_open(b"/rs-answer", os.O_CREAT | os.O_RDWR, 0o600, None)
print("planted" if q >= 0 and rt.mq_send(q, b"answer=42", 9, 0) == 0 else err())
"""
    look = """
rt = ctypes.CDLL("librt.so.1", use_errno=True)
print("gone" if rt.mq_open(b"/rs-answer", os.O_RDONLY) < 0 else "found", err())
"""
    planted, looked = plant_then_look(zygote, plant, look)
    assert planted == "planted\n"
    assert looked == "gone No such file or directory\n"


def test_a_kernel_key_does_not_reach_the_next_run(zygote: Sandbox) -> None:
    # Keys live per uid (and user namespace), not per process: a key added to the user or
    # session keyring would be there for every later run of the same zygote (same uid).
    plant = """
ids = [libc.syscall(248, b"user", b"rs-answer", b"answer=42", 9, ring) for ring in (-4, -5, -3)]
print(ids, err())
"""
    look = """
found = [libc.syscall(250, 10, ring, b"user", b"rs-answer", 0) for ring in (-4, -5, -3)]
print("gone" if max(found) < 0 else f"found {found}")
"""
    _, looked = plant_then_look(zygote, plant, look)
    assert looked == "gone\n"


def test_shared_memory_left_behind_does_not_eat_the_next_runs_budget(zygote: Sandbox) -> None:
    # 200 MB of SysV shared memory, filled and never removed, under a 256 MB budget: the
    # next honest samples (150 MB each) must still have their whole budget.
    hostile = (
        LIBC
        + """
shmid = libc.shmget(0x5255, 200 << 20, 0o1000 | 0o600)
addr = libc.shmat(shmid, None, 0)
ctypes.memset(ctypes.c_void_p(addr), 7, 200 << 20)
libc.shmdt(ctypes.c_void_p(addr))
print("held")
"""
    )
    assert zygote.run(hostile).stdout == "held\n"
    honest = "block = bytearray(150 << 20)\nprint(len(block) >> 20)"
    results = [zygote.run(honest) for _ in range(5)]
    assert [(r.status, r.stdout) for r in results] == [("ok", "150\n")] * 5, results


def _host_shared_memory_mb() -> int:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) >> 10 for line in f if line.startswith("Shmem:"))


def test_shared_memory_is_bounded_by_the_run_and_freed_with_it(zygote: Sandbox) -> None:
    # Segment after segment of 128 MB, each filled then detached (so no process holds more
    # than its own limit): without a bound, eight of them leave 1 GB behind on the host.
    hostile = (
        LIBC
        + """
held = 0
for key in range(0x5300, 0x5308):
    shmid = libc.shmget(key, 128 << 20, 0o1000 | 0o600)
    if shmid < 0:
        break
    addr = libc.shmat(shmid, None, 0)
    ctypes.memset(ctypes.c_void_p(addr), 7, 128 << 20)
    libc.shmdt(ctypes.c_void_p(addr))
    held += 128
    print(held, flush=True)
"""
    )
    before = _host_shared_memory_mb()
    result = zygote.run(hostile)
    held = int(result.stdout.split()[-1]) if result.stdout.split() else 0
    # The run's budget (a cgroup ends the run; without one, the namespace refuses more).
    assert held <= LIMITS.memory_mb, result
    assert result.status in ("ok", "memory"), result
    assert zygote.run("print(1)").stdout == "1\n"  # by now the namespace is gone
    assert _host_shared_memory_mb() - before < LIMITS.memory_mb // 2


# -- the deadline -------------------------------------------------------------------------------


def test_orphaned_cpu_burners_do_not_stretch_the_deadline() -> None:
    # Twelve CPU burners leave the run's process tree (double fork, new session) and keep the
    # main process waiting for a CPU: counted as starved, the run would get 20 s instead of 2.
    code = """
import os
for _ in range(12):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                pass
        os._exit(0)
while True:
    pass
"""
    with Sandbox(workers=1, limits=STRETCHY) as box:
        result = box.run(code)
        assert result.status == "timeout", result
        # The burners are the run's own: its processes used their 2 s of CPU long before.
        assert result.duration < STRETCHY.wall_seconds * STRETCHY.wall_stretch / 2, result
        assert leftover_processes(box.worker_pids()) == []


def _burn(seconds: float) -> None:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_a_run_that_gives_its_cpu_away_gets_no_more_time() -> None:
    # The run lowers its own priority to the minimum (its nice value, and its session's
    # autogroup, which otherwise competes as one with the others) while this process keeps
    # every CPU busy: it then waits for a CPU nearly all the time, by its own choice.
    code = """
import os
os.nice(19)
try:
    with open("/proc/self/autogroup", "w") as f:
        f.write("19")
except OSError:
    pass
while True:
    pass
"""
    with Sandbox(workers=1, limits=STRETCHY) as box:
        box.run("pass")  # the zygote is up before the CPUs fill
        burners = [
            multiprocessing.get_context("fork").Process(target=_burn, args=(30.0,))
            for _ in range(2 * (os.cpu_count() or 1))
        ]
        for burner in burners:
            burner.start()
        try:
            result = box.run(code)
        finally:
            for burner in burners:
                burner.kill()
                burner.join()
    assert result.status == "timeout", result
    assert result.duration < STRETCHY.wall_seconds + GRACE, result
