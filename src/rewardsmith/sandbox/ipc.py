"""What a run makes in the zygote's IPC namespace dies with the run, and is bounded by its budget.

Each zygote has an IPC namespace of its own (`isolation.py`) and runs one run at a time, so
its namespace holds exactly what the current run made: System V shared memory segments,
message queues and semaphore sets, and POSIX message queues. Those outlive the processes
that made them, so a run could leave data for the next run of the zygote (the next sample
of the batch) or leave shared memory charged to the budget the next run needs. `RunIPC`:

- bounds the namespace once, through its sysctls: SysV shared memory up to the run's memory
  budget in all (`kernel/shmall`, `shmmax`; without a cgroup this is what counts it), and a
  few other objects (`OBJECT_LIMITS`), so that kernel memory the cgroup may not see stays
  small;
- after every run, once its processes are gone, removes every object in the namespace
  (`clear`): the SysV ones by id from /proc/sysvipc, the POSIX queues through a private
  mount of the namespace's mqueue file system that no run can reach (the mount is detached
  from every tree; only the zygote's descriptor holds it).

(A new IPC namespace per run does the same, but creating and tearing one down costs
milliseconds per run on the run's path; clearing one costs reading three small files.)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import tempfile

from rewardsmith.sandbox import _linux

# A few objects of each kind, as tests and solutions use them; `kernel/sem` is "semaphores
# per set, in all, operations per call, sets".
OBJECT_LIMITS = {
    "kernel/shmmni": "64",
    "kernel/msgmni": "16",
    "kernel/msgmnb": "16384",
    "kernel/sem": "250 4000 32 16",
    "fs/mqueue/queues_max": "16",
}
IPC_RMID = 0


def sysctls(memory_mb: int) -> dict[str, str]:
    """The namespace's limits: SysV shared memory up to `memory_mb` (one segment, and all
    together), and `OBJECT_LIMITS`."""
    budget = int(memory_mb) << 20
    return {
        "kernel/shmmax": str(budget),
        "kernel/shmall": str(budget // os.sysconf("SC_PAGE_SIZE")),
        **OBJECT_LIMITS,
    }


class RunIPC:
    """The zygote's IPC namespace, bounded and cleared after each run (module docstring).
    Made in the zygote's own IPC namespace only (clearing the host's would remove its
    objects); raises OSError where the limits cannot be set or mqueue cannot be mounted."""

    def __init__(self, memory_mb: int) -> None:
        self.limit(memory_mb)
        where = tempfile.mkdtemp(prefix="rewardsmith-mqueue-")
        try:
            _linux.mount("mqueue", where, "mqueue", _linux.MS_NOSUID | _linux.MS_NODEV, None)
            try:
                self.queues = os.open(where, os.O_RDONLY | os.O_DIRECTORY)
            finally:
                _linux.umount(where)  # detached: only our descriptor reaches it now
        finally:
            os.rmdir(where)
        self.libc = _linux.libc()

    def limit(self, memory_mb: int) -> None:
        """Bound what the namespace may hold (`sysctls`)."""
        for name, value in sysctls(memory_mb).items():
            fd = os.open(f"/proc/sys/{name}", os.O_WRONLY)
            try:
                os.write(fd, value.encode())
            finally:
                os.close(fd)

    def clear(self) -> int:
        """Remove every object in the namespace (the run's processes are gone); how many."""
        removed = 0
        for kind, remove in (
            ("shm", lambda i: self.libc.shmctl(i, IPC_RMID, None)),
            ("msg", lambda i: self.libc.msgctl(i, IPC_RMID, None)),
            ("sem", lambda i: self.libc.semctl(i, 0, IPC_RMID)),
        ):
            for ident in _ids(f"/proc/sysvipc/{kind}"):
                removed += remove(ctypes.c_int(ident)) == 0
        with contextlib.suppress(OSError):
            for name in os.listdir(self.queues):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=self.queues)
                    removed += 1
        return removed


def _ids(path: str) -> list[int]:
    """The ids (second column) of the objects listed in a /proc/sysvipc file."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    return [int(line.split()[1]) for line in lines if len(line.split()) > 1]
