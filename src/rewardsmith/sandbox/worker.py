"""The warm zygote: a long-lived process that forks one disposable child per run.

Started by `rewardsmith.sandbox.pool` (`python -s -c BOOTSTRAP`, which imports this module
without the rest of rewardsmith, and calls `main`). At start it isolates itself once
(`rewardsmith.sandbox.isolation`: PID, network, mount and IPC namespaces, private /tmp, a
fresh /proc; children inherit all of it), pre-imports the modules tests use, and waits for
jobs on a pipe (length-prefixed JSON; never pickle, so a compromised zygote cannot run code
in the caller).

Each run gets a child forked in advance, while the zygote was idle, that has already warmed
its pages. On a job the child sets rlimits, drops to the run's uid (as root), enters an
empty working directory and hands over to `rewardsmith.sandbox.harness`. The zygote enforces
the wall-clock deadline, clips output, answers as soon as the harness reports its exit,
then kills every process of the run (as PID 1: `kill(-1)`; otherwise, as a child subreaper,
its whole process tree), reaps, removes the directory, wipes the private /tmp and forks the
next child. Nothing in this process ever runs untrusted code, and no run inherits anything
from an earlier one (a fresh fork, a fresh directory).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import tempfile
import time
from typing import Any

from rewardsmith.sandbox import _linux, harness
from rewardsmith.sandbox.isolation import PRIVATE_TMP_DIRS, become_init, isolate

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
    "rewardsmith.sandbox.policy",
)
# Uids for sandboxed children when the zygote runs as root: far above any real account.
# Each zygote uses its own (base + its host pid) so RLIMIT_NPROC is per zygote.
SANDBOX_UID_BASE = 1_900_000_000
# Without a PID namespace, leftover processes are killed in up to this many sweeps.
KILL_ROUNDS = 20
PR_SET_CHILD_SUBREAPER = 36
# The result pipe is moved to a random descriptor at or above this number.
RESULT_FD_MIN = 200
READ_CHUNK = 65536
# Stdin up to this size goes through a pipe (its buffer holds 64 KiB), larger through a file.
PIPE_STDIN_BYTES = 60_000
# The environment every child sees: nothing of the caller's (API keys, tokens, paths).
CHILD_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": "/tmp"}

_HEADER = struct.Struct("!Q")


def _send(fd: int, obj: Any) -> None:
    data = json.dumps(obj).encode()
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _recv(fd: int) -> Any:
    header = _read_exact(fd, _HEADER.size)
    if header is None:
        return None
    body = _read_exact(fd, _HEADER.unpack(header)[0])
    return None if body is None else json.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


# -- one run --------------------------------------------------------------------------------


def _vm_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


# A small program each pre-forked child compiles and runs while it waits for a job: it
# touches the pages that compiling and running typical test code touch (copy-on-write
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


def _child(fds: dict[str, int], workdir: str, uid: int | None) -> None:
    """A pre-forked child: wait for a job, confine ourselves, run the harness. Never returns."""
    try:
        os.setsid()
        for sig in (signal.SIGPIPE, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["out"], 1)
        os.dup2(fds["err"], 2)
        result_fd = RESULT_FD_MIN + int.from_bytes(os.urandom(2), "big") % 600
        os.dup2(fds["res"], result_fd)
        ctrl_fd = os.dup2(fds["ctrl"], result_fd + 1)
        os.closerange(3, result_fd)
        os.closerange(ctrl_fd + 1, 65536)
        exec(compile(_WARM_UP_SOURCE, "<warm-up>", "exec"), {"__name__": "warm_up"})
        job = _recv(ctrl_fd)
        os.close(ctrl_fd)
        if job is None:
            os._exit(0)
        if job.get("stdin_path"):
            stdin = os.open(job["stdin_path"], os.O_RDONLY)
            os.dup2(stdin, 0)
            os.close(stdin)
        limits = job["limits"]
        os.chdir(workdir)
        cpu = max(1, int(limits["cpu_seconds"] + 0.999))
        for res, value in (
            (resource.RLIMIT_CPU, (cpu, cpu + 1)),
            (resource.RLIMIT_AS, (_vm_bytes() + (limits["memory_mb"] << 20),) * 2),
            (resource.RLIMIT_FSIZE, (limits["file_size_mb"] << 20,) * 2),
            (resource.RLIMIT_NOFILE, (limits["open_files"],) * 2),
            (resource.RLIMIT_NPROC, (limits["processes"],) * 2),
            (resource.RLIMIT_CORE, (0, 0)),
        ):
            resource.setrlimit(res, value)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        os.environ["HOME"] = workdir  # the rest was set once in the zygote
        sys.argv = ["sandbox"]
        # sys.stdin/stdout/stderr are the zygote's own objects on fds 0-2, never used there, so
        # their buffers are empty: reusing them saves building new ones on every run.
        harness.run(job, result_fd)
    except BaseException:
        pass
    os._exit(120)


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
    """A pre-forked child waiting for its job, and the parent's ends of its pipes."""

    def __init__(self, pid: int, workdir: str, fds: dict[str, int]) -> None:
        self.pid, self.workdir, self.fds = pid, workdir, fds
        self.pidfd = os.pidfd_open(pid)
        self.waited = False  # True once the run's exit status was collected


