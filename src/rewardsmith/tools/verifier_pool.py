"""Worker processes that verify groups with a verifier's own `check_group`, under deadlines.

A verifier tool (`AnswerVerifier`; the `math` tool) hands `VerifierPool.verify` its groups of
(reference, distinct completions). Each worker is a `rewardsmith.sandbox.process.WorkerProcess`
running `verifier_worker.main`: a fresh interpreter (not `multiprocessing`, see that module)
that builds the same tool from JSON (factory path, spec, parameters) and runs its
`check_group` on its main thread, where every step gets a `deadline`. So the worker and
the calling process share one rule for extract, compare and their reasons.

Scheduling: groups are cut into chunks of at most `CHUNK_COMPLETIONS` (one message each:
the reference is looked up once per chunk, and a big group still spreads over several
workers). Each worker holds up to `IN_FLIGHT_CHUNKS`, so it starts the next without a round
trip to the parent; messages that do not fit its pipe yet wait in an outbox, never blocking
the parent.

Deadlines, from any calling thread: a worker reports each step (the reference, then each
completion) as it finishes it; one that stays silent for `timeout + KILL_GRACE_SECONDS` (its
own alarm failed: stuck in C code, stopped, swapping) is killed and replaced. Its current
item scores `timeout`, the rest of its work is re-sent, so the caller never waits longer
than that per step. A worker that dies, or breaks the protocol, costs its current item an
`error`; a reference whose worker was lost before parsing it is tried `REFERENCE_ATTEMPTS`
times; after `MAX_START_FAILURES` workers failed to start in one call the rest scores
`error`.
"""

from __future__ import annotations

import logging
import os
import select
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rewardsmith.sandbox.process import WorkerLost, WorkerProcess
from rewardsmith.tools.base import Group, make_reward
from rewardsmith.tools.verifier_messages import (
    ItemChecked,
    Job,
    MessageError,
    Ready,
    ReferenceChecked,
    ToolFailed,
    read_event,
)
from rewardsmith.types import Reward, Status, ToolSpec

log = logging.getLogger(__name__)

# The worker's alarm fires first; the parent kills only a worker that ignores it.
KILL_GRACE_SECONDS = 1.0
# A new worker imports its tool (math-verify: sympy, the LaTeX grammar) and warms up (~1 s).
STARTUP_TIMEOUT_SECONDS = 60.0
# Workers that die or hang before they are ready, per `verify` call, before we give up.
MAX_START_FAILURES = 3
# Tries at a reference whose worker was killed or died before it was parsed.
REFERENCE_ATTEMPTS = 2
# Chunks sent ahead to each worker: it starts the next without a round trip to the parent.
IN_FLIGHT_CHUNKS = 2
# Completions per message: amortizes the reference look-up, still spreads a single big
# group over several workers.
CHUNK_COMPLETIONS = 16
# Seconds an idle worker gets to exit by itself when the pool closes.
CLOSE_GRACE_SECONDS = 0.5

WORKER_ENTRY = "rewardsmith.tools.verifier_worker"


class _ProtocolError(Exception):
    """A worker's message that is not one the protocol allows where it came."""


@dataclass
class _Chunk:
    """Completions to verify against one reference; `slots` are (group, completion) places."""

    reference: str | None
    slots: list[tuple[int, int]]
    texts: list[str]
    ref_done: bool = False
    done: int = 0
    attempts: int = 1


@dataclass(eq=False)  # compared by identity: a replaced worker is another one
class _Worker:
    """One worker process; `chunks` were sent to it and are answered in order."""

    process: WorkerProcess
    started_at: float
    ready: bool = False
    chunks: deque[_Chunk] = field(default_factory=deque)
    # When the step now running in the worker began: its last message, or its first chunk.
    step_started: float = 0.0

    def due(self, step_limit: float) -> float:
        if not self.ready:
            return self.started_at + STARTUP_TIMEOUT_SECONDS
        return self.step_started + step_limit

    @property
    def busy(self) -> bool:
        return bool(self.chunks) or not self.ready


def _stop_workers(workers: list[_Worker], owner: int) -> None:
    """Stop every worker; only in the process that started them (not in a forked child)."""
    if os.getpid() != owner:
        return
    for worker in workers:
        worker.process.hang_up()
    deadline = time.monotonic() + CLOSE_GRACE_SECONDS
    for worker in workers:
        worker.process.kill(grace=max(0.0, deadline - time.monotonic()))
    workers.clear()


