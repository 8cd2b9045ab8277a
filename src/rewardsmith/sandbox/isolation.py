"""How a zygote isolates itself, once, at start (its children inherit all of it).

`isolate` enters new PID, network, mount and IPC namespaces where the kernel allows them (as
root, or through an unprivileged user namespace) and makes the run budget (`budget.py`: one
cgroup for every process of a run). `become_init` forks so that the zygote is PID 1 of its
namespace; `enter_view` then builds the minimal root (`rootfs.py`), mounts the namespace's
own /proc in it and switches to it. Whatever the kernel refuses is skipped and reported in
the returned dict (`Sandbox.isolation`); see docs/sandbox.md for what each part gives.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Sequence
from typing import Any

from rewardsmith.sandbox import _linux, budget, rootfs


def isolate(namespaces: bool, limits: dict[str, Any], name: str) -> tuple[dict[str, Any], Any]:
    """Enter what namespaces the kernel allows (none when `namespaces` is False) and make
    the run budget (cgroup `name`); return what was achieved, and the budget."""
    info: dict[str, Any] = {"root": os.geteuid() == 0, "user_ns": False}
    if not namespaces:
        info.update(pid_ns=False, net_ns=False, mount_ns=False, ipc_ns=False)
    else:
        if not info["root"]:
            uid, gid = os.getuid(), os.getgid()
            if _linux.try_unshare(_linux.CLONE_NEWUSER):
                try:
                    _linux.map_user_to_root(uid, gid)
                    info["user_ns"] = True
                except OSError as exc:
                    info["user_ns_error"] = str(exc)
        for key, flag in (
            ("pid_ns", _linux.CLONE_NEWPID),
            ("net_ns", _linux.CLONE_NEWNET),
            ("mount_ns", _linux.CLONE_NEWNS),
            ("ipc_ns", _linux.CLONE_NEWIPC),
        ):
            info[key] = _linux.try_unshare(flag)
        if info["mount_ns"]:
            try:
                _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE, None)
            except OSError as exc:
                info["mount_ns"] = False
                info["mount_error"] = str(exc)
    # Made here, in the host's PID namespace: stale cgroups are found by their dead pid.
    run_budget = budget.create(name, int(limits["memory_mb"]), int(limits["processes"]))
    info["budget"] = run_budget.info()
    return info, run_budget


def become_init(info: dict[str, Any], parent_pid: int) -> None:
    """With a new PID namespace, fork so the zygote is PID 1 in it; the stub waits.

    No PDEATHSIG towards the caller: it fires when the *thread* that started us exits, and
    callers start workers from pool threads. The zygote notices a dead caller by EOF on its
    job pipe instead, and exits, which ends its PID namespace.
    """
    if os.getppid() != parent_pid:
        os._exit(1)  # the caller died while we started
    if not info["pid_ns"]:
        return
    pid = os.fork()
    if pid:
        # The stub: when the pool kills it, the zygote (PDEATHSIG) and its namespace go too.
        for fd in range(3, 64):
            with contextlib.suppress(OSError):
                os.close(fd)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    with contextlib.suppress(OSError):
        _linux.prctl(_linux.PR_SET_PDEATHSIG, signal.SIGKILL)


def enter_view(info: dict[str, Any], disk_mb: int, extra_paths: Sequence[str]) -> None:
    """In the zygote (PID 1 where it could be): switch to the minimal root, or, where that
    fails, at least cover /tmp, /var/tmp and /dev/shm with private tmpfs."""
    info.update(minimal_root=False, private_tmp=False, private_proc=False, kept_tmp_paths=[])
    if not info["mount_ns"]:
        return
    try:
        built = rootfs.build(disk_mb, extra_paths)
        rootfs.enter()
        info.update(minimal_root=True, private_tmp=True, private_proc=True)
        info["kept_tmp_paths"] = built["kept_tmp_paths"]
        return
    except OSError as exc:
        info["root_error"] = str(exc)
        with contextlib.suppress(OSError):
            _linux.umount(rootfs.BUILD_AT)
    try:
        info["kept_tmp_paths"] = rootfs.private_tmp_fallback(disk_mb)
        info["private_tmp"] = True
    except OSError as exc:
        info["mount_error"] = str(exc)
    try:
        flags = _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC
        _linux.mount("proc", "/proc", "proc", flags, None)
        info["private_proc"] = True
    except OSError:
        pass


def world_readable(paths: Sequence[str]) -> bool:
    """Whether any uid can reach and read every path (each ancestor searchable)."""
    for path in paths:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            mode = os.stat("/" + "/".join(parts[:depth])).st_mode
            if not mode & 0o001 or (depth == len(parts) and not mode & 0o004):
                return False
    return True