class _Capture:
    """Reads a pipe, keeping at most `limit` bytes (the rest is read and dropped)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def read(self) -> bool:
        """Read what is there; False at end of file."""
        try:
            chunk = os.read(self.fd, READ_CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        room = self.limit - self.size
        if room > 0:
            self.parts.append(chunk[:room])
            self.size += min(room, len(chunk))
        self.dropped += max(0, len(chunk) - max(room, 0))
        return True

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")

    def exit_code(self, marker: bytes) -> int | None:
        """The code in a final `NONCE exit CODE` record, once it has arrived."""
        if not self.parts or not self.parts[-1].endswith(b"\n"):
            return None
        tail = self.parts[-1][-(len(marker) + 16) :]
        at = tail.rfind(marker)
        if at < 0:
            return None
        try:
            return int(tail[at + len(marker) :].split()[0])
        except (ValueError, IndexError):
            return None


class Zygote:
    def __init__(self, info: dict[str, Any]) -> None:
        self.info = info
        self.pid1 = bool(info["pid_ns"])
        self.uid = SANDBOX_UID_BASE + int(info["host_pid"]) if info["drop_uid"] else None
        self.tmp_root = tempfile.mkdtemp(prefix="rewardsmith-zygote-", dir="/tmp")
        os.chmod(self.tmp_root, 0o711)
        self.pending: _Pending | None = None
        self.current: _Pending | None = None

    # -- the run ----------------------------------------------------------------------------

    def prefork(self) -> None:
        """Fork the next run's child now, while idle, so a job does not wait for the fork."""
        if self.pending is not None:
            return
        workdir = tempfile.mkdtemp(prefix="run-", dir=self.tmp_root)
        if self.uid is not None:
            os.chown(workdir, self.uid, self.uid)
        os.chmod(workdir, 0o700)
        pipes = {name: os.pipe() for name in ("stdin", "out", "err", "res", "ctrl")}
        pid = os.fork()
        if pid == 0:
            child_ends = {
                "stdin": pipes["stdin"][0],
                "ctrl": pipes["ctrl"][0],
                **{name: pipes[name][1] for name in ("out", "err", "res")},
            }
            _child(child_ends, workdir, self.uid)
        mine = {
            "stdin": pipes["stdin"][1],
            "ctrl": pipes["ctrl"][1],
            **{name: pipes[name][0] for name in ("out", "err", "res")},
        }
        os.close(pipes["stdin"][0])
        os.close(pipes["ctrl"][0])
        for name in ("out", "err", "res"):
            os.close(pipes[name][1])
        self.pending = _Pending(pid, workdir, mine)

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        """Hand the job to the waiting child and supervise it; returns the reply.

        When the harness reports its exit code (its last record), the reply goes out at once
        and the child's teardown, reaping and clean-up happen in `finish`, before the next
        job is read; otherwise (a crash, a signal, a timeout) we wait for the exit here.
        """
        self.prefork()
        run, self.pending = self.pending, None
        assert run is not None
        self.current = run
        limits = job["limits"]
        start = time.monotonic()
        data = (job.get("stdin") or "").encode()
        stdin_path = None
        if len(data) > PIPE_STDIN_BYTES:
            stdin_path = os.path.join(self.tmp_root, "stdin")
            with open(stdin_path, "wb") as f:
                f.write(data)
            job = {**job, "stdin_path": stdin_path, "stdin": None}
            data = b""
        try:
            _send(run.fds["ctrl"], job)
            if data:
                os.write(run.fds["stdin"], data)
        except OSError:
            pass  # the child died while waiting; its exit status tells what happened
        for name in ("ctrl", "stdin"):
            os.close(run.fds[name])
        out_limit = int(limits["output_bytes"])
        captures = {
            "out": _Capture(run.fds["out"], out_limit),
            "err": _Capture(run.fds["err"], out_limit),
            "res": _Capture(run.fds["res"], int(limits.get("channel_bytes", 1 << 20))),
        }
        for cap in captures.values():
            os.set_blocking(cap.fd, False)
        exit_marker = f"{job.get('nonce', '')} exit ".encode()
        deadline = start + float(limits["wall_seconds"])
        timed_out = False
        reported_exit: int | None = None
        open_fds = {cap.fd: cap for cap in captures.values()}
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([run.pidfd, *open_fds], [], [], remaining)
            for fd in ready:
                if fd != run.pidfd and not open_fds[fd].read():
                    del open_fds[fd]
            if run.pidfd in ready:
                break
            # The harness closes stdout/stderr before its exit record, so by now their data
            # is in the pipes: no need to wait for their end of file (fewer wake-ups).
            reported_exit = captures["res"].exit_code(exit_marker)
            if reported_exit is not None:
                break
        self._kill_all(run.pid)
        status: int | None = None
        cpu_used = 0.0
        if reported_exit is None or timed_out:
            _, status, rusage = os.wait4(run.pid, 0)
            run.waited = True
            cpu_used = rusage.ru_utime + rusage.ru_stime
            reported_exit = None
        for cap in list(open_fds.values()):
            while cap.read():
                if not select.select([cap.fd], [], [], 0)[0]:
                    break
        for cap in captures.values():
            os.close(cap.fd)
        if stdin_path:
            with contextlib.suppress(OSError):
                os.unlink(stdin_path)
        duration = time.monotonic() - start
        if status is None:
            assert reported_exit is not None
            status = (reported_exit & 0xFF) << 8  # what waitpid would say for exit(code)
        return self._result(status, timed_out, cpu_used, duration, captures, limits)

    def finish(self) -> None:
        """After the reply: reap the run, remove its directory, fork the next child."""
        run, self.current = self.current, None
        # Fork the next child first: the old one's teardown (it was killed before the reply)
        # runs on another core meanwhile.
        self.prefork()
        if run is not None:
            if not run.waited:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(run.pid, 0)
            os.close(run.pidfd)
            self._clean(run.workdir)
        self._reap()

    def _result(
        self,
        status: int,
        timed_out: bool,
        cpu_used: float,
        duration: float,
        captures: dict[str, _Capture],
        limits: dict[str, Any],
    ) -> dict[str, Any]:
        channel = captures["res"].text()
        stderr = captures["err"].text()
        exit_code: int | None = None
        sig: int | None = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        else:
            exit_code = os.WEXITSTATUS(status)
        cpu_limit = max(1, int(limits["cpu_seconds"] + 0.999))
        memory = " memory " in channel or stderr.rstrip().endswith("MemoryError")
        if timed_out:
            state, reason = "timeout", f"wall-clock limit of {limits['wall_seconds']} s"
        elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= cpu_limit):
            state, reason = "timeout", f"CPU time limit of {cpu_limit} s"
        elif memory:
            state, reason = "memory", f"memory limit of {limits['memory_mb']} MB"
        elif sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            state = "killed"
            reason = f"killed by {name}"
            if sig == signal.SIGXFSZ:
                reason += f" (file size limit of {limits['file_size_mb']} MB)"
        elif exit_code == 0:
            state, reason = "ok", ""
        else:
            state, reason = "failed", f"exit code {exit_code}"
        return {
            "status": state,
            "exit_code": exit_code,
            "signal": sig,
            "stdout": captures["out"].text(),
            "stderr": stderr,
            "channel": channel,
            "duration": duration,
            "cpu_seconds": cpu_used,
            "reason": reason,
            "truncated": captures["out"].dropped > 0 or captures["err"].dropped > 0,
        }

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
        """Collect exited processes (ours, and orphans when we are PID 1) without blocking:
        the waiting child is alive, and killed leftovers may still be dying (their zombies
        are collected after the next run)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _clean(self, workdir: str) -> None:
        shutil.rmtree(workdir, ignore_errors=True)
        if self.info.get("private_tmp"):
            # Host paths bound back into the private tmpfs (a checkout or venv under /tmp)
            # are real files: never wipe them or the folders that lead to them.
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


def main() -> None:
    config = json.loads(sys.argv[1])
    # The protocol pipes move off 0/1 so children can have plain stdin/stdout.
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    host_pid = os.getpid()
    info = isolate(int(config["disk_mb"]), bool(config.get("namespaces", True)))
    info["host_pid"] = host_pid
    become_init(info, int(config["parent_pid"]))
    if not info["pid_ns"]:
        # Orphans of a run (double forks) become our children, so we can find and kill them.
        try:
            _linux.prctl(PR_SET_CHILD_SUBREAPER, 1)
            info["subreaper"] = True
        except OSError:
            info["subreaper"] = False
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # Inherited by every child: no setuid/setcap binary can give a run new privileges.
    # (It does not stop the zygote's own setuid() calls, only gains through execve.)
    try:
        _linux.prctl(_linux.PR_SET_NO_NEW_PRIVS, 1)
        info["no_new_privs"] = True
    except OSError:
        info["no_new_privs"] = False
    os.environ.clear()
    os.environ.update(CHILD_ENV)
    failed = []
    for name in (*DEFAULT_PRELOAD, *config.get("preload", ())):
        try:
            importlib.import_module(name)
        except Exception as exc:
            failed.append(f"{name}: {exc}")
    info["preload_failed"] = failed
    import gc

    gc.collect()
    gc.freeze()  # fewer copy-on-write page faults in the children
    zygote = Zygote(info)
    zygote.prefork()
    _send(proto_out, {"ready": True, "isolation": info})
    while True:
        job = _recv(proto_in)
        if job is None:  # the caller closed the pipe or died
            shutil.rmtree(zygote.tmp_root, ignore_errors=True)
            os._exit(0)
        try:
            reply = zygote.run(job)
        except Exception as exc:
            reply = {"status": "error", "reason": f"zygote: {type(exc).__name__}: {exc}"}
        _send(proto_out, reply)
        zygote.finish()


if __name__ == "__main__":
    main()
