"""The math tool's worker pool: the parent side of `math_worker`'s protocol, with deadlines.

Workers are fresh interpreters (`python -c ...`), not `multiprocessing` children: the "spawn"
and "forkserver" start methods re-import the caller's `__main__`, which in a training script
without an `if __name__ == "__main__"` guard would start training again in every worker, and
"fork" is unsafe in a process with threads. Each worker talks over a socket pair wrapped in a
`multiprocessing.connection.Connection`.

Deadlines: a worker reports each step (the reference, then each completion) as it finishes
it; one that stays silent for `timeout + KILL_GRACE_SECONDS` (its own alarm failed: stuck in C
code, stopped, swapping) is killed and replaced. Its current item scores `timeout`, the rest of
its work is re-sent, so the caller never waits longer than that per step.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import sys
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import rewardsmith
from rewardsmith.tools import math_worker

log = logging.getLogger(__name__)

# The worker's alarm fires first; the parent kills only a worker that ignores it.
KILL_GRACE_SECONDS = 1.0
# A new worker imports sympy, builds math-verify's LaTeX grammar and warms up (~1 s).
STARTUP_TIMEOUT_SECONDS = 60.0
# Workers that die or hang before they are ready, per `score` call, before we give up.
MAX_START_FAILURES = 3
# Tries at a reference whose worker was killed or died before it was parsed.
REFERENCE_ATTEMPTS = 2
# Chunks sent ahead to each worker: it starts the next without a round trip to the parent.
IN_FLIGHT_CHUNKS = 2

# (outcome, reason); outcome is a `math_worker.Outcome` or "invalid_reference".
Result = tuple[str, str]


@dataclass
class Chunk:
    """Completions to verify against one reference; `slots` index the batch's results."""

    reference: str
    slots: list[int]
    texts: list[str]
    ref_done: bool = False
    done: int = 0
    attempts: int = 1


@dataclass
class _Worker:
    """One worker process; `chunks` were sent to it and are answered in order."""

    process: subprocess.Popen[bytes]
    conn: Connection
    started_at: float
    ready: bool = False
    chunks: deque[Chunk] = field(default_factory=deque)
    # When the step now running in the worker began: its last message, or its first chunk.
    step_started: float = 0.0

    def due(self, step_limit: float) -> float:
        if not self.ready:
            return self.started_at + STARTUP_TIMEOUT_SECONDS
        return self.step_started + step_limit


def _stop_workers(workers: list[_Worker], owner: int) -> None:
    """Stop every worker; only in the process that started them (not in a forked child)."""
    if os.getpid() != owner:
        return
    for worker in workers:
        with contextlib.suppress(OSError, ValueError):  # already gone
            worker.conn.send(None)
    for worker in workers:
        _reap(worker, grace=0.5)
    workers.clear()


