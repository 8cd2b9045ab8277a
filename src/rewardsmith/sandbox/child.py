"""A run's process: forked by the zygote in advance, confined, then handed one job.

The zygote (`rewardsmith.sandbox.worker`) forks the next run's child while it is idle, into
the run cgroup (`budget.py`). The child does everything that does not depend on the job
*before* the job exists: it enters its own session, moves its pipes into place, warms its
pages, enters its empty working directory, sets the pool's rlimits, drops to the run's uid
(as root) or gives up every capability (uid 0 of a user namespace), and offers itself first
to the kernel's OOM killer should the run's memory budget run out. Then it waits for the job
on the caller's own pipe, so a job goes from the caller straight to the process that runs
it, and tells the zygote it has started (the zygote starts the deadline and supervises). A
job whose limits are lower than the prepared ones lowers them; a job that needs higher
limits (or, with a cgroup budget, any other memory or process budget) goes back to the
zygote, which forks a child prepared for exactly those limits and passes the job on, as
bytes, after the fork (the slow path of per-call limit overrides).

What the job holds is the program's to read: the program, its setup, the calls to evaluate.
Never an expected value: those stay with the caller, or go to a judge run of their own
(`harness.py`, `judge.py`). Messages on the pipes are `rewardsmith.sandbox.process`'s
framing: length-prefixed JSON, never pickle.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

from rewardsmith.sandbox import _linux, harness
from rewardsmith.sandbox.process import encode, recv, send, write_all

# The result pipe is moved to a random descriptor at or above this number.
RESULT_FD_MIN = 200
# Stdin up to this size goes through a pipe (its buffer holds 64 KiB), larger through a file.
PIPE_STDIN_BYTES = 60_000
# Process names (`comm`): a prepared child waiting for its job, and a run (inherited by
# every process the run starts, until it execs another program).
READY_NAME = b"rs-ready"
RUN_NAME = b"rs-run"
# The limits that are rlimits (the rest, wall time and output sizes, the zygote enforces).
RLIMIT_FIELDS = ("cpu_seconds", "memory_mb", "file_size_mb", "open_files", "processes")
# The limits a cgroup budget holds for the whole zygote: a job must match them exactly.
BUDGET_FIELDS = ("memory_mb", "processes")
# The run's OOM score: if its memory budget runs out, the kernel kills it and what it
# started before anything else of the zygote's.
RUN_OOM_SCORE = 1000
# POSIX message queues' bytes per user (RLIMIT_MSGQUEUE): Linux's default, set rather than
# inherited (a caller may have raised it).
MSGQUEUE_BYTES = 819_200


def fits(job_limits: Mapping[str, Any], prepared: Mapping[str, Any], budget: bool) -> bool:
    """Whether a child prepared with `prepared` limits can take a job: rlimits can only be
    lowered, and a cgroup budget (`budget`) only changes between runs."""
    if budget and any(job_limits[name] != prepared[name] for name in BUDGET_FIELDS):
        return False
    return all(job_limits[name] <= prepared[name] for name in RLIMIT_FIELDS)


# A small program each pre-forked child compiles and runs while it waits for a job:
# it touches the pages that compiling and running typical test code touch (copy-on-write
# faults, ~1 ms in a VM), so the run itself does not wait for them.
_WARM_UP_SOURCE = """
from typing import Dict, List


def _warm(xs: List[int], names: Dict[str, float]) -> List[str]:
    seen = sorted({x * 2 for x in xs if x % 3}, reverse=True)[:5]
    words = [f"{k}={v:.2f}" for k, v in names.items()] + [str(abs(x)) for x in seen]
    while len(words) > 3:
        words.pop()
    return words


