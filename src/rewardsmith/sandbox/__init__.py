"""Run untrusted code (policy completions, generated reward functions) isolated and bounded.

    from rewardsmith.sandbox import Sandbox, SandboxLimits
    with Sandbox(workers=2) as box:
        result = box.run("print(sum(range(10)))", limits=SandboxLimits(wall_seconds=2))
        result.status, result.stdout      # ('ok', '45\\n')

What is covered
---------------
Every run happens in a fresh process forked from a warm zygote (`worker.py`), never in the
caller. The run gets: its own session and process group; rlimits on CPU time, address space,
file size, open files, process count (threads included) and core dumps; a wall-clock
deadline after which every process of the run is killed; an empty temporary working
directory, removed afterwards; an environment with nothing of the caller's (`PATH`, `LANG`,
`HOME` only); stdout/stderr captured through pipes and clipped. Where Linux allows it (root,
or unprivileged user namespaces), the zygote also lives in new PID, network, mount and IPC
namespaces: no network at all (a down loopback only, so not even 127.0.0.1 of the host),
private tmpfs on /tmp, /var/tmp and /dev/shm wiped after each run, a /proc that shows only
the sandbox, and every leftover process (daemons, fork bombs) killed after each run because
the zygote is PID 1 of its namespace. As root, runs also drop to an unprivileged uid of
their own with no_new_privs, so host files are protected by ordinary permissions and
RLIMIT_NPROC is enforced. Whatever the kernel refuses is skipped; `Sandbox.isolation`
reports what each zygote achieved. Every run returns an `ExecutionResult` (status `ok`,
`failed`, `timeout`, `memory`, `killed` or `error`); nothing raises into the caller, and the
caller waits at most the wall-clock limit plus a short grace period.

What is not covered
-------------------
Kernel exploits and privilege escalation bugs; side channels (timing, cache, Spectre);
resource exhaustion the rlimits do not bound (kernel memory, disk bandwidth, CPU contention
with the host); reading world-readable host files (the filesystem is not hidden, only
/tmp-like directories are private); and, without namespaces (a non-root user on a kernel that
forbids user namespaces), the network and private /tmp (leftover processes are still found
and killed: the zygote is then a child subreaper). Python-level checks (the reward-code
policy, the test harness) raise the bar but are not a boundary: code that introspects the
interpreter can forge an in-process harness's records (see `harness.py`). For hostile workloads run rewardsmith itself inside a
container with seccomp (Docker/Podman with `--network none --pids-limit --memory`), under
gVisor (`runsc`) or in a microVM (Firecracker), or send code to a remote sandbox service
(e.g. SandboxFusion).

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
