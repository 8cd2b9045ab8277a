# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""Attacks on the host and on other runs: files, sockets, memory across processes, signals,
/proc, imports. A run sees a minimal read-only root (`rewardsmith.sandbox.rootfs`), shares
one memory budget across its processes (`rewardsmith.sandbox.budget`) and nothing of
another run."""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import LIMITS, box, leftover_processes, unique_marker  # noqa: F401

from rewardsmith.sandbox import Sandbox
from rewardsmith.sandbox.rootfs import python_paths

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def _needs_minimal_root(box: Sandbox) -> None:
    if not box.isolation.get("minimal_root"):
        pytest.skip(
            f"no minimal root here: {box.isolation.get('root_error', 'no mount namespace')}"
        )


# -- class 3: the host's filesystem ------------------------------------------------------------


def test_host_files_outside_pythons_paths_are_not_there(box: Sandbox, tmp_path: Path) -> None:
    _needs_minimal_root(box)
    secret = tmp_path / "hidden-test-file.txt"  # world-readable, on the host
    secret.write_text("hidden tests")
    secret.chmod(0o644)
    wanted = [
        str(secret),
        "/etc/passwd",
        "/etc/hostname",
        "/etc/hosts",
        "/root/.bashrc",
        "/home",
        "/var/lib",
        "/sys/kernel",
        str(REPO_ROOT / "pyproject.toml"),
    ]
    if SHARED_DATA.exists():
        wanted.append(str(SHARED_DATA))
    code = f"""
import os
seen = [p for p in {wanted!r} if os.path.exists(p)]
print(seen)
"""
    result = box.run(code)
    assert result.status == "ok", result
    assert result.stdout == "[]\n"


def test_the_root_holds_only_what_python_needs(box: Sandbox) -> None:
    _needs_minimal_root(box)
    code = "import json, os\nprint(json.dumps([sorted(os.listdir(p)) for p in ('/', '/etc')]))"
    top, etc = json.loads(box.run(code).stdout)
    python_tops = {p.strip("/").split("/")[0] for p in python_paths()}
    allowed = {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "dev",
        "proc",
        "tmp",
        "var",
        "run",
        "etc",
        *python_tops,
    }
    assert set(top) <= allowed, set(top) - allowed
    assert etc == ["ld.so.cache"]


def test_writing_anywhere_but_tmp_fails_and_nothing_persists(box: Sandbox) -> None:
    _needs_minimal_root(box)
    marker = f"rs-written-{unique_marker()}"
    targets = ["/", "/run", "/run/lock", "/var/lock", "/usr/lib", "/etc", *python_paths()]
    code = f"""
import os
written = []
for folder in {targets!r}:
    try:
        with open(os.path.join(folder, {marker!r}), 'w') as f:
            f.write('x')
        written.append(folder)
    except OSError:
        pass
for folder in ('/tmp', '/var/tmp', '/dev/shm'):
    open(os.path.join(folder, {marker!r}), 'w').write('x')
print(written)
"""
    result = box.run(code)
    assert result.stdout == "[]\n", result
    for folder in ("/run/lock", "/var/lock", "/tmp", "/var/tmp", "/dev/shm", *python_paths()):
        assert not os.path.exists(os.path.join(folder, marker)), folder
    # Nor does the next run on either zygote see the private /tmp files.
    look = f"import os\nprint([p for p in ('/tmp', '/var/tmp', '/dev/shm') if {marker!r} in os.listdir(p)])"
    assert [r.stdout for r in box.map([{"mode": "exec", "source": look}] * 2)] == ["[]\n"] * 2


def test_a_nested_user_namespace_cannot_take_the_view_apart(box: Sandbox) -> None:
    # A new user and mount namespace gives the run capabilities over a copy of its mounts,
    # but mounts inherited from the zygote are locked: no unmount reveals what is beneath,
    # no remount makes the root writable.
    _needs_minimal_root(box)
    code = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
entered = libc.unshare(0x10000000 | 0x00020000) == 0  # CLONE_NEWUSER | CLONE_NEWNS
results = []
if entered:
    for target in (b'/tmp', b'/usr/lib', b'/proc', b'/'):
        results.append(libc.umount2(target, 2) == 0)  # MNT_DETACH
    results.append(libc.mount(b'none', b'/', None, 32 | 4096, None) == 0)  # remount rw
    try:
        open('/rs-root-written', 'w')
        results.append(True)
    except OSError:
        results.append(False)
print(entered, any(results), sorted(os.listdir('/')))
"""
    result = box.run(code)
    assert result.status == "ok", result
    _, changed, _ = result.stdout.split(" ", 2)
    assert changed == "False", result.stdout


# -- class 4: host UNIX sockets ------------------------------------------------------------------


@pytest.fixture
def host_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = tmp_path / "host.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        os.chmod(path, 0o777)
        listener.listen(1)
        listener.settimeout(0.5)
        yield listener, str(path)


