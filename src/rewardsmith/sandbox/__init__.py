"""Run untrusted code (policy completions, generated reward functions) isolated and bounded.

    from rewardsmith.sandbox import Sandbox, SandboxLimits
    with Sandbox(workers=2) as box:
        result = box.run("print(sum(range(10)))", limits=SandboxLimits(wall_seconds=2))
        result.status, result.stdout      # ('ok', '45\\n')

What is covered
---------------
Every run happens in a fresh process forked from a warm zygote (`worker.py`), never in the
caller. The run gets: its own session and process group; rlimits on CPU time, address space,
file size, open files, process count (threads included) and core dumps; one memory and
process budget for all of its processes (a cgroup per zygote, `budget.py`: v2, v1, or, where
neither can be made, the rlimits alone with a logged warning); a deadline that does not count
time spent waiting for a CPU, after which every process of the run is killed; an empty
temporary working directory, removed afterwards; an environment with nothing of the caller's
(`PATH`, `LANG`, `HOME` only); stdout/stderr captured through pipes and clipped. Where Linux
allows it (root, or unprivileged user namespaces), the zygote also lives in new PID,
network, mount and IPC namespaces: no network at all (a down loopback only), a minimal
read-only root with nothing of the host but what Python needs (`rootfs.py`: pivot_root), a
private /tmp, /var/tmp and /dev/shm wiped after each run, a /proc that shows only the
sandbox, and every leftover process (daemons, fork bombs) killed after each run because the
zygote is PID 1 of its namespace. As root, runs drop to an unprivileged uid of their own with
no_new_privs; in a user namespace they give up every capability. The zygote is not dumpable.
Whatever the kernel refuses is skipped; `Sandbox.isolation` reports what each zygote
achieved. Every run returns an `ExecutionResult` (status `ok`, `failed`, `timeout`,
`memory`, `killed` or `error`); nothing raises into the caller, and the caller waits at most
the stretched deadline plus a short grace period.

Nothing a run creates outlives it: its processes are killed, its files wiped, every IPC
object in the zygote's namespace removed (`ipc.py`), and the kernel keyring is refused
(seccomp). Test verdicts are not decided in the program's process: a test's calls into the
program report their values as plain data (`plain.py`), and the caller, or a judge run that
never held the program (`judge.py`), compares them; the test's own statements run in a judge
too, and neither they nor the expected side enter the program's process (see `harness.py`
and `rewardsmith.tools.code.plan`).

What is not covered
-------------------
Kernel exploits and privilege escalation bugs; side channels (timing, cache, Spectre);
resources nothing here bounds (kernel memory beyond the cgroup's accounting, disk bandwidth,
CPU contention with the host); tests that cannot be decomposed into calls and a check, which
run in the program's process and whose verdict it can fake (counted by the `code` tool); and,
without namespaces (a non-root user on a kernel that forbids user namespaces), the network,
the minimal root and private /tmp, and without root or a delegated cgroup, the per-run
budget. Python-level checks (the reward-code policy) raise the bar but are not a boundary.
For hostile workloads run rewardsmith itself inside a container with seccomp
(Docker/Podman with `--network none --pids-limit --memory`), under gVisor (`runsc`) or in a
microVM (Firecracker), or send code to a remote sandbox service (e.g. SandboxFusion).

The 4-stage admission check for generated reward functions is `check_reward_code`
(`probe.py`, `policy.py`). `process.py` is the worker-process core that the zygote pool and
the reward tools' verifier pools share (a fresh interpreter, length-prefixed JSON both ways,
never pickle). Nothing in this package imports the rest of rewardsmith.
"""

from rewardsmith.sandbox.pool import (
    EXEC_STATUSES,
    ExecStatus,
    ExecutionResult,
    Sandbox,
    SandboxLimits,
    default_sandbox,
)
from rewardsmith.sandbox.probe import CheckReport, StageResult, check_reward_code

__all__ = [
    "EXEC_STATUSES",
    "CheckReport",
    "ExecStatus",
    "ExecutionResult",
    "Sandbox",
    "SandboxLimits",
    "StageResult",
    "check_reward_code",
    "default_sandbox",
]
