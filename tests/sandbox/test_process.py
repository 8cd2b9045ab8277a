"""The worker-process core shared by the sandbox and the verifier pools: the framing (JSON,
never pickle, capped), deadlines from any thread, and a forked caller kept off the pipes."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.sandbox.process import FrameError, WorkerLost, WorkerProcess, recv, send

HERE = str(Path(__file__).resolve().parent)


def start(mode: str, **config: object) -> WorkerProcess:
    env = {**os.environ, "PYTHONPATH": HERE}
    return WorkerProcess("process_fixture", {"mode": mode, **config}, env=env)


@pytest.fixture
def echo() -> Iterator[WorkerProcess]:
    worker = start("echo")
    yield worker
    worker.kill()


def soon(seconds: float = 10.0) -> float:
    return time.monotonic() + seconds


def test_messages_go_both_ways_as_json(echo: WorkerProcess) -> None:
    for message in ({"a": [1, 2.5, None, True]}, "ünïcödé ✓", list(range(10_000)), 0):
        echo.send(message)
        assert echo.flush(soon())
        assert echo.receive(soon()) == {"echo": message, "pid": echo.pid}


def test_a_reply_is_awaited_from_any_thread(echo: WorkerProcess) -> None:
    got: list[object] = []

    def ask() -> None:
        echo.send("from a thread")
        echo.flush(soon())
        got.append(echo.receive(soon()))

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join(timeout=20)
    assert got == [{"echo": "from a thread", "pid": echo.pid}]


def test_a_silent_worker_costs_the_deadline_not_more() -> None:
    worker = start("silent")
    try:
        began = time.monotonic()
        with pytest.raises(TimeoutError):
            worker.receive(time.monotonic() + 0.3)
        assert time.monotonic() - began < 1.0
        assert worker.alive()
    finally:
        worker.kill()


def test_a_full_pipe_never_blocks_the_caller() -> None:
    worker = start("deaf")
    try:
        worker.send("x" * 1_000_000)  # more than a pipe holds: the rest waits in the outbox
        assert worker.sending
        began = time.monotonic()
        assert not worker.flush(time.monotonic() + 0.3)
        assert time.monotonic() - began < 1.0
    finally:
        worker.kill()


def test_stray_prints_in_the_worker_do_not_reach_the_caller() -> None:
    worker = start("noisy")
    try:
        assert worker.receive(soon()) == "after the noise"
    finally:
        worker.kill()


@pytest.mark.parametrize("mode", ["huge_header", "not_json"])
def test_a_worker_that_breaks_the_framing_is_lost(mode: str) -> None:
    worker = start(mode)
    try:
        with pytest.raises(WorkerLost):
            worker.receive(soon())
    finally:
        worker.kill()


def test_a_pickle_from_the_worker_is_never_unpickled(tmp_path: Path) -> None:
    # A worker that hostile input took over must not be able to run code in its reader.
    proof = tmp_path / "unpickled"
    worker = start("pickle", path=str(proof))
    try:
        with pytest.raises(WorkerLost):
            worker.receive(soon())
    finally:
        worker.kill()
    assert not proof.exists()


def test_end_of_file_ends_the_worker_and_is_reported(echo: WorkerProcess) -> None:
    echo.hang_up()
    with pytest.raises(WorkerLost):
        echo.receive(soon())
    echo.process.wait(timeout=10)
    assert echo.returncode == 0


def test_a_forked_copy_of_the_caller_keeps_off_the_parents_pipes(echo: WorkerProcess) -> None:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        outcome = b"used"
        try:
            echo.send("from the child")
        except WorkerLost:
            outcome = b"refused"
        echo.kill()  # only closes the copy's descriptors
        os.write(write, outcome)
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 16) == b"refused"
    os.close(read)
    assert echo.alive()
    echo.send("from the parent")
    echo.flush(soon())
    assert echo.receive(soon()) == {"echo": "from the parent", "pid": echo.pid}


def test_recv_reads_one_message_and_never_past_it() -> None:
    # The sandbox's prepared children take turns reading jobs from one pipe.
    read, write = os.pipe()
    try:
        send(write, {"job": 1})
        send(write, {"job": 2})
        assert recv(read) == {"job": 1}
        assert recv(read) == {"job": 2}
        send(write, "x" * 100)
        with pytest.raises(FrameError):
            recv(read, max_bytes=50)
        os.close(write)
        write = -1
        assert recv(read) is None
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
