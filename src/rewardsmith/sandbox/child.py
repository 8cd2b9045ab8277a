"""A run's two processes: the judge, forked by the zygote, and the program, forked by it.

The zygote (`rewardsmith.sandbox.worker`) forks the next run's first process while it is
idle: the *judge*. It enters its own session, sets the pool's rlimits, drops to the run's
uid (as root) or gives up every capability (uid 0 of a user namespace), and forks the
*program process*, which warms its pages and waits. Only then does the judge wait for the
job, on the caller's own pipe, so a job goes from the caller straight to the process that
decides the run. It makes itself non-dumpable (the program cannot ptrace it or open its
/proc/PID/mem or fd/), tells the zygote it has started, and hands the program process its
part of the job (`judge.program_part`: no checks, no judge setup, no nonce). The program
process runs the harness (`harness.py`) and reports to the judge on a pipe of its own; the
judge decides each decomposed test, relays the rest, and writes the run's records on the
result channel, which only it holds (`judge.py`).

A job whose limits are lower than the prepared ones lowers them; a job that needs higher
limits (or, with a cgroup budget, any other memory or process budget) goes back to the
zygote, which forks a judge prepared for exactly those limits and passes the job on (the
slow path of per-call limit overrides). Messages on the pipes are
`rewardsmith.sandbox.process`'s framing: length-prefixed JSON, never pickle.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import time
from collections.abc import Mapping
from typing import Any

from rewardsmith.sandbox import _linux, harness
from rewardsmith.sandbox.judge import Judge, ProtocolError, Records, program_part
from rewardsmith.sandbox.process import (
    HEADER_BYTES,
    FrameError,
    decode_body,
    encode,
    read_frame,
    recv,
    send,
    write_all,
)

# The judge's descriptors are moved here (above anything the zygote holds), then the rest
# is closed.
FD_BASE = 200
# Stdin up to this size goes through a pipe (its buffer holds 64 KiB), larger through a file.
PIPE_STDIN_BYTES = 60_000
# Process names (`comm`): a prepared process waiting for its job, a judge deciding a run, a
# run's program (inherited by every process it starts, until it execs another program).
READY_NAME = b"rs-ready"
JUDGE_NAME = b"rs-judge"
RUN_NAME = b"rs-run"
# The limits that are rlimits (the rest, wall time and output sizes, the zygote enforces).
RLIMIT_FIELDS = ("cpu_seconds", "memory_mb", "file_size_mb", "open_files", "processes")
# The limits a cgroup budget holds for the whole zygote: a job must match them exactly.
BUDGET_FIELDS = ("memory_mb", "processes")
# The program process's OOM score: if the run's memory budget runs out, the kernel kills
# the program (and what it started) before the judge.
PROGRAM_OOM_SCORE = 1000


def fits(job_limits: Mapping[str, Any], prepared: Mapping[str, Any], budget: bool) -> bool:
    """Whether a run prepared with `prepared` limits can take a job: rlimits can only be
    lowered, and a cgroup budget (`budget`) only changes between runs."""
    if budget and any(job_limits[name] != prepared[name] for name in BUDGET_FIELDS):
        return False
    return all(job_limits[name] <= prepared[name] for name in RLIMIT_FIELDS)


# A small program each prepared program process compiles and runs while it waits for a job:
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
    ):
        resource.setrlimit(res, value)


def _lower(limits: Mapping[str, Any], job_limits: Mapping[str, Any], base_vm: int) -> None:
    if any(job_limits[name] != limits[name] for name in RLIMIT_FIELDS):
        _set_rlimits(job_limits, base_vm)


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
    """The judge: prepare, fork the program process, wait for the job, decide. Never returns.

    `fds`: `job` (where the job arrives), `ctrl` (messages to the zygote), `out`, `err` (the
    program's stdout and stderr), `res` (the result records). `drop_caps`: give up every
    capability (uid 0 of a user namespace); `budget`: a cgroup holds the run's budget."""
    try:
        _linux.set_process_name(READY_NAME)
        os.setsid()
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        names = ("job", "ctrl", "res", "out", "err")
        for i, name in enumerate(names):
            os.dup2(fds[name], FD_BASE + i)
        os.closerange(3, FD_BASE)
        os.closerange(FD_BASE + len(names), 65536)
        job_fd, ctrl_fd, res_fd, out_fd, err_fd = range(FD_BASE, FD_BASE + len(names))
        os.chdir(workdir)
        base_vm = _vm_bytes()
        _set_rlimits(limits, base_vm)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        elif drop_caps:
            _linux.drop_capabilities()
        os.environ["HOME"] = workdir  # the rest was set once in the zygote
        sys.argv = ["sandbox"]
        part_r, part_w = os.pipe()
        report_r, report_w = os.pipe()
        program = os.fork()
        if program == 0:
            for fd in (job_fd, ctrl_fd, res_fd, part_w, report_r):
                os.close(fd)
            _program_process(part_r, report_w, out_fd, err_fd, limits, base_vm)
        for fd in (part_r, report_w, out_fd, err_fd):
            os.close(fd)
        # From here on the program cannot ptrace us nor open our /proc/PID/{mem,fd,environ}.
        _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
        send(ctrl_fd, {"ready": True})
        raw = read_frame(job_fd)
        _linux.set_process_name(JUDGE_NAME)
        os.close(job_fd)
        job = None if raw is None else decode_body(raw[HEADER_BYTES:])
        if job is None:  # the caller closed its pipe: the zygote ends too
            send(ctrl_fd, {"eof": True})
            os._exit(0)
        job_limits = job["limits"]
        if not fits(job_limits, limits, budget):
            send(ctrl_fd, {"respawn": job_limits})
            write_all(ctrl_fd, encode(job))
            os._exit(0)
        _lower(limits, job_limits, base_vm)
        send(ctrl_fd, {"start": time.monotonic(), "limits": job_limits, "nonce": job["nonce"]})
        os.close(ctrl_fd)
        send(part_w, program_part(job))
        os.close(part_w)
        _judge(job, program, report_r, res_fd, int(job_limits["channel_bytes"]))
    except BaseException:
        pass
    os._exit(120)


def _judge(job: Mapping[str, Any], program: int, report_fd: int, res_fd: int, cap: int) -> None:
    """Decide the run from the program's reports; write the records; exit. Never returns."""
    records = Records(job["nonce"])
    judge = Judge(job, records)
    judge.run_setup()
    broke = True
    try:
        _drive(judge, program, report_fd, cap)
        broke = False
    except ProtocolError as exc:
        records.add("error", 0, f"the program's process tampered with the harness: {exc}")
    except _Overflow:
        records.add("overflow", 0, f"the program's results exceeded {cap} bytes")
    cpu = 0.0
    if judge.exit_code is not None and not broke:
        status = (judge.exit_code & 0xFF) << 8  # what waitpid would say for exit(code)
    else:
        if broke:
            with contextlib.suppress(OSError):
                os.kill(program, signal.SIGKILL)
        _, status, usage = os.wait4(program, 0)
        cpu = usage.ru_utime + usage.ru_stime
    judge.done()
    records.add("exit", status, f"{cpu:.3f}")
    write_all(res_fd, records.take())
    os._exit(0)


class _Overflow(Exception):
    """The program's reports exceed `channel_bytes`."""


# A frame header claiming this many bytes or more was not written by the harness.
IMPLAUSIBLE_BYTES = 1 << 40


def _drive(judge: Judge, program: int, fd: int, cap: int) -> None:
    """Feed the program's messages to the judge until its `exit`, its death, or a breach."""
    pidfd = os.pidfd_open(program)
    os.set_blocking(fd, False)
    buffer = bytearray()
    total = 0
    alive = True
    while not judge.finished:
        ready, _, _ = select.select([fd, pidfd] if alive else [fd], [], [], None if alive else 0)
        if pidfd in ready:
            alive = False  # drain what it wrote before it died, then stop
        if fd not in ready:
            if alive or pidfd in ready:
                continue  # it just died: one more look at the pipe, without waiting
            if buffer:
                raise ProtocolError("a message cut short")
            return
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            continue
        if not chunk:
            if buffer:
                raise ProtocolError("a message cut short")
            return
        total += len(chunk)
        if total > cap:
            raise _Overflow
        buffer += chunk
        while len(buffer) >= HEADER_BYTES and not judge.finished:
            size = int.from_bytes(buffer[:HEADER_BYTES], "big")
            if size > cap:  # no harness message is anywhere near 2**40 bytes: not one of ours
                raise _Overflow if size < IMPLAUSIBLE_BYTES else ProtocolError("a forged frame")
            if len(buffer) < HEADER_BYTES + size:
                break
            body = bytes(buffer[HEADER_BYTES : HEADER_BYTES + size])
            del buffer[: HEADER_BYTES + size]
            try:
                judge.handle(decode_body(body))
            except (FrameError, KeyError, TypeError) as exc:
                raise ProtocolError(f"a message that breaks the framing ({exc})") from None


def _program_process(
    part_fd: int,
    report_fd: int,
    out_fd: int,
    err_fd: int,
    limits: Mapping[str, Any],
    base_vm: int,
) -> None:
    """The program process: warm up, take its part from the judge, run it. Never returns."""
    try:
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        os.close(out_fd)
        os.close(err_fd)
        # Its own /proc/self (fd/, maps) readable, as for any process.
        _linux.prctl(_linux.PR_SET_DUMPABLE, 1)
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
            f.write(str(PROGRAM_OOM_SCORE))
        exec(compile(_WARM_UP_SOURCE, "<warm-up>", "exec"), {"__name__": "warm_up"})
        part = recv(part_fd)
        os.close(part_fd)
        if part is None:  # the judge is gone (the caller closed its pipe)
            os._exit(0)
        _linux.set_process_name(RUN_NAME)
        _lower(limits, part["limits"], base_vm)
        try:
            _attach_stdin(part.get("stdin"))
        except OSError as exc:
            os.write(2, f"sandbox: cannot pass stdin to the program: {exc}\n".encode())
            os._exit(1)
        # sys.stdin/stdout/stderr are the zygote's own objects on fds 0-2, never used there, so
        # their buffers are empty: reusing them saves building new ones on every run.
        harness.run(part, report_fd)
    except BaseException:
        pass
    os._exit(120)
