"""The minimal root a zygote's runs see: what Python needs, read-only, and nothing else.

Built once per zygote, in its own mount namespace, as a tmpfs that becomes `/` (pivot_root;
the host's root is detached, not just hidden), then made read-only:

| path | what | mode |
|---|---|---|
| Python's own paths | `sys.prefix`, `sys.base_prefix`, `sys.exec_prefix`, the interpreter's folder, every `sys.path` entry (the stdlib, the site-packages in use), the rewardsmith source | read-only binds |
| `/usr/bin`, `/usr/lib*`, `/bin`, `/lib*` | shared libraries the interpreter and extension modules load, and the commands subprocess-using code expects (`sh`, `sleep`); merged-/usr links are recreated as links | read-only binds |
| the time zone database | `zoneinfo`'s search path (`/usr/share/zoneinfo`) | read-only bind |
| `/etc/ld.so.cache` | where the dynamic loader finds shared libraries (extension modules imported in a run) | read-only bind (nothing else of `/etc`: no passwd, hosts, resolv.conf, ssl) |
| `read_only_paths` | what the caller adds (data a verifier needs) | read-only binds |
| `/dev` | `null`, `zero`, `full`, `random`, `urandom` (bound from the host), `fd`, `stdin`, `stdout`, `stderr` links, `shm` | tmpfs; `shm` private |
| `/tmp`, `/var/tmp`, `/dev/shm` | private tmpfs (`disk_mb` each), wiped after every run; a Python path under `/tmp` (a CI checkout) is bound back read-only inside | writable |
| `/proc` | the zygote's PID namespace's own | |
| `/run` | empty | read-only |

Everything else of the host (home folders, datasets, other checkouts, `/etc`, `/run` with
its sockets, `/sys`, `/var`) is absent. Binds are made from descriptors opened before the
tmpfs goes on (`/proc/self/fd/N`), so a source under `/tmp` still resolves; their read-only
remount keeps the flags a user namespace locks (nosuid, nodev, noexec, atime), so the same
code works as root and in an unprivileged user namespace.
"""

from __future__ import annotations

import contextlib
import os
import sys
import sysconfig
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.sandbox import _linux

# The private, writable tmpfs mounts inside the root; wiped after every run.
PRIVATE_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1"}
DEV_LINKS["stderr"] = "/proc/self/fd/2"
SYSTEM_DIRS = ("usr/bin", "usr/lib", "usr/lib32", "usr/lib64", "usr/libx32")
TOP_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
LOADER_CACHE = "/etc/ld.so.cache"
# Where the new root is mounted while it is built (in our mount namespace only).
BUILD_AT = "/tmp"
# The folder that holds the rewardsmith package (a checkout's src/, or site-packages).
SOURCE_ROOT = str(Path(__file__).resolve().parents[2])

# statvfs flags -> the mount flags a read-only remount must repeat (a user namespace locks
# them: dropping one is refused).
_KEPT_FLAGS = (
    (os.ST_NOSUID, _linux.MS_NOSUID),
    (os.ST_NODEV, _linux.MS_NODEV),
    (os.ST_NOEXEC, _linux.MS_NOEXEC),
    (os.ST_NOATIME, _linux.MS_NOATIME),
    (os.ST_NODIRATIME, _linux.MS_NODIRATIME),
    (os.ST_RELATIME, _linux.MS_RELATIME),
)