class VerifierPool:
    """`size` workers that each build `factory(ToolSpec.from_dict(spec), **params)` and run
    its `check_group` with a `timeout` per step; see the module docstring.

    Not thread-safe: the tool serializes calls.
    """

    def __init__(
        self,
        size: int,
        spec: ToolSpec,
        factory: str,
        params: Mapping[str, Any],
        timeout: float,
    ) -> None:
        self._size = size
        self.spec = spec
        self.timeout = timeout
        self._config = {
            "factory": factory,
            "spec": spec.to_dict(),
            "params": dict(params),
            "timeout": timeout,
        }
        self._owner = os.getpid()
        self._workers: list[_Worker] = []
        self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._owner)

    def pids(self) -> list[int]:
        """Process ids of the workers (for tests and diagnostics)."""
        return [w.process.pid for w in self._workers]

    def close(self) -> None:
        self._finalizer()

    # -- workers --------------------------------------------------------------------------

    def _start_worker(self) -> _Worker:
        # The worker shares the caller's environment (math-verify's, sympy's settings) and
        # stderr (its tracebacks); its stdout is /dev/null, which may carry the caller's JSONL.
        process = WorkerProcess(WORKER_ENTRY, self._config, stderr=None)
        return _Worker(process=process, started_at=time.monotonic())

    def _replace(self, worker: _Worker) -> None:
        worker.process.kill()
        self._workers[self._workers.index(worker)] = self._start_worker()

    def _prepare(self) -> None:
        if os.getpid() != self._owner:  # forked: the workers and pipes belong to the parent
            for worker in self._workers:
                worker.process.kill()  # closes this copy's descriptors, kills nothing
            self._workers.clear()
            self._owner = os.getpid()
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _stop_workers, self._workers, self._owner)
        for worker in list(self._workers):
            if not worker.process.alive():
                self._replace(worker)
        while len(self._workers) < self._size:
            self._workers.append(self._start_worker())

    def start(self) -> None:
        """Start the workers and wait until each is ready, or has failed to start."""
        self._prepare()
        failures = 0
        give_up_at = time.monotonic() + STARTUP_TIMEOUT_SECONDS
        while failures < MAX_START_FAILURES and not all(w.ready for w in self._workers):
            by_fd = {w.process.fileno(): w for w in self._workers if not w.ready}
            left = give_up_at - time.monotonic()
            if left <= 0:
                return
            for fd in select.select(list(by_fd), [], [], left)[0]:
                failures += self._drain(by_fd[fd], deque(), [])

    # -- a batch --------------------------------------------------------------------------

    def verify(self, groups: Sequence[Group]) -> list[list[Reward]]:
        """One reward per completion of each group, in order; returns within the deadlines."""
        results: list[list[Reward | None]] = [[None] * len(g.completions) for g in groups]
        chunks = []
        for g, group in enumerate(groups):
            for start in range(0, len(group.completions), CHUNK_COMPLETIONS):
                texts = list(group.completions[start : start + CHUNK_COMPLETIONS])
                slots = [(g, start + k) for k in range(len(texts))]
                chunks.append(_Chunk(group.reference, slots, texts))
        if chunks:
            self._run(chunks, results)
        return [
            [r or make_reward(self.spec, 0.0, "error", reason="not scored") for r in row]
            for row in results
        ]

    def _run(self, chunks: list[_Chunk], results: list[list[Reward | None]]) -> None:
        self._prepare()
        pending = deque(chunks)
        start_failures = 0
        step_limit = self.timeout + KILL_GRACE_SECONDS
        while pending or any(w.chunks for w in self._workers):
            if start_failures >= MAX_START_FAILURES:
                self._give_up(pending, results)
                return
            self._dispatch(pending, results)
            now = time.monotonic()
            due = min((w.due(step_limit) for w in self._workers if w.busy), default=now)
            readers = {w.process.fileno(): w for w in self._workers}
            writers = {w.process.write_fileno(): w for w in self._workers if w.process.sending}
            readable, writable, _ = select.select(
                list(readers), list(writers), [], max(0.0, due - now)
            )
            for fd in writable:
                self._flush(writers[fd], pending, results)
            for fd in readable:
                if readers[fd] in self._workers:  # not replaced meanwhile
                    start_failures += self._drain(readers[fd], pending, results)
            now = time.monotonic()
            for worker in list(self._workers):
                if now <= worker.due(step_limit) or not worker.busy:
                    continue
                if worker.ready:
                    reason = f"verification timed out after {self.timeout:g}s; worker stopped"
                    self._fail_step(worker, "timeout", reason, pending, results)
                else:
                    start_failures += 1
                self._replace(worker)

    def _dispatch(self, pending: deque[_Chunk], results: list[list[Reward | None]]) -> None:
        for worker in list(self._workers):
            while worker.ready and pending and len(worker.chunks) < IN_FLIGHT_CHUNKS:
                chunk = pending.popleft()
                try:
                    worker.process.send(Job(chunk.reference, chunk.texts).frame())
                except WorkerLost:  # it died: as in `_drain`, the rest goes to the next worker
                    pending.appendleft(chunk)
                    self._lost(worker, "died", pending, results)
                    break
                if not worker.chunks:
                    worker.step_started = time.monotonic()
                worker.chunks.append(chunk)

    def _flush(
        self, worker: _Worker, pending: deque[_Chunk], results: list[list[Reward | None]]
    ) -> None:
        try:
            worker.process.flush(0.0)  # what fits now; the rest at the next select
        except WorkerLost:
            self._lost(worker, "died", pending, results)

    def _drain(
        self, worker: _Worker, pending: deque[_Chunk], results: list[list[Reward | None]]
    ) -> int:
        """Handle every message waiting from `worker`; returns 1 if it died before ready."""
        try:
            for message in worker.process.receive_ready():
                self._handle(worker, message, results)
        except (WorkerLost, _ProtocolError) as exc:
            if not worker.ready:
                self._replace(worker)
                return 1
            self._lost(
                worker,
                "broke the protocol" if isinstance(exc, _ProtocolError) else "died",
                pending,
                results,
            )
        return 0

    def _lost(
        self,
        worker: _Worker,
        how: str,
        pending: deque[_Chunk],
        results: list[list[Reward | None]],
    ) -> None:
        reason = f"{self.spec.name} worker {how} (exit code {worker.process.returncode})"
        self._fail_step(worker, "error", reason, pending, results)
        self._replace(worker)

    def _handle(self, worker: _Worker, frame: Any, results: list[list[Reward | None]]) -> None:
        worker.step_started = time.monotonic()
        try:
            event = read_event(frame, self.spec.ref)
        except MessageError as exc:
            raise _ProtocolError(str(exc)) from exc
        if isinstance(event, Ready):
            worker.ready = True
            return
        if not worker.chunks:  # nothing was asked: ignore
            return
        chunk = worker.chunks[0]
        if isinstance(event, ReferenceChecked):
            chunk.ref_done = True
            if event.problem:
                for g, k in chunk.slots:
                    results[g][k] = make_reward(
                        self.spec, None, "invalid_reference", reason=event.problem
                    )
                worker.chunks.popleft()
        elif isinstance(event, ItemChecked) and chunk.ref_done and event.index == chunk.done:
            g, k = chunk.slots[chunk.done]
            results[g][k] = event.reward
            chunk.done += 1
            if chunk.done == len(chunk.slots):
                worker.chunks.popleft()
        elif isinstance(event, ToolFailed):
            reason = f"tool failed: {event.reason[:200]}"
            for g, k in chunk.slots[chunk.done :]:
                results[g][k] = make_reward(self.spec, 0.0, "error", reason=reason)
            worker.chunks.popleft()
        else:
            raise _ProtocolError(f"unexpected message {str(frame)[:80]}")

    def _fail_step(
        self,
        worker: _Worker,
        status: Status,
        reason: str,
        pending: deque[_Chunk],
        results: list[list[Reward | None]],
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
                for g, k in chunk.slots:
                    results[g][k] = make_reward(
                        self.spec,
                        None,
                        "invalid_reference",
                        reason=f"while parsing the reference: {reason}",
                    )
        else:
            g, k = chunk.slots[chunk.done]
            results[g][k] = make_reward(self.spec, 0.0, status, reason=reason)
            rest = chunk.done + 1
            if rest < len(chunk.slots):
                resend.insert(0, _Chunk(chunk.reference, chunk.slots[rest:], chunk.texts[rest:]))
        pending.extendleft(reversed(resend))

    def _give_up(self, pending: deque[_Chunk], results: list[list[Reward | None]]) -> None:
        reason = f"{self.spec.name} worker processes failed to start {MAX_START_FAILURES} times"
        log.error("%s; scoring the rest of the batch as errors", reason)
        chunks = list(pending) + [c for w in self._workers for c in w.chunks]
        for chunk in chunks:
            for g, k in chunk.slots[chunk.done :]:
                results[g][k] = make_reward(self.spec, 0.0, "error", reason=reason)
        for worker in self._workers:
            worker.chunks.clear()
