"""The warm zygote: a long-lived process that forks one disposable child per run.

Started by `rewardsmith.sandbox.pool` as a `process.WorkerProcess` (a fresh `python -s`
that imports this module without the rest of rewardsmith and calls `main` with its pipes
and the pool's limits). At start it isolates itself once (`isolation.py`: PID, network,
mount and IPC namespaces, the run budget's cgroup, the minimal root with a fresh /proc;
children inherit all of it), makes itself non-dumpable, installs a seccomp filter that
refuses the kernel keyring's calls (keys are kept per uid, not per process: one run's key
would be there for the next) and pre-imports the modules tests use.

Each run gets a child forked in advance, into the run cgroup, while the zygote is idle
(`child.py`): it warms its pages, sets the pool's rlimits, drops to the run's uid (as root)
or its capabilities (in a user namespace), enters an empty working directory and only then
waits for a job, reading it straight from the caller's pipe (length-prefixed JSON; never
pickle). It tells the zygote when it starts; the zygote enforces the deadline, clips
output, watches the memory budget (`supervise.py`), answers the caller as soon as the
harness reports its exit, then kills every process of the run (as PID 1: `kill(-1)`;
otherwise, as a child subreaper, its whole process tree; and whatever is left in the run
cgroup), reaps, removes the directory, removes every IPC object the run made (`ipc.py`),
wipes the private /tmp and forks the next child.
Nothing in this process ever runs untrusted code or holds a job (a job that needs other
limits passes through as bytes, after the fork), and no run inherits anything from an
earlier one (a fresh fork, a fresh directory).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import resource
import select
import shutil
import signal
import tempfile
import time
from typing import Any

from rewardsmith.sandbox import _linux, budget
from rewardsmith.sandbox.child import run_child
from rewardsmith.sandbox.ipc import RunIPC
from rewardsmith.sandbox.isolation import become_init, enter_view, isolate, world_readable
from rewardsmith.sandbox.process import read_frame, recv, send, write_all
from rewardsmith.sandbox.rootfs import PRIVATE_TMP_DIRS, python_paths
from rewardsmith.sandbox.supervise import supervise

# Modules HumanEval/MBPP-style tests and typical solutions import, loaded once in the zygote
# so a run never pays for them. `Sandbox(preload=...)` adds more (numpy, ...).
DEFAULT_PRELOAD = (
    "array",
    "bisect",
    "cmath",
    "collections",
    "copy",
    "datetime",
    "decimal",
    "fractions",
    "functools",
    "hashlib",
    "heapq",
    "itertools",
    "math",
    "operator",
    "random",
    "re",
    "statistics",
    "string",
    "textwrap",
    "typing",
    "unicodedata",
    "rewardsmith.sandbox.reward_run",
)
# Uids for sandboxed children when the zygote runs as root: far above any real account.
# Each zygote uses its own (base + its host pid) so RLIMIT_NPROC is per zygote.
SANDBOX_UID_BASE = 1_900_000_000
# Without a PID namespace, leftover processes are killed in up to this many sweeps.
KILL_ROUNDS = 20
PR_SET_CHILD_SUBREAPER = 36
# The zygote's folder for run directories: /tmp/rewardsmith-zygote-XXXX.
TMP_PREFIX = "rewardsmith-zygote-"
# The environment every child sees: nothing of the caller's (API keys, tokens, paths).
CHILD_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}
# After a run, how long the zygote waits for its processes to be gone from the run cgroup,
# and for the shared memory it made to be freed (so the next run starts with its whole
# budget), before it goes on regardless.
DRAIN_SECONDS = 2.0


def _descendants(root: int, keep: set[int]) -> list[int]:
    """Every live descendant of `root` (from /proc/PID/task/TID/children), except `keep`."""
    found: list[int] = []
    stack = [root]
    while stack:
        pid = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            for child in children:
                if child not in keep:
                    found.append(child)
                    stack.append(child)
    return found


class _Pending:
    """A pre-forked child waiting for its job, and the zygote's ends of its pipes."""

    def __init__(self, pid: int, workdir: str, fds: dict[str, int], from_caller: bool) -> None:
        self.pid, self.workdir, self.fds = pid, workdir, fds
        self.pidfd = os.pidfd_open(pid)
        self.from_caller = from_caller  # its job comes on the caller's pipe (not a private one)
        self.ready = False  # it said it is prepared and waiting for its job
        self.waited = False  # True once the run's exit status was collected


