"""How a zygote isolates itself, once, at start (its children inherit all of it).

`isolate` enters new PID, network, mount and IPC namespaces where the kernel allows them (as
root, or through an unprivileged user namespace), mounts private tmpfs on /tmp, /var/tmp and
/dev/shm, and, when runs will drop to another uid, makes the Python installation readable
for it while hiding the rest of a private home directory. `become_init` forks so that the
zygote is PID 1 of its namespace. Whatever the kernel refuses is skipped and reported in the
returned dict (`Sandbox.isolation`); see docs/sandbox.md for what each part gives.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from rewardsmith.sandbox import _linux

# Private tmpfs mounts; their contents are wiped after every run.
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
# The folder that holds the rewardsmith package (a checkout's src/, or site-packages).
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


def isolate(disk_mb: int, namespaces: bool = True) -> dict[str, Any]:
    """Enter what namespaces the kernel allows (none when `namespaces` is False); return
    what was achieved."""
    info: dict[str, Any] = {"root": os.geteuid() == 0, "user_ns": False}
    if not namespaces:
        info.update(pid_ns=False, net_ns=False, mount_ns=False, ipc_ns=False, private_tmp=False)
        info["drop_uid"] = info["root"] and _world_readable(_python_paths())
        return info
    if not info["root"]:
        uid, gid = os.getuid(), os.getgid()
        if _linux.try_unshare(_linux.CLONE_NEWUSER):
            try:
                _linux.map_user_to_root(uid, gid)
                info["user_ns"] = True
            except OSError as exc:
                info["user_ns_error"] = str(exc)
    for name, flag in (
        ("pid_ns", _linux.CLONE_NEWPID),
        ("net_ns", _linux.CLONE_NEWNET),
        ("mount_ns", _linux.CLONE_NEWNS),
        ("ipc_ns", _linux.CLONE_NEWIPC),
    ):
        info[name] = _linux.try_unshare(flag)
    info["private_tmp"] = False
    if info["mount_ns"]:
        try:
            _linux.mount("none", "/", None, _linux.MS_REC | _linux.MS_PRIVATE, None)
            kept: list[str] = []
            for path in PRIVATE_TMP_DIRS:
                if os.path.isdir(path):
                    kept += _private_tmp(path, disk_mb)
            info["private_tmp"] = True
            info["kept_tmp_paths"] = kept
        except OSError as exc:
            info["mount_error"] = str(exc)
    info["drop_uid"] = info["root"]
    if info["drop_uid"] and info["private_tmp"]:
        info["hidden_dirs"] = _expose_python()
    if info["drop_uid"] and not _world_readable(_python_paths()):
        # Python lives where another uid cannot read it and could not be exposed: keep
        # root rather than break every import (rlimits and namespaces still apply).
        info["drop_uid"] = False
    return info


def _private_tmp(path: str, disk_mb: int) -> list[str]:
    """Cover `path` with an empty tmpfs, keeping Python's own paths under it; return those.

    A checkout or virtualenv may live under /tmp (CI clones often do): hiding it would break
    every import in the sandbox. Each such path is held open (O_PATH) before the tmpfs goes
    on, then bound back read-only through /proc/self/fd, so only those paths reappear and
    sandboxed code cannot change them. The worker's cleanup between runs must skip them
    (`kept_tmp_paths`): they are the host's real files.
    """
    keep: list[str] = []
    # The zygote imports rewardsmith by path, not through sys.path (`process.bootstrap`),
    # and still imports from it after this (the preload).
    for p in sorted({*_python_paths(), str(_SOURCE_ROOT)}):
        if p.startswith(path + "/") and not any(p.startswith(k + "/") for k in keep):
            keep.append(p)
    held = [(entry, os.open(entry, os.O_PATH)) for entry in keep]
    try:
        _linux.mount(
            "tmpfs", path, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, f"size={disk_mb}m,mode=1777"
        )
        for entry, fd in held:
            os.makedirs(entry, exist_ok=True)
            _linux.mount(f"/proc/self/fd/{fd}", entry, None, _linux.MS_BIND | _linux.MS_REC, None)
            _linux.mount(
                "none",
                entry,
                None,
                _linux.MS_REMOUNT | _linux.MS_BIND | _linux.MS_RDONLY | _linux.MS_REC,
                None,
            )
    finally:
        for _, fd in held:
            os.close(fd)
    return keep


def _world_readable(paths: list[str]) -> bool:
    """Whether any uid can reach and read every path (each ancestor searchable)."""
    for path in paths:
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts) + 1):
            mode = os.stat("/" + "/".join(parts[:depth])).st_mode
            if not mode & 0o001 or (depth == len(parts) and not mode & 0o004):
                return False
    return True


def _python_paths() -> list[str]:
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p)
    return sorted(os.path.realpath(p) for p in paths if os.path.exists(p))


def _expose_python() -> list[str]:
    """Make the Python installation reachable for the unprivileged uid, hiding the rest.

    A Python under a private directory (pyenv in /root, mode 0700) cannot be read by the
    sandbox uid. In our mount namespace we cover such a directory with an empty tmpfs and
    bind back only the entries on Python's paths (/root/.pyenv), so imports work and the
    rest (/root/.ssh, tokens...) is hidden from sandboxed code.
    """
    covered: list[str] = []
    for path in _python_paths():
        parts = path.strip("/").split("/")
        for depth in range(1, len(parts)):
            parent = "/" + "/".join(parts[:depth])
            if parent in covered:
                break
            if os.stat(parent).st_mode & 0o001:
                continue
            keep = sorted(
                {
                    parent + "/" + q[len(parent) + 1 :].split("/")[0]
                    for q in _python_paths()
                    if q.startswith(parent + "/")
                }
            )
            try:
                staged = []
                for i, entry in enumerate(keep):
                    stage = f"/tmp/.rewardsmith-stage-{i}"
                    os.makedirs(stage, exist_ok=True)
                    _linux.mount(entry, stage, None, _linux.MS_BIND | _linux.MS_REC, None)
                    staged.append((entry, stage))
                _linux.mount("tmpfs", parent, "tmpfs", _linux.MS_NOSUID, "size=1m,mode=0755")
                for entry, stage in staged:
                    os.makedirs(entry, exist_ok=True)
                    _linux.mount(stage, entry, None, _linux.MS_BIND | _linux.MS_REC, None)
                    _linux.umount(stage)
                    os.rmdir(stage)
                covered.append(parent)
            except OSError:
                pass
            break
    return covered


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
    if info["mount_ns"]:
        try:
            _linux.mount(
                "proc", "/proc", "proc", _linux.MS_NOSUID | _linux.MS_NODEV | 8, None
            )  # 8 = MS_NOEXEC
            info["private_proc"] = True
        except OSError:
            info["private_proc"] = False
