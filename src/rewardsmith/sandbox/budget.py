"""One memory and process budget for every process of a run: a cgroup per zygote.

Each zygote makes one cgroup, `rewardsmith-<pid namespace>-<pid>` (its host pid, and the
PID namespace that pid belongs to), and forks every run into it, so the run and everything it starts share one `memory_mb` and one
`processes` budget. What is used, in order:

- `cgroup2`: a cgroup v2 hierarchy with the memory and pids controllers, where this process
  may create a cgroup (its own cgroup, if it can hand controllers down, or its parent: a
  systemd `Delegate=yes` unit, a container's root): `memory.max`, `memory.swap.max` 0,
  `memory.oom.group` 1 (an OOM kill ends the whole run), `pids.max`;
- `cgroup1`: the v1 memory and pids hierarchies, under this process's own cgroups (as root):
  `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes`: no swap), `pids.max`; an OOM
  kill is announced on an eventfd and the zygote ends the whole run;
- `rlimit`: neither is writable (a non-root user without a delegated cgroup v2): the rlimits
  the run's processes carry anyway (RLIMIT_AS, RLIMIT_NPROC) are all there is, each per
  process, and `warning` says so.

A run that hits the memory budget ends with status `memory` (`oom_kills` counts). The zygote
removes its cgroup when it exits; the pool removes it when it kills a zygote (`remove_paths`);
and a zygote starting sweeps up those of zygotes that died with their callers: a dead pid of
its own PID namespace in the name (another namespace's are not its to judge). Files are reached through directory descriptors opened here, so this keeps
working after the zygote has switched to its minimal root (`rootfs.py`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence

PREFIX = "rewardsmith-"


def group_name(pid: int) -> str:
    """The cgroup of the zygote with this (host) pid: `rewardsmith-<pid namespace>-<pid>`."""
    return f"{PREFIX}{os.stat('/proc/self/ns/pid').st_ino}-{pid}"


CGROUP2_MOUNT = "/sys/fs/cgroup"
# How long `remove` waits for a cgroup's processes to die before giving up on rmdir.
REMOVE_SECONDS = 2.0
RLIMIT_WARNING = (
    "no writable cgroup (cgroup v2 with the memory and pids controllers delegated, or cgroup "
    "v1 as root): memory_mb and processes are enforced per process (RLIMIT_AS, RLIMIT_NPROC), "
    "not for the run as a whole: a run that forks can use up to processes x memory_mb of "
    "memory, and RLIMIT_NPROC counts every process of the uid"
)


def _write(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    try:
        return os.read(fd, 1 << 16).decode()
    finally:
        os.close(fd)


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


class _Group:
    """One cgroup directory we made: its parent's descriptor, its own, its host path."""

    def __init__(self, parent: str, name: str) -> None:
        self.path = os.path.join(parent, name)
        self.name = name
        self.parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            _sweep(self.parent_fd)
            os.mkdir(name, dir_fd=self.parent_fd)
            self.fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=self.parent_fd)
        except OSError:
            os.close(self.parent_fd)
            raise

    def procs(self) -> list[int]:
        return [int(p) for p in _read(self.fd, "cgroup.procs").split()]

    def remove(self) -> None:
        _empty_and_remove(self.fd, self.parent_fd, self.name)
        for fd in (self.fd, self.parent_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class Budget:
    """The zygote's cgroup(s) for its runs (see the module docstring); `kind` says which."""

    def __init__(self, kind: str, groups: Sequence[_Group] = (), home: Sequence[int] = ()):
        self.kind = kind
        self.groups = list(groups)
        self.home = list(home)  # descriptors of our own cgroups, to move back into
        self.warning = RLIMIT_WARNING if kind == "rlimit" else ""
        self.oom_fd: int | None = None  # readable (v1 eventfd) or exceptional (v2) on OOM
        self.oom_fd_is_event = False

    @property
    def paths(self) -> list[str]:
        """Host paths of the cgroups made here (the pool removes them if we are killed)."""
        return [g.path for g in self.groups]

    def info(self) -> dict[str, object]:
        return {"kind": self.kind, "paths": self.paths, "warning": self.warning}

    def limit(self, memory_mb: int, processes: int) -> None:
        """Set the budget every later run shares."""
        memory = str(int(memory_mb) << 20)
        if self.kind == "cgroup2":
            (group,) = self.groups
            _write(group.fd, "memory.max", memory)
            with contextlib.suppress(OSError):
                _write(group.fd, "memory.swap.max", "0")
            with contextlib.suppress(OSError):
                _write(group.fd, "memory.oom.group", "1")
            _write(group.fd, "pids.max", str(int(processes)))
        elif self.kind == "cgroup1":
            memory_group, pids_group = self.groups
            _set_memory_v1(memory_group.fd, memory)
            _write(pids_group.fd, "pids.max", str(int(processes)))

    def enter(self) -> None:
        """Move this process into the run cgroup(s): what it forks now is born there."""
        for group in self.groups:
            _write(group.fd, "cgroup.procs", "0")

    def leave(self) -> None:
        """Move this process back to where it came from."""
        for fd in self.home:
            _write(fd, "cgroup.procs", "0")

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the memory budget, ever."""
        try:
            if self.kind == "cgroup2":
                return _counter(_read(self.groups[0].fd, "memory.events"), "oom_kill")
            if self.kind == "cgroup1":
                return _counter(_read(self.groups[0].fd, "memory.oom_control"), "oom_kill")
        except OSError:
            pass
        return 0

    def clear_oom_event(self) -> None:
        """Re-arm the notification: read the eventfd (v1), or read `memory.events` again
        through the descriptor select watches (v2: kernfs signals it until then)."""
        if self.oom_fd is None:
            return
        with contextlib.suppress(OSError):
            if not self.oom_fd_is_event:
                os.lseek(self.oom_fd, 0, os.SEEK_SET)
            os.read(self.oom_fd, 1 << 12)

    def shared_bytes(self) -> int:
        """Shared memory (tmpfs files, SysV segments, shared mappings) charged to the run
        cgroup, from `memory.stat`; 0 when it cannot be read."""
        key = "shmem" if self.kind == "cgroup2" else "total_shmem"
        try:
            return _counter(_read(self.groups[0].fd, "memory.stat"), key) if self.groups else 0
        except (OSError, ValueError):
            return 0

    def procs(self) -> list[int]:
        """Pids (as this process sees them) of every process in the run cgroup."""
        try:
            return self.groups[0].procs() if self.groups else []
        except OSError:
            return []

    def kill_all(self) -> None:
        if self.kind == "cgroup2":
            with contextlib.suppress(OSError):
                _write(self.groups[0].fd, "cgroup.kill", "1")
                return
        for pid in self.procs():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left in our cgroups and remove them."""
        for group in self.groups:
            group.remove()
        if self.oom_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.oom_fd)
        for fd in self.home:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.groups, self.home = [], []


