"""Limits, fixtures and checks shared by the sandbox tests (a module, not a conftest.py, so
it does not shadow tests/conftest.py): test modules import the fixtures they use."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from rewardsmith.sandbox import Sandbox, SandboxLimits
from rewardsmith.sandbox.child import READY_NAME
from rewardsmith.sandbox.worker import SANDBOX_UID_BASE
from rewardsmith.tools.code import CodeTool
from rewardsmith.types import ToolSpec

# Short limits keep the attack suite fast; every attack must end within them.
LIMITS = SandboxLimits(wall_seconds=2.0, cpu_seconds=2.0, memory_mb=256, output_bytes=10_000)
# How long past its limit a run may take to come back (kill, reap, clean up, answer).
GRACE = 3.0


@pytest.fixture(scope="module")
def box() -> Iterator[Sandbox]:
    sandbox = Sandbox(workers=2, limits=LIMITS)
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def code_tool() -> Iterator[CodeTool]:
    tool = CodeTool(ToolSpec(name="code", kind="code"), timeout=2.0, memory_mb=256)
    yield tool
    tool.close()


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


def sandbox_processes(marker: str | None = None, settle: float = 1.0) -> list[str]:
    """Live host processes owned by a sandbox uid, or whose command line contains `marker`,
    except the children a zygote prepared for its next run (named `rs-ready`, at most one per
    zygote, checked).

    Processes killed at the end of a run may take a moment to die, and their zombies are
    collected by the zygote after its next run, so dead ones are skipped and live ones get
    `settle` seconds to go.
    """
    deadline = time.monotonic() + settle
    while True:
        found = _sandbox_processes(marker)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def _sandbox_processes(marker: str | None) -> list[str]:
    found = []
    prepared: dict[int, int] = {}  # zygote pid -> prepared children
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                status = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        uid = int(status.split("Uid:")[1].split()[0])
        if status.split("State:")[1].split()[0] in ("Z", "X"):
            continue
        if status.split("Name:")[1].split()[0] == READY_NAME.decode():
            parent = int(status.split("PPid:")[1].split()[0])
            prepared[parent] = prepared.get(parent, 0) + 1
            if prepared[parent] == 1:
                continue
        if uid >= SANDBOX_UID_BASE or (marker is not None and marker in cmdline):
            found.append(f"{entry} uid={uid} {cmdline[:80]}")
    return found