def _reap(worker: _Worker, grace: float = 0.0) -> None:
    """Wait `grace` seconds for the worker to exit, then kill it; close its pipe."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.process.wait(timeout=grace)
    if worker.process.poll() is None:
        worker.process.kill()
        worker.process.wait()
    worker.conn.close()


class WorkerPool:
    """`size` worker processes running `math_worker.main`; see the module docstring.

    Each worker holds up to `IN_FLIGHT_CHUNKS` chunks, so it starts the next one without a
    round trip to the parent. Not thread-safe: the tool serializes calls.
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._owner = os.getpid()
        self._workers: list[_Worker] = []
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._owner)

    def pids(self) -> list[int]:
        """Process ids of the workers (for tests and diagnostics)."""
        return [w.process.pid for w in self._workers]

    def close(self) -> None:
        self._finalizer()

    def _start_worker(self) -> _Worker:
        parent_end, child_end = socket.socketpair()
        fd = child_end.fileno()
        env = dict(os.environ)
        # The worker must import this rewardsmith even when the caller put it on sys.path.
        package_root = str(Path(rewardsmith.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        process = subprocess.Popen(
            [sys.executable, "-c", f"from {math_worker.__name__} import main; main({fd})"],
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # stdout may carry the caller's output (JSONL)
            env=env,
        )
        child_end.close()
        conn = Connection(parent_end.detach())
        return _Worker(process=process, conn=conn, started_at=time.monotonic())

    def _replace(self, worker: _Worker) -> None:
        _reap(worker)
        self._workers[self._workers.index(worker)] = self._start_worker()

    def _prepare(self) -> None:
        if os.getpid() != self._owner:  # forked: the workers and pipes belong to the parent
            self._workers.clear()
            self._owner = os.getpid()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._owner)
        for worker in list(self._workers):
            if worker.process.poll() is not None:
                self._replace(worker)
        while len(self._workers) < self._size:
            self._workers.append(self._start_worker())

    def start(self) -> None:
        """Start the workers and wait until each is ready, or has failed to start."""
        self._prepare()
        failures = 0
        give_up_at = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while failures < MAX_START_FAILURES and not all(w.ready for w in self._workers):
            by_conn = {w.conn: w for w in self._workers if not w.ready}
            left = give_up_at - time.monotonic()
            if left <= 0:
                return
            for conn in wait(list(by_conn), timeout=left):
                failures += self._drain(by_conn[conn], deque(), [])  # type: ignore[index]

    def run(self, chunks: list[Chunk], timeout: float, results: list[Result]) -> None:
        """Verify every chunk, writing `results[slot]`; returns within the deadlines."""
        self._prepare()
        pending = deque(chunks)
        start_failures = 0
        step_limit = timeout + KILL_GRACE_SECONDS
        while pending or any(w.chunks for w in self._workers):
            if start_failures >= MAX_START_FAILURES:
                self._give_up(pending, results)
                return
            self._dispatch(pending, timeout, results)
            now = time.monotonic()
            waiting = [w for w in self._workers if w.chunks or not w.ready]
            due = min((w.due(step_limit) for w in waiting), default=now)
            by_conn = {w.conn: w for w in self._workers}
            for conn in wait(list(by_conn), timeout=max(0.0, due - now)):
                start_failures += self._drain(by_conn[conn], pending, results)  # type: ignore[index]
            now = time.monotonic()
            for worker in list(self._workers):
                if now <= worker.due(step_limit) or not (worker.chunks or not worker.ready):
                    continue
                if worker.ready:
                    reason = f"verification timed out after {timeout:g}s; worker stopped"
                    self._fail_step(worker, "timeout", reason, pending, results)
                else:
                    start_failures += 1
                self._replace(worker)

    def _dispatch(self, pending: deque[Chunk], timeout: float, results: list[Result]) -> None:
        for worker in list(self._workers):
            while worker.ready and pending and len(worker.chunks) < IN_FLIGHT_CHUNKS:
                chunk = pending.popleft()
                try:
                    worker.conn.send((chunk.reference, chunk.texts, timeout))
                except OSError:  # it died: as in `_drain`, the rest goes to the next worker
                    pending.appendleft(chunk)
                    reason = f"math worker died (exit code {worker.process.poll()})"
                    self._fail_step(worker, "error", reason, pending, results)
                    self._replace(worker)
                    break
                if not worker.chunks:
                    worker.step_started = time.monotonic()
                worker.chunks.append(chunk)

    def _drain(self, worker: _Worker, pending: deque[Chunk], results: list[Result]) -> int:
        """Handle every message waiting from `worker`; returns 1 if it died before ready."""
        try:
            while worker.conn.poll():
                self._handle(worker, worker.conn.recv(), results)
        except (EOFError, OSError):
            if not worker.ready:
                self._replace(worker)
                return 1
            reason = f"math worker died (exit code {worker.process.poll()})"
            self._fail_step(worker, "error", reason, pending, results)
            self._replace(worker)
        return 0

    def _handle(self, worker: _Worker, event: tuple[Any, ...], results: list[Result]) -> None:
        worker.step_started = time.monotonic()
        if event[0] == "ready":
            worker.ready = True
            return
        if not worker.chunks:  # nothing was asked: ignore
            return
        chunk = worker.chunks[0]
        if event[0] == "ref":
            _, ok, reason = event
            chunk.ref_done = True
            if not ok:
                for slot in chunk.slots:
                    results[slot] = ("invalid_reference", reason)
                worker.chunks.popleft()
        else:
            _, index, outcome, reason = event
            results[chunk.slots[index]] = (outcome, reason)
            chunk.done = index + 1
            if chunk.done == len(chunk.slots):
                worker.chunks.popleft()

    @staticmethod
    def _fail_step(
        worker: _Worker, outcome: str, reason: str, pending: deque[Chunk], results: list[Result]
    ) -> None:
        """The worker's current step failed: score it, re-send everything after it."""
        if not worker.chunks:
            return
        chunk = worker.chunks.popleft()
        resend = list(worker.chunks)
        worker.chunks.clear()
        if not chunk.ref_done:
            # The worker, not the reference, may be at fault (killed, stopped): retry once.
            if chunk.attempts < REFERENCE_ATTEMPTS:
                chunk.attempts += 1
                resend.insert(0, chunk)
            else:
                for slot in chunk.slots:
                    results[slot] = ("invalid_reference", f"while parsing the reference: {reason}")
        else:
            results[chunk.slots[chunk.done]] = (outcome, reason)
            rest = chunk.done + 1
            if rest < len(chunk.slots):
                resend.insert(0, Chunk(chunk.reference, chunk.slots[rest:], chunk.texts[rest:]))
        pending.extendleft(reversed(resend))

    def _give_up(self, pending: deque[Chunk], results: list[Result]) -> None:
        reason = f"math worker processes failed to start {MAX_START_FAILURES} times"
        log.error("%s; scoring the rest of the batch as errors", reason)
        chunks = list(pending) + [c for w in self._workers for c in w.chunks]
        for chunk in chunks:
            for slot in chunk.slots[chunk.done :]:
                results[slot] = ("error", reason)
        for worker in self._workers:
            worker.chunks.clear()
