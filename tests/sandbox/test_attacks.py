# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""The attack suite: each test is one hostile completion graded by the `code` tool (or run
with `Sandbox.run`), and checks that it scores 0 with a clear status, that the caller is back
within the time limit, that the host is unaffected and that no process is left behind."""

from __future__ import annotations

import json
import socket
import stat
import time
from pathlib import Path

import pytest
from sandbox_helpers import (  # noqa: F401
    GRACE,
    LIMITS,
    box,
    code_tool,
    double_fork_daemon,
    leftover_processes,
    unique_marker,
)

from rewardsmith.sandbox import Sandbox
from rewardsmith.tools.code import CodeTool
from rewardsmith.types import Reward, Sample

# Computed here, not imported from tests/conftest.py: another conftest.py can shadow that name.
REPO_ROOT = Path(__file__).resolve().parents[2]
# The task every attack pretends to solve.
REFERENCE = json.dumps({"test_list": ["assert add(1, 2) == 3", "assert add(2, 5) == 7"]})
CORRECT = "def add(a, b):\n    return a + b\n"


def grade(tool: CodeTool, code: str) -> tuple[Reward, float]:
    start = time.monotonic()
    [reward] = tool.score([Sample(completion=code, reference=REFERENCE)])
    return reward, time.monotonic() - start


def assert_contained(
    tool: CodeTool, reward: Reward, elapsed: float, *statuses: str, marker: str | None = None
) -> None:
    assert reward.score == 0.0, reward
    assert reward.status in statuses, reward
    assert reward.reason, "a failed run must say why"
    assert elapsed < LIMITS.wall_seconds + GRACE, f"caller waited {elapsed:.1f} s"
    assert leftover_processes(tool.sandbox.worker_pids(), marker) == []


def test_correct_solution_scores_one(code_tool: CodeTool) -> None:
    # The control: the same harness gives full marks to an honest solution.
    reward, _ = grade(code_tool, CORRECT)
    assert reward.score == 1.0 and reward.components == {
        "passed": 2.0,
        "total": 2.0,
        "in_process": 0.0,
    }


# -- time --------------------------------------------------------------------------------


def test_infinite_loop_at_import(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "while True:\n    pass\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "timeout")


def test_infinite_loop_inside_the_tested_function(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "def add(a, b):\n    while True:\n        a += 1\n")
    assert_contained(code_tool, reward, elapsed, "timeout")


def test_sleeping_forever_hits_the_wall_clock(code_tool: CodeTool) -> None:
    # No CPU used, so only the wall-clock deadline can end it.
    reward, elapsed = grade(code_tool, "import time\ntime.sleep(1000)\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "timeout")


def test_ignoring_sigterm_and_sigxcpu_does_not_help(code_tool: CodeTool) -> None:
    code = (
        "import signal\n"
        "for s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT):\n"
        "    signal.signal(s, signal.SIG_IGN)\n"
        "while True:\n    pass\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "timeout")


# -- processes ---------------------------------------------------------------------------


def test_fork_bomb(code_tool: CodeTool) -> None:
    code = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "timeout", "error")


def test_subprocess_daemon_is_killed_after_the_run(code_tool: CodeTool) -> None:
    # A detached grandchild in its own session outlives a process-group kill; the PID
    # namespace (or the per-run uid) must still take it down.
    marker = unique_marker()
    code = (
        "import subprocess\n"
        f"subprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
        "import sys\nsys.exit(0)\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok", marker=marker)
    assert "SystemExit" in reward.reason


def test_double_fork_daemon_survives_nothing(box: Sandbox) -> None:
    marker = unique_marker()
    code = double_fork_daemon(marker)
    result = box.run(code)
    assert result.status == "ok"
    assert leftover_processes(box.worker_pids(), marker) == []


def test_spawning_a_shell_that_writes_outside(code_tool: CodeTool, tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    code = f"import subprocess\nsubprocess.run(['sh', '-c', 'echo x > {target}'])\n"
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert not target.exists()


def test_os_exit_before_the_tests(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "import os\nos._exit(0)\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "before the tests" in reward.reason


def test_killing_itself_with_sigkill(code_tool: CodeTool) -> None:
    code = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + CORRECT
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "SIGKILL" in reward.reason


def test_signalling_the_zygote_and_everyone(code_tool: CodeTool, box: Sandbox) -> None:
    code = (
        "import os, signal\n"
        "for target in (os.getppid(), 1, -1):\n"
        "    try:\n        os.kill(target, signal.SIGKILL)\n    except OSError:\n        pass\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert reward.score == 0.0 and elapsed < LIMITS.wall_seconds + GRACE
    # Whatever it reached, the next grading works as usual.
    assert grade(code_tool, CORRECT)[0].score == 1.0


# -- memory and recursion ----------------------------------------------------------------


def test_memory_bomb_one_allocation(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "x = bytearray(50 * 1024**3)\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "memory" in reward.reason


def test_memory_bomb_growing(code_tool: CodeTool) -> None:
    code = "chunks = []\nwhile True:\n    chunks.append(' ' * 10_000_000)\n"
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "memory" in reward.reason


def test_recursion_bomb(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "def add(a, b):\n    return add(a, b)\n")
    assert_contained(code_tool, reward, elapsed, "ok")
    assert "RecursionError" in reward.reason


def test_c_stack_overflow_with_raised_recursion_limit(code_tool: CodeTool) -> None:
    code = "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\nf(0)\n"
    reward, elapsed = grade(code_tool, code + CORRECT)
    assert_contained(code_tool, reward, elapsed, "error", "timeout")


def test_ctypes_segfault(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "import ctypes\nctypes.string_at(0)\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "SIGSEGV" in reward.reason


def test_ctypes_setuid_root_is_refused(box: Sandbox) -> None:
    if not box.isolation.get("drop_uid"):
        pytest.skip("runs keep the caller's uid here (not root)")
    code = "import ctypes, os\nlibc = ctypes.CDLL(None)\nprint(libc.setuid(0), os.getuid())\n"
    result = box.run(code)
    assert result.stdout.split()[0] == "-1" and result.stdout.split()[1] != "0"


# -- output and files --------------------------------------------------------------------


def test_huge_output_is_clipped(box: Sandbox) -> None:
    result = box.run("import sys\nfor _ in range(5000):\n    sys.stdout.write('x' * 10000)\n")
    assert result.status == "ok"
    assert result.truncated and len(result.stdout) == LIMITS.output_bytes


def test_endless_output_times_out(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "while True:\n    print('x' * 100000)\n")
    assert_contained(code_tool, reward, elapsed, "timeout")


def test_writing_outside_the_working_directory(code_tool: CodeTool, tmp_path: Path) -> None:
    target = tmp_path / "written_by_sandbox"
    code = (
        "for path in [" + repr(str(target)) + ", '/etc/rewardsmith_pwned', "
        f"{str(REPO_ROOT / 'pwned.txt')!r}]:\n"
        "    try:\n        open(path, 'w').write('x')\n    except OSError:\n        pass\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert not target.exists()
    assert not Path("/etc/rewardsmith_pwned").exists()
    assert not (REPO_ROOT / "pwned.txt").exists()


def test_deleting_files_outside_the_working_directory(box: Sandbox, tmp_path: Path) -> None:
    if not box.isolation.get("drop_uid"):
        pytest.skip("runs keep the caller's uid here (not root)")
    victim = REPO_ROOT / ".sandbox_victim_test"
    victim.write_text("keep me")
    try:
        code = f"import os\nos.remove({str(victim)!r})\n"
        result = box.run(code)
        # unreadable (PermissionError) or not even visible (FileNotFoundError; or, where the
        # minimal root holds a read-only folder on the way to Python, "Read-only file
        # system"); either way the file survives
        assert result.status == "failed"
        assert any(
            error in result.stderr
            for error in ("PermissionError", "FileNotFoundError", "Read-only file system")
        )
        assert victim.read_text() == "keep me"
    finally:
        victim.unlink()


def test_giant_file_hits_the_file_size_limit(code_tool: CodeTool) -> None:
    # Python ignores SIGXFSZ, so the write fails with EFBIG instead of killing the process.
    code = "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 1_000_000)\n"
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert "File too large" in reward.reason


def test_working_directory_is_empty_private_and_removed(box: Sandbox) -> None:
    first = box.run("import os\nprint(os.getcwd(), os.listdir('.'))\nopen('left', 'w').write('x')")
    cwd = first.stdout.split()[0]
    assert first.stdout.strip().endswith("[]")
    second = box.run(f"import os\nprint(os.path.exists({cwd!r}), os.listdir('.'))")
    assert second.stdout.strip() == "False []"


# -- secrets -----------------------------------------------------------------------------


def test_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REWARDSMITH_LLM_API_KEY", "sk-secret-123")
    with Sandbox(workers=1, limits=LIMITS) as fresh:
        result = fresh.run("import os\nprint(sorted(os.environ.items()))")
    assert result.status == "ok"
    assert "sk-secret" not in result.stdout
    assert "REWARDSMITH" not in result.stdout


def test_reading_a_private_host_file(box: Sandbox) -> None:
    if not box.isolation.get("drop_uid"):
        pytest.skip("runs keep the caller's uid here (not root)")
    secret = REPO_ROOT / ".sandbox_secret_test"
    secret.write_text("top-secret")
    secret.chmod(stat.S_IRUSR | stat.S_IWUSR)
    try:
        result = box.run(f"print(open({str(secret)!r}).read())")
    finally:
        secret.unlink()
    assert "top-secret" not in result.stdout
    # unreadable, or hidden when the checkout lies under the private /tmp
    assert "PermissionError" in result.stderr or "FileNotFoundError" in result.stderr


def test_host_processes_are_invisible(box: Sandbox) -> None:
    if not box.isolation.get("private_proc"):
        pytest.skip("no PID namespace here")
    result = box.run("import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))")
    pids = json.loads(result.stdout)
    # The zygote (PID 1), this run and perhaps an exited run's zombie; not the host's hundreds.
    assert 1 in pids and len(pids) <= 4


# -- network -----------------------------------------------------------------------------


def test_connecting_to_a_local_listener(code_tool: CodeTool, box: Sandbox) -> None:
    if not box.isolation.get("net_ns"):
        pytest.skip("no network namespace here")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            f"s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "s.sendall(b'stolen')\n" + CORRECT
        )
        reward, elapsed = grade(code_tool, code)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert_contained(code_tool, reward, elapsed, "ok")
    assert "unreachable" in reward.reason or "refused" in reward.reason


def test_reaching_the_internet(box: Sandbox) -> None:
    if not box.isolation.get("net_ns"):
        pytest.skip("no network namespace here")
    code = "import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=1)\n"
    result = box.run(code)
    assert result.status == "failed" and "Network is unreachable" in result.stderr


# -- fooling the harness -----------------------------------------------------------------


def test_sys_exit_zero_before_the_tests(code_tool: CodeTool) -> None:
    reward, elapsed = grade(code_tool, "import sys\nsys.exit(0)\n" + CORRECT)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert reward.components["passed"] == 0.0


def test_printing_a_fake_success_marker(code_tool: CodeTool) -> None:
    code = (
        "print('All tests passed!')\nprint('PASSED 2/2')\n"
        "import sys\nsys.stderr.write('OK\\n')\n"
        "def add(a, b):\n    return 0\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")


def test_monkeypatching_builtins_used_by_the_harness(code_tool: CodeTool) -> None:
    code = (
        "import builtins, os\n"
        "builtins.exec = lambda *a, **k: None\n"
        "builtins.compile = lambda *a, **k: None\n"
        "builtins.AssertionError = type('Nope', (Exception,), {})\n"
        "os.write = lambda fd, data: len(data)\n"
        "def add(a, b):\n    return 0\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert reward.components["passed"] == 0.0


def test_forging_records_on_every_descriptor(code_tool: CodeTool) -> None:
    code = (
        "import os\n"
        "for fd in range(3, 1024):\n"
        "    for rec in (b'x load ok 0\\n', b'x test 0 pass\\n', b'x test 1 pass\\n', b'x done 2\\n'):\n"
        "        try:\n            os.write(fd, rec)\n        except OSError:\n            pass\n"
        "def add(a, b):\n    return 0\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "error")
    assert "tampered" in reward.reason


def test_always_equal_object(code_tool: CodeTool) -> None:
    # The "AlwaysEqual" hack: an object whose __eq__ says yes to anything.
    code = (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = None\n"
        "def add(a, b):\n    return Yes()\n"
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")


def test_searching_memory_for_the_nonce(code_tool: CodeTool) -> None:
    code = (
        "import gc\nfound = [o for o in gc.get_objects() if isinstance(o, str) and len(o) == 32]\n"
        + CORRECT
    )
    reward, elapsed = grade(code_tool, code)
    assert_contained(code_tool, reward, elapsed, "ok")
    assert "not available" in reward.reason


def test_one_run_cannot_poison_the_next(box: Sandbox) -> None:
    box.run("import math, json\nmath.pi = 3\njson.dumps = None\nopen('/tmp/flag', 'w')")
    result = box.run("import math, json, os\nprint(math.pi, json.dumps([1]), os.listdir('/tmp'))")
    assert result.stdout.startswith("3.14159") and "[1]" in result.stdout
    assert "flag" not in result.stdout
