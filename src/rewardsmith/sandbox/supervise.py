"""The zygote watching one run: its deadline, its output, its memory budget.

`supervise` reads the run's stdout, stderr and result records (`outcome.Capture`) until the
harness's last record (`NONCE exit CODE`) or the child's death, ends the run at its
deadline or when the kernel reports an OOM kill in its cgroup (`budget.py`), and returns
the zygote's reply (`outcome.reply`).

The deadline is wall-clock time the run did not spend waiting for a CPU that others held
(`effective_seconds`): at `wall_seconds`, the run-queue wait of its processes
(`/proc/PID/schedstat`) moves it later, up to `wall_seconds * wall_stretch`, unless the run's
processes together already used that much CPU time. What counts is only CPU the run was
denied: a process's wait, less the CPU time the run's other processes used meanwhile (a run
that keeps itself waiting, with CPU burners or a fork bomb, gets no extra time), and nothing
for a process that gave its CPU away itself (a raised nice value, the idle or batch
scheduling policy, a niced autogroup). Every process of the run counts, orphans and zombies
included (`run_pids` lists them), and none outlives the run. So a program that sleeps or
blocks ends at `wall_seconds`; a CPU-bound one on a loaded machine is bounded by
`cpu_seconds` (RLIMIT_CPU), not by how busy the machine is.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable, Iterable
from typing import Any

from rewardsmith.sandbox.outcome import Capture, reply

# Past `wall_seconds`, the deadline is checked again at least this often.
MIN_STEP_SECONDS = 0.05


_TICKS = os.sysconf("SC_CLK_TCK")
# /proc/PID/stat fields after the command name: utime, stime, cutime, cstime, nice, policy.
_UTIME, _NICE, _POLICY = 11, 16, 38
SCHED_OTHER = 0


def _usage(pid: int, base_nice: int) -> tuple[float, float, float, bool] | None:
    """(run-queue wait, own CPU, CPU of reaped children, whether it competes at full
    weight) of one process, in seconds; None when it is gone. A zombie keeps its times."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        times = [int(x) / _TICKS for x in fields[_UTIME : _UTIME + 4]]
        full_weight = int(fields[_NICE]) <= base_nice and int(fields[_POLICY]) == SCHED_OTHER
    except (OSError, ValueError, IndexError):
        return None
    waited = 0.0
    with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/schedstat") as f:
        waited = int(f.read().split()[1]) / 1e9
    # "/autogroup-N nice K", where autogroups are on: a session's share of the CPU.
    with contextlib.suppress(OSError, ValueError, IndexError), open(f"/proc/{pid}/autogroup") as f:
        full_weight = full_weight and int(f.read().split()[-1]) <= 0
    return waited, times[0] + times[1], times[2] + times[3], full_weight


def busy_time(pids: Iterable[int]) -> tuple[float, float]:
    """(the longest wait for a CPU that the run did not cause itself, CPU time of all these
    processes and of the children they reaped), in seconds.

    A process's wait counts less the CPU time every other process of the run used (on one
    CPU, all of that could have been the cause), and not at all when the process competes
    at less than full weight by its own choice (nice, policy, autogroup)."""
    base_nice = os.getpriority(os.PRIO_PROCESS, 0)  # ours, which every run starts with
    usages = [u for u in (_usage(pid, base_nice) for pid in pids) if u is not None]
    cpu = sum(own + reaped for _, own, reaped, _ in usages)
    credit = 0.0
    for waited, own, _, full_weight in usages:
        if full_weight:
            credit = max(credit, waited - (cpu - own))
    return credit, cpu


def effective_seconds(elapsed: float, pids: Iterable[int]) -> float:
    """How long the run has taken in a sense a busy machine does not change: the wall-clock
    time less the wait for a CPU that others held (`busy_time`), but never less than the CPU
    time its processes used together."""
    waited, cpu = busy_time(pids)
    return max(elapsed - waited, cpu)


def supervise(
    run: Any,
    started: dict[str, Any],
    budget: Any,
    run_pids: Callable[[], list[int]],
    kill: Callable[[int], None],
    wait: Callable[[Any], tuple[int, Any]],
) -> dict[str, Any]:
    """Watch `run` (a prepared child that took its job, `started` its start message) to its
    end; `run_pids` lists its live processes, `kill` ends all of them, `wait` reaps the
    child. Returns the reply for the caller."""
    limits = started["limits"]
    start = min(float(started["start"]), time.monotonic())  # the child's clock is ours
    out_limit = int(limits["output_bytes"])
    captures = {
        "out": Capture(run.fds["out"], out_limit),
        "err": Capture(run.fds["err"], out_limit),
        "res": Capture(run.fds["res"], int(limits["channel_bytes"])),
    }
    for cap in captures.values():
        os.set_blocking(cap.fd, False)
    exit_marker = f"{started['nonce']} exit ".encode()
    wall = float(limits["wall_seconds"])
    deadline = start + wall
    latest = start + wall * max(1.0, float(limits["wall_stretch"]))
    budget.clear_oom_event()  # what an earlier run left signalled is not this run's
    oom_before = budget.oom_kills()
    oom_read = [budget.oom_fd] if budget.oom_fd is not None and budget.oom_fd_is_event else []
    oom_except = [budget.oom_fd] if budget.oom_fd is not None and not oom_read else []
    timed_out = oom_event = False
    reported: int | None = None
    open_fds = {cap.fd: cap for cap in captures.values()}
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            now = time.monotonic()
            used = effective_seconds(now - start, run_pids())
            if used < wall and now < latest:
                deadline = min(now + max(wall - used, MIN_STEP_SECONDS), latest)
                continue
            timed_out = True
            break
        ready, _, errs = select.select([run.pidfd, *open_fds, *oom_read], [], oom_except, remaining)
        if (oom_read and oom_read[0] in ready) or errs:
            budget.clear_oom_event()
            if budget.oom_kills() > oom_before:
                oom_event = True
                break
        for fd in ready:
            if fd in open_fds and not open_fds[fd].read():
                del open_fds[fd]
        if run.pidfd in ready:  # the child is gone: what it wrote is all in the pipe
            res = captures["res"]
            while res.fd in open_fds and select.select([res.fd], [], [], 0)[0]:
                if not res.read():
                    del open_fds[res.fd]
        # The harness closes stdout/stderr before its exit record, so by then their data
        # is in the pipes: no need to wait for their end of file (fewer wake-ups).
        reported = captures["res"].exit_code(exit_marker)
        if reported is not None or run.pidfd in ready:
            break
    kill(run.pid)
    cpu_used = 0.0
    if reported is None or timed_out or oom_event:
        status, rusage = wait(run)
        cpu_used = rusage.ru_utime + rusage.ru_stime
        reported = None
    for cap in list(open_fds.values()):
        while cap.read():
            if not select.select([cap.fd], [], [], 0)[0]:
                break
    for cap in captures.values():
        with contextlib.suppress(OSError):
            os.close(cap.fd)
    run.fds = {}
    duration = time.monotonic() - start
    if reported is not None:
        status = (reported & 0xFF) << 8  # what waitpid would say for exit(code)
    oom = oom_event or budget.oom_kills() > oom_before
    return reply(
        status,
        timed_out,
        cpu_used,
        duration,
        captures,
        limits,
        started["nonce"],
        oom=oom,
        budget_kind=budget.kind,
        stretched=deadline - start if deadline - start > wall + 0.5 else None,
    )