def create(name: str, memory_mb: int, processes: int) -> Budget:
    """The best budget this process can make (cgroup v2, v1, else rlimits), limits set."""
    for make in (_cgroup2, _cgroup1):
        budget = None
        try:
            budget = make(name)
            if budget is not None:
                budget.limit(memory_mb, processes)
                return budget
        except OSError:
            if budget is not None:
                budget.remove()
    return Budget("rlimit")


def _set_memory_v1(fd: int, value: str) -> None:
    """The memory limit, and the memory+swap one to the same value (no swap), keeping
    memsw >= limit at every step: lower the limit first, or raise memsw first."""
    try:
        os.stat("memory.memsw.limit_in_bytes", dir_fd=fd)
    except OSError:
        _write(fd, "memory.limit_in_bytes", value)
        return
    try:
        _write(fd, "memory.limit_in_bytes", value)
        _write(fd, "memory.memsw.limit_in_bytes", value)
    except OSError:
        _write(fd, "memory.memsw.limit_in_bytes", value)
        _write(fd, "memory.limit_in_bytes", value)


def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    return own


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _, options = right.split(" ", 2)
            if fstype in ("cgroup", "cgroup2"):
                found.append((left.split()[4], fstype, set(options.strip().split(","))))
    return found


def _cgroup2(name: str) -> Budget | None:
    own = _own_cgroups().get("")
    mounts = [m for m, fstype, _ in _mounts() if fstype == "cgroup2"]
    if own is None or not mounts:
        return None
    mount = mounts[0]
    here = os.path.join(mount, own.lstrip("/"))
    for parent in dict.fromkeys((here, os.path.dirname(here))):
        if not parent.startswith(mount) or not os.access(parent, os.W_OK):
            continue
        try:
            with open(os.path.join(parent, "cgroup.controllers")) as f:
                if not {"memory", "pids"} <= set(f.read().split()):
                    continue
            with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                enabled = set(f.read().split())
            if not {"memory", "pids"} <= enabled:
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as f:
                    f.write("+memory +pids")
            group = _Group(parent, name)
        except OSError:
            continue
        home = os.open(here, os.O_RDONLY | os.O_DIRECTORY)
        budget = Budget("cgroup2", [group], [home])
        try:
            events = os.open("memory.events", os.O_RDONLY, dir_fd=group.fd)
            budget.oom_fd = events
        except OSError:
            pass
        return budget
    return None


