"""Limits, fixtures and checks shared by the sandbox tests (a module, not a conftest.py, so
it does not shadow tests/conftest.py): test modules import the fixtures they use."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from rewardsmith.sandbox import Sandbox, SandboxLimits
from rewardsmith.sandbox.child import READY_NAME
from rewardsmith.sandbox.worker import SANDBOX_UID_BASE
from rewardsmith.tools.code import CodeTool
from rewardsmith.types import ToolSpec

# Short limits keep the attack suite fast; every attack must end within them. No stretching
# of the wall-clock limit on a busy machine (`wall_stretch`, tested in test_limits.py): an
# attack ends at `wall_seconds` however loaded the machine is.
LIMITS = SandboxLimits(
    wall_seconds=2.0, wall_stretch=1.0, cpu_seconds=2.0, memory_mb=256, output_bytes=10_000
)
# How long past its limit a run may take to come back (kill, reap, clean up, answer).
GRACE = 3.0


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=2, limits=LIMITS)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def code_tool() -> Iterator[CodeTool]:
    tool = CodeTool(
        ToolSpec(name="code", kind="code"), timeout=2.0, memory_mb=256, wall_stretch=1.0
    )
    yield tool
    tool.close()


def unique_marker() -> str:
    """A number for `sleep` that no other test run on this machine uses: it finds this test's
    own leftover processes by their command line."""
    return f"{secrets.randbelow(9 * 10**8) + 10**8}.{secrets.randbelow(1000):03d}"


def double_fork_daemon(marker: str) -> str:
    """A program that leaves a daemon behind: fork, new session, fork again, exec
    `sleep MARKER` (the marker finds it in the process list), and return at once."""
    return (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execvp('sleep', ['sleep', '{marker}'])\n"
        "    os._exit(0)\n"
        "time.sleep(0.2)\n"
    )


def leftover_processes(
    zygotes: Iterable[int], marker: str | None = None, settle: float = 1.0
) -> list[str]:
    """Live processes left by the runs of these zygotes (host pids from
    `Sandbox.worker_pids()`, taken while they ran; a dead zygote's are still checked).

    Counted: every descendant of a zygote, every process of the uid its runs use (as root:
    `SANDBOX_UID_BASE + pid`), and every process whose command line has `marker`. Not
    counted: the zygotes themselves (with a PID namespace, a stub and its child) and the
    child each zygote prepared for its next run (named `rs-ready`, at most one per zygote).
    So other sandboxes on the machine (another test run beside this one) never count.

    Processes killed at the end of a run may take a moment to die, and their zombies are
    collected by the zygote after its next run, so dead ones are skipped and live ones get
    `settle` seconds to go.
    """
    roots = set(zygotes)
    deadline = time.monotonic() + settle
    while True:
        found = _leftovers(roots, marker)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _leftovers(roots: set[int], marker: str | None) -> list[str]:
    procs = _live_processes()
    children: dict[int, list[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc["ppid"], []).append(pid)
    exempt = set(roots)
    for root in roots:
        for child in children.get(root, []):
            # A PID namespace's zygote: the stub's fork, same command line, not a run (runs
            # are forks too, but named rs-ready / rs-run).
            same = procs[child]["cmdline"] == procs.get(root, {}).get("cmdline")
            if same and not procs[child]["name"].startswith("rs-"):
                exempt.add(child)
    for zygote in list(exempt):
        prepared = [c for c in children.get(zygote, []) if procs[c]["name"] == READY_NAME.decode()]
        exempt.update(prepared[:1])
    tree: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in tree:
                tree.add(child)
                stack.append(child)
    uids = {SANDBOX_UID_BASE + root for root in roots}
    return [
        f"{pid} uid={proc['uid']} {proc['cmdline'][:80]}"
        for pid, proc in sorted(procs.items())
        if pid not in exempt
        and (
            pid in tree or proc["uid"] in uids or (marker is not None and marker in proc["cmdline"])
        )
    ]


def _live_processes() -> dict[int, dict[str, Any]]:
    """pid -> name, parent, uid and command line of every live process but this one."""
    procs: dict[int, dict[str, Any]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if status["State"].split()[0] in ("Z", "X"):
            continue
        procs[int(entry)] = {
            "name": status["Name"].strip(),
            "ppid": int(status["PPid"]),
            "uid": int(status["Uid"].split()[0]),
            "cmdline": cmdline,
        }
    return procs
