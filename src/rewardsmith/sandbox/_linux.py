"""Thin ctypes wrappers over the Linux calls the sandbox needs and Python 3.11 lacks.

`unshare`, `mount`, `pivot_root`, `prctl`, `capset` and a seccomp filter (`deny_keyrings`)
are called through libc; each raises
OSError (or returns False) instead of crashing when the kernel or the user's privileges
refuse, so the caller can fall back and report what it got. Nothing here runs untrusted code.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NAME = 15
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# securebits: uid 0 gets no capabilities from execve or setuid, for good (locked).
SECURE_NOROOT_ALL = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_CAP_VERSION_3 = 0x20080522
# pivot_root has no libc wrapper; its syscall number by architecture.
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "ppc64le": 203, "s390x": 217}

# The kernel keyring's system calls (add_key, request_key, keyctl) by architecture, with the
# audit architecture a seccomp filter sees: keys are kept per uid (and user namespace), not
# per process, so a key one run stores would be there for the next run of the same zygote.
_KEYRING_SYSCALLS = {
    "x86_64": (0xC000003E, (248, 249, 250)),
    "aarch64": (0xC00000B7, (217, 218, 219)),
    "arm64": (0xC00000B7, (217, 218, 219)),
}
# x86_64's x32 ABI: the same calls with this bit set in their number.
_X32_SYSCALL_BIT = 0x40000000
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_ERRNO = 0x00050000
_EPERM = 1

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


def pivot_root(new_root: str, put_old: str) -> None:
    """pivot_root(2); raises OSError when refused (or unknown on this architecture)."""
    number = _SYS_PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(38, f"pivot_root: unknown syscall number on {platform.machine()}")
    ret = libc().syscall(ctypes.c_long(number), new_root.encode(), put_old.encode())
    _check(ret, "pivot_root")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """Give up every capability for good, keeping the uid: what uid 0 inside a user
    namespace must do before running untrusted code (it would otherwise hold CAP_SYS_ADMIN
    over the namespace's mounts). Securebits stop execve from giving them back."""
    prctl(PR_SET_SECUREBITS, SECURE_NOROOT_ALL)
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last = int(f.read())
    except OSError:
        last = 63
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    libc().prctl(ctypes.c_int(PR_CAP_AMBIENT), ctypes.c_ulong(PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc().capset(ctypes.byref(header), data), "capset")


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def deny_keyrings() -> None:
    """Install a seccomp filter, inherited by every process forked after it and never
    removable, under which the kernel keyring calls fail with EPERM, and so does every
    system call of another ABI (x32, i386 on x86_64), through which they could be reached.
    Needs `PR_SET_NO_NEW_PRIVS` (or CAP_SYS_ADMIN); raises OSError where refused or where
    the architecture is not known here."""
    machine = platform.machine()
    if machine not in _KEYRING_SYSCALLS:
        raise OSError(38, f"seccomp: keyring system calls unknown on {machine}")
    arch, calls = _KEYRING_SYSCALLS[machine]
    ld_abs, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, JGE, BPF_RET|K
    deny = _SECCOMP_RET_ERRNO | _EPERM
    # seccomp_data: nr at offset 0, arch at offset 4. Each jump counts instructions to skip.
    program = [
        (ld_abs, 0, 0, 4),
        (jeq, 1, 0, arch),  # the native ABI: go on; any other: denied
        (ret, 0, 0, deny),
        (ld_abs, 0, 0, 0),
        (jge, len(calls) + 1, 0, _X32_SYSCALL_BIT),
        *((jeq, len(calls) - i, 0, nr) for i, nr in enumerate(calls)),
        (ret, 0, 0, _SECCOMP_RET_ALLOW),
        (ret, 0, 0, deny),
    ]
    filters = (_SockFilter * len(program))(*(_SockFilter(*op) for op in program))
    fprog = _SockFprog(len(program), filters)
    ret_code = libc().prctl(
        ctypes.c_int(PR_SET_SECCOMP),
        ctypes.c_ulong(SECCOMP_MODE_FILTER),
        ctypes.byref(fprog),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )
    _check(ret_code, "seccomp")


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
