"""What a run left behind, turned into the zygote's reply: captured output and a status.

`Capture` reads one of a run's pipes (stdout, stderr, the judge's result records) without
blocking and keeps at most a limit; `reply` names the outcome (`ok`, `failed`, `timeout`,
`memory`, `killed`, or `error` when the result records overflowed `channel_bytes`: output
is clipped and says so, records are never cut silently) from the wait status, the deadline,
the CPU used and the memory budget's OOM kills, with a reason a person can read.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from rewardsmith.sandbox.harness import channel_records

READ_CHUNK = 65536


class Capture:
    """Reads a pipe, keeping at most `limit` bytes (the rest is read and dropped)."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.parts: list[bytes] = []
        self.size = 0
        self.dropped = 0

    def read(self) -> bool:
        """Read what is there; False at end of file."""
        try:
            chunk = os.read(self.fd, READ_CHUNK)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        room = self.limit - self.size
        if room > 0:
            self.parts.append(chunk[:room])
            self.size += min(room, len(chunk))
        self.dropped += max(0, len(chunk) - max(room, 0))
        return True

    def text(self) -> str:
        return b"".join(self.parts).decode("utf-8", "replace")

    def exit_code(self, marker: bytes) -> int | None:
        """The code in a final `NONCE exit CODE` record, once it has arrived."""
        if not self.parts or not self.parts[-1].endswith(b"\n"):
            return None
        tail = self.parts[-1][-(len(marker) + 16) :]
        at = tail.rfind(marker)
        if at < 0:
            return None
        try:
            return int(tail[at + len(marker) :].split()[0])
        except (ValueError, IndexError):
            return None


def reply(
    status: int,
    timed_out: bool,
    cpu_used: float,
    duration: float,
    captures: dict[str, Capture],
    limits: dict[str, Any],
    nonce: str,
    oom: bool = False,
    budget_kind: str = "rlimit",
    stretched: float | None = None,
) -> dict[str, Any]:
    """The reply for a finished run: its status and reason from how it ended, its output.

    `oom`: the kernel killed a process of the run for its memory budget (`budget_kind`
    says which: a cgroup for the whole run, or rlimits per process); `stretched`: the
    deadline the run got, when waiting for a CPU moved it past `wall_seconds`."""
    channel = captures["res"].text()
    stderr = captures["err"].text()
    exit_code: int | None = None
    sig: int | None = None
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
    else:
        exit_code = os.WEXITSTATUS(status)
    cpu_limit = max(1, int(limits["cpu_seconds"] + 0.999))
    # The harness's own `memory` record, read as a record: a value the program reported
    # that merely contains the word (a function returning "low memory mode") is not one.
    memory = any(r is not None and r[0] == "memory" for r in channel_records(channel, nonce))
    memory = memory or stderr.rstrip().endswith("MemoryError")
    if captures["res"].dropped:
        state = "error"
        reason = (
            f"the run's result records exceeded the channel limit of {limits['channel_bytes']} "
            "bytes (SandboxLimits.channel_bytes): raise it or send smaller batches"
        )
    elif oom:
        state = "memory"
        reason = f"memory limit of {limits['memory_mb']} MB for the whole run ({budget_kind})"
    elif timed_out:
        state, reason = "timeout", f"wall-clock limit of {limits['wall_seconds']} s"
        if stretched is not None:
            reason += f" (stretched to {stretched:.1f} s while its processes waited for a CPU)"
    elif sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= cpu_limit):
        state, reason = "timeout", f"CPU time limit of {cpu_limit} s"
    elif memory:
        state, reason = "memory", f"memory limit of {limits['memory_mb']} MB"
    elif sig is not None:
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        state = "killed"
        reason = f"killed by {name}"
        if sig == signal.SIGXFSZ:
            reason += f" (file size limit of {limits['file_size_mb']} MB)"
    elif exit_code == 0:
        state, reason = "ok", ""
    else:
        state, reason = "failed", f"exit code {exit_code}"
    return {
        "status": state,
        "exit_code": exit_code,
        "signal": sig,
        "stdout": captures["out"].text(),
        "stderr": stderr,
        "channel": channel,
        "duration": duration,
        "cpu_seconds": cpu_used,
        "reason": reason,
        "truncated": captures["out"].dropped > 0 or captures["err"].dropped > 0,
    }
