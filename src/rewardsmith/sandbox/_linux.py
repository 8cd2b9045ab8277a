"""Thin ctypes wrappers over the Linux calls the sandbox needs and Python 3.11 lacks.

`unshare`, `mount` and `prctl` are called through libc; each returns False (or raises
OSError) instead of crashing when the kernel or the user's privileges refuse, so the caller
can fall back and report what it got. Nothing here runs untrusted code.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MNT_DETACH = 2
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_NAME = 15

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """unshare(2); raises OSError (EPERM, EINVAL...) when refused."""
    _check(libc().unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    """mount(2); raises OSError when refused."""
    ret = libc().mount(
        source.encode(),
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    _check(ret, f"mount {target}")


def umount(target: str) -> None:
    """umount2(2) with MNT_DETACH; raises OSError when refused."""
    _check(libc().umount2(target.encode(), ctypes.c_int(MNT_DETACH)), f"umount {target}")


def prctl(option: int, arg: int) -> None:
    """prctl(2) with one argument; raises OSError when refused."""
    _check(
        libc().prctl(
            ctypes.c_int(option),
            ctypes.c_ulong(arg),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        ),
        "prctl",
    )


def try_unshare(flags: int) -> bool:
    try:
        unshare(flags)
    except OSError:
        return False
    return True


def map_user_to_root(uid: int, gid: int) -> None:
    """Inside a fresh user namespace: map our uid/gid to 0 so mount/net namespaces work."""
    # The kernel refuses these writes once the namespace has been used; the order matters.
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"0 {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"0 {gid} 1")


def set_process_name(name: bytes) -> None:
    """The calling thread's name (`comm`, 15 bytes at most), as `ps` and /proc show it."""
    libc().prctl(ctypes.c_int(PR_SET_NAME), ctypes.c_char_p(name[:15]), 0, 0, 0)
