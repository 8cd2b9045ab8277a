"""The caller's side of the sandbox: a pool of warm zygotes, limits, and `ExecutionResult`.

`Sandbox.run(source)` sends a job to an idle zygote (`rewardsmith.sandbox.worker`), which
forks a fresh child for it; the child starts with everything the zygote pre-imported, so a
run costs a fork and a few system calls rather than an interpreter start. `Sandbox.map`
spreads jobs over the zygotes with one thread each.

The caller is never blocked past a job's wall-clock limit plus `REPLY_GRACE_SECONDS`: the
zygote itself enforces the limit, and if it does not answer in time (or dies) the pool kills
it, which ends its PID namespace and everything in it, and starts a new one on next use.
Nothing raises into the caller: every failure is an `ExecutionResult` with a status.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import secrets
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from rewardsmith.sandbox import budget
from rewardsmith.sandbox.process import WorkerLost, WorkerProcess

logger = logging.getLogger(__name__)

ExecStatus = Literal["ok", "failed", "timeout", "memory", "killed", "error"]
EXEC_STATUSES: tuple[ExecStatus, ...] = ("ok", "failed", "timeout", "memory", "killed", "error")

# How long past a job's wall-clock limit the caller waits for the zygote's answer (it kills
# the run itself at the limit; this covers reaping, clean-up and the reply).
REPLY_GRACE_SECONDS = 3.0
# A zygote pre-imports modules and enters namespaces; a slow machine may need seconds.
STARTUP_TIMEOUT_SECONDS = 30.0
# How long `close` lets idle zygotes exit by themselves (removing their folders) before
# killing them.
CLOSE_GRACE_SECONDS = 1.0
# Where zygotes make their run folders (`worker.Zygote`).
ZYGOTE_TMP_PREFIX = "/tmp/rewardsmith-zygote-"
# Sandbox source is capped so a runaway caller cannot push gigabytes through the pipe.
MAX_SOURCE_CHARS = 2_000_000
# A zygote's environment: nothing of the caller's (API keys, tokens, PYTHONPATH).
ZYGOTE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    # One string-hash seed for every zygote: a reward (or a program) then gets the same
    # hashes and set orders in any process, so it cannot behave one way in the zygote that
    # checked it and another in the ones that score.
    "PYTHONHASHSEED": "0",
}
# A reply's JSON carries stdout, stderr and the result channel, each at most its limit in
# bytes; escaping can make a byte up to 6 ("\u00ff"); the rest of the reply is small.
REPLY_ESCAPE_FACTOR = 6
REPLY_OVERHEAD_BYTES = 64 << 10


@dataclass(frozen=True)
class SandboxLimits:
    """Limits of one run; every field is one the zygote enforces.

    - `wall_seconds`: wall-clock time, after which every process of the run is killed;
    - `wall_stretch`: while the run's processes wait for a CPU (a loaded machine), its
      deadline moves later, up to `wall_seconds * wall_stretch`: grading does not depend on
      how busy the machine is (a program that sleeps still ends at `wall_seconds`);
    - `cpu_seconds`, `file_size_mb`, `open_files`: rlimits of each process;
    - `memory_mb`, `processes` (threads count too): one budget for all of the run's
      processes together (a cgroup; `Sandbox.isolation["budget"]` says which kind), and
      rlimits of each process (address space on top of the warm interpreter's, process
      count), which are all there is where no cgroup can be made;
    - `output_bytes`: what is kept of stdout and of stderr each (`truncated` says so);
    - `channel_bytes`: room for the harness's result records (`harness.py`). Nothing is
      ever cut silently: a run whose records overflow it ends with status `error` and a
      reason naming this limit. The default holds a `reward` batch of 10,000 samples with
      room to spare (a float is at most 26 bytes in a record: ~260 KB) or ~10,000 test
      records (at most ~350 bytes each);
    - `disk_mb`: the size of each private tmpfs (/tmp, /var/tmp, /dev/shm). It belongs to
      the zygote, which mounts them once: the pool's value counts, a per-run one is ignored.
    """

    wall_seconds: float = 10.0
    wall_stretch: float = 6.0
    cpu_seconds: float = 10.0
    memory_mb: int = 512
    file_size_mb: int = 16
    open_files: int = 64
    processes: int = 32
    output_bytes: int = 64_000
    channel_bytes: int = 4 << 20
    disk_mb: int = 64

    def to_job(self) -> dict[str, Any]:
        """The limits a job carries: all but `disk_mb`, which is the zygote's."""
        job = asdict(self)
        del job["disk_mb"]
        return job