def test_a_host_unix_socket_at_a_path_is_unreachable(
    box: Sandbox, host_socket: tuple[socket.socket, str]
) -> None:
    _needs_minimal_root(box)
    listener, path = host_socket
    code = f"""
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({path!r})
    s.sendall(b'stolen')
    print('connected')
except OSError as e:
    print(type(e).__name__)
"""
    result = box.run(code)
    assert result.stdout == "FileNotFoundError\n", result
    with pytest.raises(TimeoutError):
        listener.accept()


def test_a_host_abstract_unix_socket_is_unreachable(box: Sandbox) -> None:
    if not box.isolation.get("net_ns"):
        pytest.skip("no network namespace here")
    name = f"\0rewardsmith-test-{unique_marker()}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(name)
        listener.listen(1)
        listener.settimeout(0.5)
        code = f"""
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect({name!r})
    print('connected')
except OSError as e:
    print(type(e).__name__)
"""
        result = box.run(code)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert result.stdout == "ConnectionRefusedError\n", result


# -- class 5: memory across processes ---------------------------------------------------------


def test_memory_spread_over_processes_hits_the_runs_budget(box: Sandbox) -> None:
    # Six processes of 120 MB each stay under the per-process limit (256 MB) but not under
    # the run's: the whole run ends with status `memory`.
    kind = box.isolation.get("budget", {}).get("kind")
    if kind not in ("cgroup1", "cgroup2"):
        pytest.skip(f"no cgroup for a run budget here ({kind}): memory is per process")
    code = """
import os, time
children = []
for _ in range(6):
    pid = os.fork()
    if pid == 0:
        block = bytearray(120 * 1024 * 1024)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(5)
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print('all held')
"""
    result = box.run(code)
    assert result.status == "memory", result
    assert "whole run" in result.reason and "all held" not in result.stdout
    assert leftover_processes(box.worker_pids()) == []
    assert box.run("print(1)").stdout == "1\n"


# -- other runs, the zygote, imports ----------------------------------------------------------


def test_another_runs_files_and_pipes_are_out_of_reach(box: Sandbox) -> None:
    # Two runs at once, on the two zygotes: the second looks for the first's files (in /tmp,
    # in its working directory) and for pipes or files of any process it can see.
    marker = unique_marker()
    holder = f"""
import time
open('/tmp/{marker}', 'w').write('mine')
open('{marker}', 'w').write('mine')
time.sleep(1.0)
print('intact', open('/tmp/{marker}').read(), open('{marker}').read())
"""
    intruder = f"""
import os, time
time.sleep(0.3)
found = []
for root, dirs, files in os.walk('/tmp'):
    found += [os.path.join(root, f) for f in files if '{marker}' in f]
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        links = [os.readlink(f'/proc/{{pid}}/fd/{{fd}}') for fd in os.listdir(f'/proc/{{pid}}/fd')]
    except OSError:
        continue
    found += [link for link in links if '{marker}' in link]
print(found)
"""
    first, second = box.map([{"mode": "exec", "source": s} for s in (holder, intruder)])
    assert first.status == "ok" and first.stdout == "intact mine mine\n", first
    assert second.stdout == "[]\n", second


def test_signals_cannot_reach_a_sibling_run(box: Sandbox) -> None:
    # While one run sleeps, a run on the other zygote signals every pid it can name: its
    # own namespace's, and the first thousands of the host's.
    sleeper = "import time\ntime.sleep(1.0)\nprint('alive')\n"
    killer = """
import os, signal, time
time.sleep(0.3)
for pid in range(2, 5000):
    if pid not in (os.getpid(), os.getppid()):
        for sig in (signal.SIGKILL, signal.SIGSTOP):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
"""
    first, _ = box.map([{"mode": "exec", "source": s} for s in (sleeper, killer)])
    assert first.status == "ok" and first.stdout == "alive\n", first
    assert box.run("print(1)").stdout == "1\n"


def test_import_poisoning_does_not_outlive_the_run() -> None:
    # One zygote, two runs: the first poisons every place an import could come from.
    poison = """
import builtins, os, sys
class Hook:
    def find_spec(self, name, path=None, target=None):
        raise ImportError('poisoned')
sys.meta_path.insert(0, Hook())
sys.modules['json'] = None
builtins.len = lambda x: 0
for folder in [os.getcwd(), os.environ['HOME'], '/tmp', *sys.path]:
    for name in ('json.py', 'sitecustomize.py', 'usercustomize.py', 'poison.pth'):
        try:
            open(os.path.join(folder or '.', name), 'w').write('raise SystemExit(3)\\n')
        except OSError:
            pass
"""
    check = "import json, math\nprint(json.dumps([len('ab'), math.floor(2.5)]))"
    with Sandbox(workers=1, limits=LIMITS) as sandbox:
        sandbox.run(poison)
        result = sandbox.run(check)
    assert result.status == "ok" and result.stdout == "[2, 2]\n", result
    for folder in python_paths():
        with contextlib.suppress(OSError):
            assert "poison.pth" not in os.listdir(folder)