assert _warm(list(range(-20, 20)), {"a": 1.5, "b": -2.0}) == ["a=1.50", "b=-2.00", "38"]
assert "x,y".split(",") == ["x", "y"] and max((1, 2), key=lambda v: -v) == 1
"""


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _set_rlimits(limits: Mapping[str, Any], base_vm: int) -> None:
    """Set every rlimit of the run; soft = hard, so the program cannot raise them."""
    cpu = max(1, int(limits["cpu_seconds"] + 0.999))
    for res, value in (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (base_vm + (int(limits["memory_mb"]) << 20),) * 2),
        (resource.RLIMIT_FSIZE, (int(limits["file_size_mb"]) << 20,) * 2),
        (resource.RLIMIT_NOFILE, (int(limits["open_files"]),) * 2),
        (resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_MSGQUEUE, (MSGQUEUE_BYTES, MSGQUEUE_BYTES)),
    ):
        resource.setrlimit(res, value)


def _attach_stdin(data: str | None) -> None:
    """Give the program its stdin: a pipe already holding the data, or a removed file."""
    raw = (data or "").encode()
    if len(raw) <= PIPE_STDIN_BYTES:
        read_end, write_end = os.pipe()
        if raw:
            os.write(write_end, raw)
        os.close(write_end)
    else:
        path = "stdin"  # in the run's own working directory, removed at once
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too big for the file-size limit: an error
        try:
            with open(path, "wb") as f:
                f.write(raw)
        finally:
            signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        read_end = os.open(path, os.O_RDONLY)
        os.unlink(path)
    os.dup2(read_end, 0)
    os.close(read_end)


def run_child(
    fds: dict[str, int],
    workdir: str,
    uid: int | None,
    limits: Mapping[str, Any],
    drop_caps: bool,
    budget: bool,
) -> None:
    """The pre-forked child: prepare, wait for the job on `fds["job"]`, run it. Never returns.

    `fds`: `job` (where the job arrives), `ctrl` (messages to the zygote), `out`, `err`,
    `res` (the program's stdout, stderr and the harness's result records). `drop_caps`: give
    up every capability (uid 0 of a user namespace); `budget`: a cgroup holds the budget.
    """
    try:
        _linux.set_process_name(READY_NAME)
        os.setsid()
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(fds["out"], 1)
        os.dup2(fds["err"], 2)
        result_fd = RESULT_FD_MIN + int.from_bytes(os.urandom(2), "big") % 600
        os.dup2(fds["res"], result_fd)
        ctrl_fd = os.dup2(fds["ctrl"], result_fd + 1)
        job_fd = os.dup2(fds["job"], result_fd + 2)
        os.closerange(3, result_fd)
        os.closerange(job_fd + 1, 65536)
        with contextlib.suppress(OSError):
            adj = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
            os.write(adj, b"%d" % RUN_OOM_SCORE)
            os.close(adj)
        exec(compile(_WARM_UP_SOURCE, "<warm-up>", "exec"), {"__name__": "warm_up"})
        os.chdir(workdir)
        base_vm = _vm_bytes()
        _set_rlimits(limits, base_vm)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        elif drop_caps:
            _linux.drop_capabilities()
        # Its own /proc/self (fd/, maps) readable, as for any process (the zygote is not).
        _linux.prctl(_linux.PR_SET_DUMPABLE, 1)
        os.environ["HOME"] = workdir  # the rest was set once in the zygote
        sys.argv = ["sandbox"]
        send(ctrl_fd, {"ready": True})
        job = recv(job_fd)
        _linux.set_process_name(RUN_NAME)
        os.close(job_fd)
        if job is None:  # the caller closed its pipe: the zygote ends too
            send(ctrl_fd, {"eof": True})
            os._exit(0)
        job_limits = job["limits"]
        if not fits(job_limits, limits, budget):
            send(ctrl_fd, {"respawn": job_limits})
            write_all(ctrl_fd, encode(job))
            os._exit(0)
        if any(job_limits[name] != limits[name] for name in RLIMIT_FIELDS):
            _set_rlimits(job_limits, base_vm)
        send(ctrl_fd, {"start": time.monotonic(), "limits": job_limits, "nonce": job["nonce"]})
        os.close(ctrl_fd)
        try:
            _attach_stdin(job.get("stdin"))
        except OSError as exc:
            os.write(2, f"sandbox: cannot pass stdin to the program: {exc}\n".encode())
            os._exit(1)
        # sys.stdin/stdout/stderr are the zygote's own objects on fds 0-2, never used there, so
        # their buffers are empty: reusing them saves building new ones on every run.
        harness.run(job, result_fd)
    except BaseException:
        pass
    os._exit(120)