@dataclass(frozen=True)
class ExecutionResult:
    """The outcome of one sandboxed run.

    `status`: `ok` (exit 0), `failed` (non-zero exit or exception), `timeout` (wall or CPU
    limit), `memory` (memory limit), `killed` (ended by a signal: its own, a file-size
    limit...), `error` (the sandbox itself failed). `stdout`/`stderr` are clipped to
    `SandboxLimits.output_bytes` each (`truncated` says so). `channel` holds the harness's
    result records (see `rewardsmith.sandbox.harness`).
    """

    status: ExecStatus
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    duration: float = 0.0
    reason: str = ""
    channel: str = ""
    truncated: bool = False
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _reply_bytes(limits: SandboxLimits) -> int:
    """The most a zygote's reply to a run under `limits` can take: the reader's cap."""
    captured = 2 * limits.output_bytes + limits.channel_bytes
    return REPLY_ESCAPE_FACTOR * captured + REPLY_OVERHEAD_BYTES


def _reply_seconds(limits: SandboxLimits) -> float:
    """How long the caller waits for a zygote's reply: the latest deadline the zygote may
    give the run, and a grace period for the kill, the reaping and the reply."""
    return limits.wall_seconds * max(1.0, limits.wall_stretch) + REPLY_GRACE_SECONDS


def _error(reason: str, duration: float = 0.0) -> ExecutionResult:
    return ExecutionResult(status="error", reason=reason, duration=duration)