class Zygote:
    """Forks, prepares and supervises one run at a time; replies on behalf of each run."""

    def __init__(
        self,
        info: dict[str, Any],
        job_fd: int,
        limits: dict[str, Any],
        run_budget: Any,
        ipc: RunIPC | None = None,
    ) -> None:
        self.info = info
        self.ipc = ipc  # our IPC namespace, cleared after each run (None: not ours to clear)
        self.ipc_memory = limits["memory_mb"]
        self.shared_before = 0  # shared memory charged to the run cgroup before the run
        self.job_fd = job_fd  # the caller's pipe: prepared children read their job from it
        self.limits = limits  # what every prepared run's limits are set to
        self.budget = run_budget
        self.budget_limits = (limits["memory_mb"], limits["processes"])  # the cgroup's now
        self.pid1 = bool(info["pid_ns"])
        self.uid = SANDBOX_UID_BASE + int(info["host_pid"]) if info["drop_uid"] else None
        self.tmp_root = tempfile.mkdtemp(prefix=TMP_PREFIX, dir="/tmp")
        os.chmod(self.tmp_root, 0o711)
        self.pending: _Pending | None = None
        self.current: _Pending | None = None
        # The exit of the prepared child when `_reap` collected it (it ran a job meanwhile).
        self.pending_exit: tuple[int, int, resource.struct_rusage] | None = None

    # -- the run ----------------------------------------------------------------------------

    def prefork(self) -> None:
        """Fork the next run's child now, while idle: it prepares itself and then waits for
        its job on the caller's pipe, so a job does not wait for the fork or the set-up."""
        if self.pending is None:
            self.pending = self._fork(self.limits, self.job_fd)

    def _fork(self, limits: dict[str, Any], job_fd: int) -> _Pending:
        wanted = (limits["memory_mb"], limits["processes"])
        if self.budget.kind != "rlimit" and wanted != self.budget_limits:
            self.budget.limit(*wanted)
            self.budget_limits = wanted
        if self.budget.kind != "rlimit":  # what the next run's shared memory adds to
            self.shared_before = self.budget.shared_bytes()
        if self.ipc is not None and limits["memory_mb"] != self.ipc_memory:
            self.ipc.limit(limits["memory_mb"])
            self.ipc_memory = limits["memory_mb"]
        workdir = tempfile.mkdtemp(prefix="run-", dir=self.tmp_root)
        if self.uid is not None:
            os.chown(workdir, self.uid, self.uid)
        os.chmod(workdir, 0o700)
        pipes = {name: os.pipe() for name in ("ctrl", "out", "err", "res")}
        # Born in the run cgroup: the run and everything it starts share its budget.
        self.budget.enter()
        try:
            pid = os.fork()
            if pid == 0:
                child_ends = {name: pipes[name][1] for name in pipes}
                run_child(
                    {**child_ends, "job": job_fd},
                    workdir,
                    self.uid,
                    limits,
                    drop_caps=bool(self.info.get("drop_caps")),
                    budget=self.budget.kind != "rlimit",
                )
        finally:
            self.budget.leave()
        mine = {name: pipes[name][0] for name in pipes}
        for name in pipes:
            os.close(pipes[name][1])
        return _Pending(pid, workdir, mine, from_caller=job_fd == self.job_fd)

    def serve(self) -> dict[str, Any] | None:
        """Supervise the next run: the prepared child takes the caller's next job, we enforce
        its limits and return the reply. None: the caller closed its pipe (we are done).

        When the harness reports its exit (its last record), the reply goes out at once and
        the run's teardown, reaping and clean-up happen in `finish`, before the next job;
        otherwise (a crash, a signal, a timeout) we wait for the exit here.
        """
        try:
            self.prefork()
        except OSError as exc:  # cannot fork (the host is out of processes or memory)
            if recv(self.job_fd) is None:
                return None
            return {"status": "error", "reason": f"the sandbox could not fork a run: {exc}"}
        run, self.pending = self.pending, None
        assert run is not None
        self.current = run
        while True:
            message = self._next_message(run)
            if message is None:
                return self._lost(run)
            if message.get("eof"):
                return None
            if "respawn" not in message:
                break
            # The job needs other limits than the prepared child has: a child prepared for
            # exactly those, forked before the job is read here (so it never inherits the
            # job from our memory), which then gets it on a private pipe.
            job_limits = message["respawn"]
            read_end, write_end = os.pipe()
            fresh = self._fork(job_limits, read_end)
            os.close(read_end)
            job = read_frame(run.fds["ctrl"])
            self._retire(run)
            run = fresh
            self.current = run
            with contextlib.suppress(OSError):
                if job is not None:
                    write_all(write_end, job)  # it dies unprepared: `_lost` says so
            os.close(write_end)
        os.close(run.fds.pop("ctrl"))
        return supervise(run, message, self.budget, self._run_pids, self._kill_all, self._wait)

    def _run_pids(self) -> list[int]:
        """Pids of every process of the current run, zombies included (their CPU time is
        still theirs to account for): all our descendants but the prepared child. Orphans
        of the run are ours too (we are PID 1 of the namespace, or a child subreaper), so a
        process cannot leave the run's count by leaving its parent; a cgroup's list would
        miss the zombies."""
        keep = {self.pending.pid} if self.pending is not None else set()
        return _descendants(os.getpid(), keep)

    def _next_message(self, run: _Pending) -> dict[str, Any] | None:
        """The child's next message other than `ready`; None if it died first."""
        while True:
            ready, _, _ = select.select([run.fds["ctrl"], run.pidfd], [], [])
            if run.fds["ctrl"] in ready:
                message = recv(run.fds["ctrl"])
                if isinstance(message, dict) and message.get("ready"):
                    run.ready = True
                    continue
                if isinstance(message, dict):
                    return message
            return None

    def _lost(self, run: _Pending) -> dict[str, Any] | None:
        """The child died without starting a job. Unprepared (it never said ready): the job,
        if from the caller, is still unread, so read it and answer with an error. Prepared:
        it may have read part of the job, so the caller's pipe cannot be trusted: exit (the
        pool sees the worker die and replaces it)."""
        status, _ = self._wait(run)
        if run.ready and run.from_caller:
            self._retire(run)
            shutil.rmtree(self.tmp_root, ignore_errors=True)
            os._exit(3)
        if run.from_caller and recv(self.job_fd) is None:
            return None
        return {
            "status": "error",
            "reason": f"the sandbox could not prepare a run (wait status {status})",
        }

    def _retire(self, run: _Pending) -> None:
        """A child that is done (its run over, or no job taken): wait for it, close what is
        left of its pipes, remove its directory."""
        with contextlib.suppress(ChildProcessError):
            if not run.waited:
                self._wait(run)
        for fd in (*run.fds.values(), run.pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)
        run.fds = {}
        shutil.rmtree(run.workdir, ignore_errors=True)

    def finish(self) -> None:
        """After the reply: reap the run, remove its directory, fork the next child."""
        run, self.current = self.current, None
        if run is not None:
            self._retire(run)
            deadline = time.monotonic() + DRAIN_SECONDS
            self._drain(deadline)
            if self.ipc is not None:
                self.ipc.clear()
            self._wipe_private_tmp()
            self._free_shared_memory(deadline)
        # Only now: the next child takes its job from the caller's pipe as soon as it is
        # ready, so the private /tmp must already be clean and the budget whole for it.
        self.prefork()
        self._reap()

    def _drain(self, deadline: float) -> None:
        """Wait (a little) until the killed run's processes are gone from its cgroup and
        reaped: a dying process still holds memory and a place in `pids.max`."""
        if self.budget.kind == "rlimit":
            return
        while True:
            self._reap()
            left = self.budget.procs()
            if not left or time.monotonic() > deadline:
                return
            self.budget.kill_all()
            time.sleep(0.0005)

    def _free_shared_memory(self, deadline: float) -> None:
        """Wait (a little) until the run's shared memory has left its budget: files of the
        private /tmp and SysV segments (both removed by now), which the kernel frees as the
        last process that mapped them is gone."""
        if self.budget.kind == "rlimit":
            return
        while self.budget.shared_bytes() > self.shared_before and time.monotonic() < deadline:
            time.sleep(0.001)

    def _kill_all(self, pid: int) -> None:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        if self.pid1:
            # As PID 1 of the namespace this reaches every process but ourselves.
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
            return
        # Without a PID namespace: we are a child subreaper, so processes that left the
        # run's group (setsid, double fork) are still our descendants; kill the whole tree
        # but the waiting child, a few rounds in case some were forking meanwhile.
        keep = {self.pending.pid} if self.pending is not None else set()
        self.budget.kill_all()  # the run cgroup holds exactly the run's processes
        for _ in range(KILL_ROUNDS):
            tree = _descendants(os.getpid(), keep)
            if not tree:
                break
            for victim in tree:
                with contextlib.suppress(OSError):
                    os.kill(victim, signal.SIGKILL)
        if self.uid is not None:
            self._kill_uid()

    def _kill_uid(self) -> None:
        """Without a PID namespace: kill every process of the run's uid (escaped daemons)."""
        assert self.uid is not None
        helper = os.fork()
        if helper == 0:
            try:
                os.setgid(self.uid)
                os.setuid(self.uid)
                for _ in range(100):
                    os.kill(-1, signal.SIGKILL)
            except BaseException:
                pass
            os._exit(0)
        os.waitpid(helper, 0)

    def _reap(self) -> None:
        """Collect exited processes (ours, and orphans when we are PID 1) without blocking;
        killed leftovers may still be dying (their zombies are collected after the next run).
        The prepared child may already have taken a job and exited: its status is kept for
        `_wait`."""
        while True:
            try:
                pid, status, rusage = os.wait3(os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.pending is not None and pid == self.pending.pid:
                self.pending_exit = (pid, status, rusage)

    def _wait(self, run: _Pending) -> tuple[int, resource.struct_rusage]:
        """Wait for a run's child to exit: its wait status and resource usage."""
        run.waited = True
        if self.pending_exit is not None and self.pending_exit[0] == run.pid:
            (_, status, rusage), self.pending_exit = self.pending_exit, None
            return status, rusage
        _, status, rusage = os.wait4(run.pid, 0)
        return status, rusage

    def _wipe_private_tmp(self) -> None:
        """Empty the private /tmp, /var/tmp and /dev/shm (when we have them) after a run."""
        if not self.info.get("private_tmp"):
            return
        # Host paths bound back into the private tmpfs (a checkout or venv under /tmp) are
        # real files: never wipe them or the folders that lead to them.
        kept = self.info.get("kept_tmp_paths", [])
        for root in PRIVATE_TMP_DIRS:
            try:
                entries = os.listdir(root)
            except OSError:
                continue
            for name in entries:
                path = os.path.join(root, name)
                if path == self.tmp_root or any(
                    k == path or k.startswith(path + "/") for k in kept
                ):
                    continue
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        os.unlink(path)


def main(job_fd: int, reply_fd: int, config: dict[str, Any]) -> None:
    """The zygote: `job_fd` brings jobs from the pool (prepared children read them from it
    directly), replies go out on `reply_fd`; `config` has the pool's `limits`, `preload`,
    `namespaces`, `read_only_paths` and the caller's pid."""
    limits = dict(config["limits"])
    host_pid = os.getpid()
    info, run_budget = isolate(bool(config["namespaces"]), limits, budget.group_name(host_pid))
    info["host_pid"] = host_pid
    become_init(info, int(config["parent_pid"]))
    enter_view(info, int(limits["disk_mb"]), config.get("read_only_paths") or [])
    if not info["pid_ns"]:
        # Orphans of a run (double forks) become our children, so we can find and kill them.
        try:
            _linux.prctl(PR_SET_CHILD_SUBREAPER, 1)
            info["subreaper"] = True
        except OSError:
            info["subreaper"] = False
    # A write to a child that died gives EPIPE, never kills the zygote (children reset it).
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    # Inherited by every child: no setuid/setcap binary can give a run new privileges.
    # (It does not stop the zygote's own setuid() calls, only gains through execve.)
    try:
        _linux.prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)
        info["no_new_privs"] = True
    except OSError:
        info["no_new_privs"] = False
    # Inherited by every run: the keyring calls fail (keys outlive processes, per uid).
    try:
        _linux.deny_keyrings()
        info["keyrings_denied"] = True
    except OSError:
        info["keyrings_denied"] = False
    # Runs cannot ptrace us, nor open our /proc/1/{mem,fd,environ} (they may share our uid
    # in a user namespace); each run makes itself dumpable again for its own /proc/self.
    _linux.prctl(_linux.PR_SET_DUMPABLE, 0)
    # As root, runs get a uid of their own, if Python is readable for it (in the minimal
    # root it is, wherever it lives); uid 0 of a user namespace gives up its capabilities.
    info["drop_uid"] = info["root"] and world_readable(python_paths())
    info["drop_caps"] = bool(info["user_ns"])
    os.environ.clear()
    os.environ.update(CHILD_ENV)
    failed = []
    for name in (*DEFAULT_PRELOAD, *config["preload"]):
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {exc}")
    info["preload_failed"] = failed
    import gc

    gc.collect()
    gc.freeze()  # fewer copy-on-write page faults in the children
    run_ipc = None
    if info["ipc_ns"]:  # only our own namespace is ours to clear
        try:
            run_ipc = RunIPC(int(limits["memory_mb"]))
        except OSError as exc:
            info["ipc_error"] = str(exc)
    info["ipc_cleared"] = run_ipc is not None
    zygote = Zygote(info, job_fd, limits, run_budget, run_ipc)

    def leave() -> None:
        shutil.rmtree(zygote.tmp_root, ignore_errors=True)
        run_budget.remove()
        os._exit(0)

    zygote.prefork()
    send(reply_fd, {"ready": True, "isolation": info, "tmp_root": zygote.tmp_root})
    while True:
        try:
            reply = zygote.serve()
        except Exception as exc:
            reply = {"status": "error", "reason": f"zygote: {type(exc).__name__}: {exc}"}
        if reply is None:  # the caller closed the pipe or died
            leave()
        try:
            send(reply_fd, reply)
        except OSError:
            leave()
        zygote.finish()