def python_paths() -> list[str]:
    """Every path the interpreter reads from: prefixes, its folder, `sys.path`, our source."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths.add(os.path.dirname(sys.executable))
    paths.add(os.path.dirname(os.path.realpath(sys.executable)))
    paths.update(p for p in sys.path if p)
    paths.add(SOURCE_ROOT)
    return sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})


def read_only_sources(extra: Sequence[str] = ()) -> list[str]:
    """Host paths bound read-only into the root, outermost only (a path inside another
    comes with it)."""
    wanted = [*python_paths(), *extra, LOADER_CACHE]
    wanted += ["/" + d for d in SYSTEM_DIRS]
    wanted += [f"/{d}" for d in TOP_LINKS if not os.path.islink(f"/{d}")]
    tzpath = sysconfig.get_config_var("TZPATH") or ""
    wanted += [p for p in tzpath.split(os.pathsep) if p]
    real = sorted({os.path.realpath(p) for p in wanted if os.path.exists(p)})
    return [p for p in real if not any(_inside(p, q) for q in real if q != p)]


def _inside(path: str, folder: str) -> bool:
    return folder == "/" or path.startswith(folder.rstrip("/") + "/")


def build(disk_mb: int, extra: Sequence[str] = ()) -> dict[str, Any]:
    """Build the root at `BUILD_AT` (our mount namespace must be private). Returns what the
    zygote needs later: `kept_tmp_paths` (host paths bound inside the private tmpfs, which
    the wipe after each run must skip) and `sources`."""
    sources = read_only_sources(extra)
    held = {p: os.open(p, os.O_PATH) for p in [*sources, *(f"/dev/{d}" for d in DEVICES)]}
    links = {f"/{d}": os.readlink(f"/{d}") for d in TOP_LINKS if os.path.islink(f"/{d}")}
    try:
        root = BUILD_AT
        _linux.mount("tmpfs", root, "tmpfs", _linux.MS_NOSUID | _linux.MS_NODEV, "mode=0755")
        for private in PRIVATE_TMP_DIRS:
            if private == "/dev/shm":
                _dev(root, held)
            target = root + private
            os.makedirs(target, exist_ok=True)
            flags = _linux.MS_NOSUID | _linux.MS_NODEV
            _linux.mount("tmpfs", target, "tmpfs", flags, f"size={disk_mb}m,mode=1777")
        for name, target in links.items():
            os.symlink(target, root + name)
        for path in ("/proc", "/run"):
            os.makedirs(root + path, exist_ok=True)
        for source in sources:
            _bind(held[source], root + source, read_only=True)
    finally:
        for fd in held.values():
            os.close(fd)
    kept = [s for s in sources if any(_inside(s, t) for t in PRIVATE_TMP_DIRS)]
    return {"kept_tmp_paths": kept, "sources": sources}


def _dev(root: str, held: dict[str, int]) -> None:
    dev = root + "/dev"
    os.makedirs(dev, exist_ok=True)
    flags = _linux.MS_NOSUID | _linux.MS_NOEXEC
    _linux.mount("tmpfs", dev, "tmpfs", flags, "size=64k,mode=0755")
    for name in DEVICES:
        _bind(held[f"/dev/{name}"], f"{dev}/{name}", read_only=False)
    for name, target in DEV_LINKS.items():
        os.symlink(target, f"{dev}/{name}")


def _bind(fd: int, target: str, read_only: bool) -> None:
    """Bind what `fd` holds (a folder, a file, a device) at `target`, read-only if asked."""
    source = f"/proc/self/fd/{fd}"
    is_dir = os.path.isdir(source)
    os.makedirs(target if is_dir else os.path.dirname(target), exist_ok=True)
    if not is_dir and not os.path.exists(target):
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    _linux.mount(source, target, None, _linux.MS_BIND | _linux.MS_REC, None)
    if read_only:
        for mount_point in [target, *_submounts(target)]:
            _remount_read_only(mount_point)


def _remount_read_only(path: str) -> None:
    kept = os.statvfs(path).f_flag
    flags = _linux.MS_REMOUNT | _linux.MS_BIND | _linux.MS_RDONLY | _linux.MS_NOSUID
    for st_flag, ms_flag in _KEPT_FLAGS:
        if kept & st_flag:
            flags |= ms_flag
    _linux.mount("none", path, None, flags, None)


def _submounts(path: str) -> Iterable[str]:
    """Mount points strictly under `path` (from /proc/self/mountinfo)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = _unescape(line.split()[4])
            if _inside(point, path) and point != path:
                yield point


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape") if "\\" in field else field


def enter() -> None:
    """Switch to the root built at `BUILD_AT`: mount our PID namespace's /proc in it (while
    the host's is still there, as a user namespace requires), pivot_root, detach the old
    root, make the new one read-only. Raises OSError, before switching, when /proc cannot be
    mounted (runs need it: their limits are set from /proc/self)."""
    root = BUILD_AT
    flags = _linux.MS_NOSUID | _linux.MS_NODEV | _linux.MS_NOEXEC
    _linux.mount("proc", root + "/proc", "proc", flags, None)
    os.chdir(root)
    _linux.pivot_root(".", ".")
    # The old root now sits on top of the new one at "/": take it away for good.
    _linux.umount(".")
    os.chdir("/")
    flags = _linux.MS_REMOUNT | _linux.MS_RDONLY | _linux.MS_NOSUID | _linux.MS_NODEV
    _linux.mount("none", "/", None, flags, None)


def private_tmp_fallback(disk_mb: int) -> list[str]:
    """Without a minimal root: cover /tmp, /var/tmp and /dev/shm with private tmpfs, binding
    back Python's paths under them (read-only); returns those paths."""
    kept: list[str] = []
    for path in PRIVATE_TMP_DIRS:
        if os.path.isdir(path):
            kept += _cover(path, disk_mb)
    return kept


def _cover(path: str, disk_mb: int) -> list[str]:
    keep: list[str] = []
    for p in python_paths():
        if _inside(p, path) and not any(_inside(p, k) for k in keep):
            keep.append(p)
    held = [(entry, os.open(entry, os.O_PATH)) for entry in keep]
    try:
        flags = _linux.MS_NOSUID | _linux.MS_NODEV
        _linux.mount("tmpfs", path, "tmpfs", flags, f"size={disk_mb}m,mode=1777")
        for entry, fd in held:
            _bind(fd, entry, read_only=True)
    finally:
        for _, fd in held:
            with contextlib.suppress(OSError):
                os.close(fd)
    return keep