def _cgroup1(name: str) -> Budget | None:
    own = _own_cgroups()
    points = {}
    for mount, fstype, options in _mounts():
        for controller in ("memory", "pids"):
            if fstype == "cgroup" and controller in options and controller in own:
                points[controller] = os.path.join(mount, own[controller].lstrip("/"))
    if set(points) != {"memory", "pids"} or not all(os.access(p, os.W_OK) for p in points.values()):
        return None
    memory = _Group(points["memory"], name)
    try:
        pids = _Group(points["pids"], name)
    except OSError:
        memory.remove()
        raise
    home = [os.open(points[c], os.O_RDONLY | os.O_DIRECTORY) for c in ("memory", "pids")]
    budget = Budget("cgroup1", [memory, pids], home)
    # The kernel signals an eventfd on every OOM kill in the group (v1 notification API).
    event = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        control = os.open("memory.oom_control", os.O_RDONLY, dir_fd=memory.fd)
        try:
            _write(memory.fd, "cgroup.event_control", f"{event} {control}")
        finally:
            os.close(control)
        budget.oom_fd, budget.oom_fd_is_event = event, True
    except OSError:
        os.close(event)  # the counter is still read after every run
    return budget


def _sweep(parent_fd: int) -> None:
    """Remove the cgroups of zygotes that died without removing theirs (their caller was
    killed with them): a dead pid of this PID namespace in the name."""
    namespace = group_name(0).rsplit("-", 1)[0] + "-"
    for entry in os.listdir(parent_fd):
        if not entry.startswith(namespace):
            continue
        try:
            os.kill(int(entry[len(namespace) :]), 0)
            continue
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        with contextlib.suppress(OSError):
            fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent_fd)
            try:
                _empty_and_remove(fd, parent_fd, entry)
            finally:
                os.close(fd)


def _empty_and_remove(fd: int, parent_fd: int, name: str) -> None:
    deadline = time.monotonic() + REMOVE_SECONDS
    while True:
        try:
            pids = [int(p) for p in _read(fd, "cgroup.procs").split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            os.rmdir(name, dir_fd=parent_fd)
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)


def remove_paths(paths: Sequence[str]) -> None:
    """Remove cgroups by host path (the pool, after killing their zygote); quiet on errors."""
    for path in paths:
        parent, name = os.path.split(path.rstrip("/"))
        if not name.startswith(PREFIX):
            continue
        try:
            parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            continue
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent_fd)
        except OSError:
            os.close(parent_fd)
            continue
        try:
            _empty_and_remove(fd, parent_fd, name)
        finally:
            os.close(fd)
            os.close(parent_fd)