class _Worker:
    """One zygote: its process, what isolation it achieved, where its run folders are."""

    def __init__(
        self,
        limits: SandboxLimits,
        preload: Sequence[str],
        namespaces: bool = True,
        read_only_paths: Sequence[str] = (),
    ) -> None:
        config = {
            "parent_pid": os.getpid(),
            "limits": asdict(limits),  # the pool's: prepared runs, the budget, the tmpfs size
            "preload": list(preload),
            "namespaces": namespaces,
            "read_only_paths": list(read_only_paths),
        }
        self.process = WorkerProcess(
            "rewardsmith.sandbox.worker",
            config,
            env=ZYGOTE_ENV,
            cwd="/",
            python_args=("-s",),
            new_session=True,
        )
        self.host_tmp_root: str | None = None
        self.cgroups: list[str] = []
        try:
            hello = self.process.receive(time.monotonic() + STARTUP_TIMEOUT_SECONDS)
        except (WorkerLost, TimeoutError):
            hello = None
        if not isinstance(hello, dict) or not hello.get("ready"):
            self.kill()
            raise RuntimeError("sandbox worker did not start")
        self.isolation: dict[str, Any] = hello["isolation"]
        # The zygote removes its cgroups when it exits; if it is killed, `kill` does.
        self.cgroups = [
            p for p in self.isolation.get("budget", {}).get("paths", []) if isinstance(p, str)
        ]
        # Outside a private /tmp the zygote's run folders are on the host: removed by `kill`
        # if the zygote cannot remove them itself.
        tmp_root = str(hello.get("tmp_root", ""))
        self.host_tmp_root = (
            tmp_root
            if not self.isolation.get("private_tmp") and tmp_root.startswith(ZYGOTE_TMP_PREFIX)
            else None
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def request(
        self, job: Mapping[str, Any], timeout: float, reply_bytes: int
    ) -> dict[str, Any] | None:
        """Send a job, wait up to `timeout` for the answer (at most `reply_bytes` long); None
        if the worker died, overran or broke the framing."""
        try:
            self.process.send(job)
            if not self.process.flush(time.monotonic() + timeout):
                return None
            reply = self.process.receive(time.monotonic() + timeout, reply_bytes)
        except (WorkerLost, TimeoutError):
            return None
        return reply if isinstance(reply, dict) else None

    def alive(self) -> bool:
        return self.process.alive()

    def hang_up(self) -> None:
        """Close our end of the job pipe: an idle zygote cleans up and exits."""
        self.process.hang_up()

    def kill(self, grace: float = 0.0) -> None:
        """Kill the zygote (after `grace` seconds to exit by itself); its PID namespace, and
        every process in it, goes with it."""
        self.process.kill(grace)
        if self.process.started_here:
            if self.host_tmp_root is not None:
                shutil.rmtree(self.host_tmp_root, ignore_errors=True)
            budget.remove_paths(self.cgroups)


@dataclass
class _Stats:
    runs: int = 0
    restarts: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


class Sandbox:
    """A pool of `workers` warm zygotes that run untrusted Python with limits.

    `preload` names extra modules each zygote imports up front (e.g. `("numpy",)`).
    `read_only_paths` are host paths (absolute, existing) the runs may read, bound read-only
    into their minimal root at the same place (data a verifier needs); nothing else of the
    host but what Python needs is visible. `namespaces=False` skips the namespaces and the
    minimal root (the fallback of platforms that refuse them; also how the tests exercise
    that fallback). Use as a context manager or call `close()`; zygotes also exit when the
    caller's process dies.
    """

    def __init__(
        self,
        workers: int = 2,
        limits: SandboxLimits | None = None,
        preload: Sequence[str] = (),
        namespaces: bool = True,
        read_only_paths: Sequence[str] = (),
    ) -> None:
        if workers < 1:
            raise ValueError("a sandbox needs at least one worker")
        for path in read_only_paths:
            if not os.path.isabs(path) or not os.path.exists(path):
                raise ValueError(f"read_only_paths: {path!r} is not an existing absolute path")
        self.read_only_paths = tuple(os.path.realpath(p) for p in read_only_paths)
        self.workers = workers
        self.limits = limits or SandboxLimits()
        self.preload = tuple(preload)
        self.namespaces = namespaces
        self._idle: queue.Queue[_Worker | None] = queue.Queue()
        for _ in range(workers):
            self._idle.put(None)  # started lazily, on first use
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._isolation: dict[str, Any] | None = None
        self.stats = _Stats()
        self._executor: ThreadPoolExecutor | None = None
        self._owner_pid = os.getpid()

    # -- public API -----------------------------------------------------------------------

    def run(
        self, source: str, stdin: str | None = None, limits: SandboxLimits | None = None
    ) -> ExecutionResult:
        """Run `source` as a program (`__main__`) with `stdin`; never raises."""
        return self.run_job({"mode": "exec", "source": source, "stdin": stdin}, limits)

    def run_job(
        self, job: Mapping[str, Any], limits: SandboxLimits | None = None
    ) -> ExecutionResult:
        """Run one harness job (`exec`, `tests` or `reward`); never raises.

        A `nonce` is added when the job has none; the harness signs its records with it.
        """
        start = time.monotonic()
        try:
            return self._run_job(job, limits or self.limits)
        except Exception as exc:  # the pool's promise: a result, never an exception
            return _error(f"sandbox failure: {type(exc).__name__}: {exc}", time.monotonic() - start)

    def map(
        self, jobs: Sequence[Mapping[str, Any]], limits: SandboxLimits | None = None
    ) -> list[ExecutionResult]:
        """Run jobs concurrently over the workers; results in input order."""
        if len(jobs) <= 1 or self.workers == 1:
            return [self.run_job(job, limits) for job in jobs]
        executor = self._pool()
        return list(executor.map(lambda job: self.run_job(job, limits), jobs))

    @property
    def isolation(self) -> dict[str, Any]:
        """What the zygotes achieved: pid/net/mount namespaces, uid drop, private /tmp."""
        if self._isolation is None:
            try:
                worker = self._acquire()
            except Exception as exc:
                return {"error": f"{type(exc).__name__}: {exc}"}
            self._release(worker)
        return dict(self._isolation or {})

    def worker_pids(self) -> list[int]:
        """Host process ids of the running zygotes (empty before first use): each is the
        root of its runs' processes, and, as root, runs use the uid
        `worker.SANDBOX_UID_BASE + pid`."""
        with self._lock:
            return [worker.pid for worker in self._all]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all = self._all, []
            if os.getpid() != self._owner_pid:
                workers = []  # a forked copy: the zygotes are the parent's to close
        for worker in workers:
            worker.hang_up()
        deadline = time.monotonic() + CLOSE_GRACE_SECONDS
        for worker in workers:
            worker.kill(grace=max(0.0, deadline - time.monotonic()))
        self._idle.put(None)  # wake any caller waiting for a worker
        if self._executor is not None:
            self._executor.shutdown(wait=False)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- internals ------------------------------------------------------------------------

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="sandbox")
            return self._executor

    def _run_job(self, job: Mapping[str, Any], limits: SandboxLimits) -> ExecutionResult:
        if len(job.get("source") or "") > MAX_SOURCE_CHARS:
            return ExecutionResult(
                status="failed", reason=f"source longer than {MAX_SOURCE_CHARS} characters"
            )
        payload = dict(job)
        payload.setdefault("nonce", secrets.token_hex(16))
        payload["limits"] = limits.to_job()
        worker = self._acquire()
        start = time.monotonic()
        try:
            reply = worker.request(payload, _reply_seconds(limits), _reply_bytes(limits))
        except BaseException:
            self._discard(worker)  # a slot is never lost, so the pool cannot deadlock
            raise
        duration = time.monotonic() - start
        if reply is None:
            overran = duration >= limits.wall_seconds
            self._discard(worker)
            result = (
                ExecutionResult(
                    status="timeout",
                    reason=f"wall-clock limit of {limits.wall_seconds} s (worker replaced)",
                    duration=duration,
                )
                if overran
                else _error("sandbox worker died (replaced)", duration)
            )
        else:
            self._release(worker)
            result = _from_reply(reply, duration)
        with self._lock:
            self.stats.runs += 1
            self.stats.by_status[result.status] = self.stats.by_status.get(result.status, 0) + 1
        return result

    def _acquire(self) -> _Worker:
        if self._closed:
            raise RuntimeError("the sandbox is closed")
        if os.getpid() != self._owner_pid:
            self._after_fork()
        worker = self._idle.get()
        if self._closed:
            self._idle.put(None)  # wake the next waiter, which fails the same way
            if worker is not None:
                worker.kill()
            raise RuntimeError("the sandbox is closed")
        if worker is not None and worker.alive():
            return worker
        if worker is not None:  # it died while idle: reap it, close its pipes, replace it
            worker.kill()
            self._forget(worker)
            with self._lock:
                self.stats.restarts += 1
        try:
            worker = _Worker(self.limits, self.preload, self.namespaces, self.read_only_paths)
        except BaseException:
            self._idle.put(None)  # keep the slot, so the pool never shrinks to a deadlock
            raise
        with self._lock:
            self._all.append(worker)
            if self._isolation is None:
                self._isolation = dict(worker.isolation)
                warning = self._isolation.get("budget", {}).get("warning")
                if warning:
                    logger.warning("sandbox: %s", warning)
        return worker

    def _after_fork(self) -> None:
        """In a forked copy of the caller (a DataLoader worker, say): the zygotes belong to
        the parent, whose pipes we must not share; start our own on demand."""
        with self._lock:
            if os.getpid() == self._owner_pid:
                return
            self._owner_pid = os.getpid()
            self._all = []
            self._executor = None
            self._idle = queue.Queue()
            for _ in range(self.workers):
                self._idle.put(None)

    def _release(self, worker: _Worker) -> None:
        self._idle.put(worker)

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        self._forget(worker)
        with self._lock:
            self.stats.restarts += 1
        self._idle.put(None)

    def _forget(self, worker: _Worker) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._all.remove(worker)


def _from_reply(reply: Mapping[str, Any], duration: float) -> ExecutionResult:
    status = reply.get("status")
    if status not in EXEC_STATUSES:
        return _error(f"bad reply from sandbox worker: {status!r}", duration)
    return ExecutionResult(
        status=status,
        exit_code=reply.get("exit_code"),
        stdout=str(reply.get("stdout", "")),
        stderr=str(reply.get("stderr", "")),
        duration=float(reply.get("duration", duration)),
        reason=str(reply.get("reason", "")),
        channel=str(reply.get("channel", "")),
        truncated=bool(reply.get("truncated", False)),
        signal=reply.get("signal"),
    )


_default: Sandbox | None = None
_default_lock = threading.Lock()


def default_sandbox() -> Sandbox:
    """A process-wide sandbox (2 workers, default limits), started on first use."""
    global _default
    with _default_lock:
        if _default is None or _default._closed:
            _default = Sandbox()
        return _default
