"""Scoring worker processes: each holds its own `Scorer`, scores one job at a time, and can
be killed at a deadline without taking the server (or the rest of a batch) with it.

Why processes and not threads: a hung verification cannot be stopped inside a thread (no
SIGALRM off the main thread, and C code such as a catastrophic regex holds the GIL), and
an abandoned thread keeps its CPU and memory forever. A process is killed at the deadline
and replaced, so whatever hung is gone. Workers start from a forkserver that has imported
the scoring code once, so a replacement costs a fork, not an interpreter start.

The pool is driven from the server's event loop: `WorkerPool.call(job, ...)` waits for an
idle worker (in order of arrival, until a deadline), sends the job and reads the answer on
the event loop itself, through a non-blocking pipe (`pipes.AsyncPipe`): a job or an answer of
any size goes through on asyncio's loop or uvloop's, and the loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import sys
import time
import warnings
from collections import OrderedDict, deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from rewardsmith.errors import RewardsmithError
from rewardsmith.library.store import Library
from rewardsmith.rollout_log import RolloutLog
from rewardsmith.samples import sample_from_dict
from rewardsmith.scoring import Scorer
from rewardsmith.server.jobs import (
    Job,
    Reply,
    RequestJob,
    RouteJob,
    ScoreJob,
    TaskMap,
    WarmJob,
)
from rewardsmith.server.payloads import (
    FieldError,
    RequestProblem,
    check_tools,
    counts,
    parse,
    render,
    request_rows,
)
from rewardsmith.server.pipes import AsyncPipe, PipeClosed
from rewardsmith.types import Sample

log = logging.getLogger(__name__)

# Workers run the caller's main module again (multiprocessing does, as `__mp_main__`); the
# forkserver has it imported already (`_main_module`), which runpy would warn about in
# every worker. The filter is set here, in a module the forkserver preloads.
warnings.filterwarnings(
    "ignore", message=r".*found in sys\.modules after import of package", category=RuntimeWarning
)

# Building the default scorer can load the router's embedding model (seconds on a busy CPU).
STARTUP_TIMEOUT_SECONDS = 120.0
# How long `close` lets a worker finish and exit by itself before killing it.
CLOSE_GRACE_SECONDS = 5.0
# Scorers for per-request tool choices kept warm in each worker (least recently used go).
MAX_SCORERS_PER_WORKER = 16
# Modules the forkserver imports once, so every worker starts with them loaded.
PRELOAD = ["rewardsmith.server.workers", "rewardsmith.tools.gsm8k", "rewardsmith.tools.math"]


@dataclass(frozen=True)
class ScorerSpec:
    """What a worker needs to build its scorers (picklable)."""

    library: str | None = None
    tool: str | None = None
    task_map: TaskMap = ()
    router: str = "embedded"
    #: The router's "synthesize" decisions build gated tools (`Scorer(synthesize=True)`).
    synthesize: bool = False
    #: Address of the Ray cluster whose actors run sandboxes and reward models ("" = none).
    ray_address: str = ""
    #: The server's RAY_* environment (auth mode...): workers come from a forkserver started
    #: before Ray was, so they do not inherit what `ray.init` set.
    ray_env: tuple[tuple[str, str], ...] = ()
    #: Samples a request may list (the workers validate bodies).
    max_batch: int = 10_000
    #: The rollout file every scored request is appended to (`serve --request-log`; "": none).
    request_log: str = ""


def _main_module() -> list[str]:
    """The caller's main module, for the forkserver to import once: multiprocessing runs it
    again (as `__mp_main__`) in every worker it starts, which is cheap only when its imports
    are already loaded (the `rewardsmith` CLI imports every command group: ~0.5 s)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name:
        return [] if name.endswith("__main__") else [name]
    return ["__main__"] if getattr(main, "__file__", None) else []


# -- the worker process -------------------------------------------------------------------


class _Scorers:
    """The worker's library and its scorers, one per (tool, task map) choice."""

    def __init__(self, spec: ScorerSpec) -> None:
        self.spec = spec
        if spec.ray_address:
            from rewardsmith.server.ray_backend import RayLibrary, connect

            os.environ.update(dict(spec.ray_env))
            connect(spec.ray_address)
            self.library: Library = RayLibrary(spec.library)
        else:
            self.library = Library(spec.library)
        self._scorers: OrderedDict[tuple[str | None, TaskMap], Scorer] = OrderedDict()
        self.request_log = RolloutLog(spec.request_log) if spec.request_log else None

    def scorer(self, tool: str | None, task_map: TaskMap | None) -> Scorer:
        """The scorer for a request's choice (None, None: the server's). The server's own
        tools are looked up again first: one retired since the start is not served."""
        if tool is None and task_map is None:
            key: tuple[str | None, TaskMap] = (self.spec.tool, self.spec.task_map)
            check_tools(self.library, key[0], dict(key[1]), ("--tool",), ("--task-map",))
        else:
            key = (tool, task_map or ())
        scorer = self._scorers.get(key)
        if scorer is None:
            scorer = Scorer(
                key[0],
                dict(key[1]),
                self.library,
                router=self.spec.router,
                synthesize=self.spec.synthesize,
            )
            self._scorers[key] = scorer
            while len(self._scorers) > MAX_SCORERS_PER_WORKER:
                _, old = self._scorers.popitem(last=False)
                old.close()
        self._scorers.move_to_end(key)
        return scorer

    def run(self, job: Job) -> Any:
        if isinstance(job, RequestJob):
            parsed = parse(
                job.body_kind, job.body, self.library, self.spec.max_batch, job.task, job.url_tool
            )
            if isinstance(parsed, RequestProblem):
                return parsed
            rewards = self.scorer(parsed.tool, parsed.task_map).score(parsed.samples).rewards
            if self.request_log is not None:
                self.request_log.write(request_rows(job.body_kind, parsed.samples, rewards))
            return render(job.body_kind, rewards), counts(rewards)
        if isinstance(job, ScoreJob):
            samples = [sample_from_dict(item) for item in job.items]
            scorer = self.scorer(job.tool, job.task_map)
            return [r.to_dict() for r in scorer.score(samples).rewards]
        if isinstance(job, RouteJob):
            return [d.to_dict() for d in self.scorer(None, None).router.route(job.samples)]
        if isinstance(job, WarmJob):
            return self.warm()
        raise ValueError(f"unknown job {type(job).__name__}")

    def warm(self) -> bool:
        """Build the default scorer and start its tools, so the first request is not slow."""
        scorer = self.scorer(None, None)
        if scorer.routing:
            scorer.router.route([Sample(completion="1", prompt="1 + 0?", reference="1")])
            return True
        tools = {id(t): t for t in [scorer.default, *scorer.by_task.values()] if t is not None}
        for tool in tools.values():
            # A trivial sample starts the tool's pools (math workers, sandbox zygotes).
            tool.score([Sample(completion="1", reference="1")])
        return True

    def close(self) -> None:
        for scorer in self._scorers.values():
            with contextlib.suppress(Exception):
                scorer.close()
        self.library.close()
        if self.request_log is not None:
            self.request_log.close()


def worker_main(conn: Connection, spec: ScorerSpec) -> None:
    """A worker's loop: answer jobs until the pipe closes or a None job arrives."""
    # Ctrl-C reaches the whole process group; the server drains and stops the workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    scorers = _Scorers(spec)
    try:
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                return
            if job is None:
                return
            try:
                reply = Reply("ok", scorers.run(job))
            except FieldError as exc:  # a tool the body names that the library lacks
                reply = Reply("field", (exc.location, str(exc)))
            except RewardsmithError as exc:  # a bad tool choice: the caller's mistake
                reply = Reply("config", str(exc))
            except Exception as exc:
                log.exception("scoring job failed")
                reply = Reply("error", f"{type(exc).__name__}: {exc}")
            conn.send(reply)
    finally:
        scorers.close()


# -- the server's side --------------------------------------------------------------------


class _Worker:
    """One worker process and the parent's end of its pipe."""

    def __init__(self, ctx: Any, spec: ScorerSpec) -> None:
        parent, child = ctx.Pipe()
        self.process = ctx.Process(
            target=worker_main, args=(child, spec), daemon=True, name="rewardsmith-scorer"
        )
        self.process.start()
        child.close()
        self.pipe = AsyncPipe(parent)

    async def exchange(self, job: Job) -> Reply:
        """Send a job and read its answer (on the event loop; never blocks it)."""
        try:
            await self.pipe.send(job)
            reply = await self.pipe.recv()
        except PipeClosed as exc:
            code = self.process.exitcode
            return Reply("died", f"exit code {code}" if code is not None else str(exc))
        return reply if isinstance(reply, Reply) else Reply("error", "bad reply from a worker")

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.pipe.close()
        with contextlib.suppress(Exception):
            self.process.join(timeout=5)

    def stop(self, grace: float) -> None:
        """Ask the worker to exit (it closes its tools), kill it after `grace` seconds."""
        if self.pipe.send_nowait(None):
            self.process.join(timeout=grace)
        self.kill()


class WorkerPool:
    """`size` scoring workers; see the module docstring. Use from one event loop."""

    def __init__(
        self,
        spec: ScorerSpec,
        size: int,
        start_method: str = "forkserver",
        preload: Sequence[str] = (),
    ) -> None:
        """`preload`: more modules for the forkserver to import once (the factories of the
        configured tools), so a replacement worker builds its tools without imports."""
        if size < 1:
            raise ValueError("the scoring pool needs at least one worker")
        self.spec = spec
        self.size = size
        self._ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload([*PRELOAD, *preload, *_main_module()])
        self._idle: list[_Worker] = []
        self._waiters: deque[asyncio.Future[_Worker]] = deque()
        self._all: set[_Worker] = set()
        # Workers start and stop in threads (a forkserver round trip, a join).
        self._threads = ThreadPoolExecutor(size + 2, thread_name_prefix="scorer-io")
        self._closed = False
        self.restarts = 0
        self.busy = 0

    @property
    def waiting(self) -> int:
        """Calls waiting for a free worker (the queue depth)."""
        return len(self._waiters)

    async def start(self) -> None:
        """Start every worker and warm it; raises if a worker cannot build its scorer."""
        await asyncio.gather(*(self._add_worker(raise_errors=True) for _ in range(self.size)))

    async def call(self, job: Job, deadline: float, run_fraction: float = 1.0) -> Reply:
        """Run `job` on a worker. Waits for a free one until `deadline` (`time.monotonic()`),
        then lets it run until `run_fraction` of the time left; a worker past that is killed
        and replaced (`timeout`)."""
        worker = await self._acquire(deadline)
        if worker is None:
            return Reply("busy")
        budget = max(0.0, (deadline - time.monotonic()) * run_fraction)
        self.busy += 1
        try:
            # A timeout around the exchange, not a task and a wait: this runs per request.
            async with asyncio.timeout(budget):
                reply = await worker.exchange(job)
        except TimeoutError:
            self._discard(worker)  # the exchange stopped listening to the pipe first
            return Reply("timeout")
        except asyncio.CancelledError:
            self._discard(worker)
            raise
        finally:
            self.busy -= 1
        if reply.kind == "died":
            self._discard(worker)
        else:
            self._release(worker)
        return reply

    async def close(self, grace: float = CLOSE_GRACE_SECONDS) -> None:
        """Stop every worker (idle ones first ask to exit; they close their tools)."""
        self._closed = True
        for waiter in self._waiters:
            waiter.cancel()
        workers = list(self._all)
        self._all.clear()
        self._idle.clear()
        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self._threads, w.stop, grace) for w in workers))
        self._threads.shutdown(wait=False)

    # -- internals ------------------------------------------------------------------------

    async def _acquire(self, deadline: float) -> _Worker | None:
        if self._closed:
            return None
        if self._idle and not self._waiters:
            return self._idle.pop()
        waiter: asyncio.Future[_Worker] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                return await waiter
        except TimeoutError:
            self._give_back(waiter)  # a worker handed over as the time ran out goes back
            return None
        except asyncio.CancelledError:
            self._give_back(waiter)
            raise

    def _give_back(self, waiter: asyncio.Future[_Worker]) -> None:
        """A waiter leaves: out of the line, and a worker it was just handed goes back."""
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)
        if waiter.done() and not waiter.cancelled():
            self._release(waiter.result())
        else:
            waiter.cancel()

    def _release(self, worker: _Worker) -> None:
        if self._closed:
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(worker)
                return
        self._idle.append(worker)

    def _discard(self, worker: _Worker) -> None:
        """Kill a worker that overran or died and start its replacement."""
        self._all.discard(worker)
        self.restarts += 1
        loop = asyncio.get_running_loop()
        loop.run_in_executor(self._threads, worker.kill)
        if not self._closed:
            task = loop.create_task(self._add_worker(raise_errors=False))
            task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

    async def _add_worker(self, raise_errors: bool) -> None:
        loop = asyncio.get_running_loop()
        while not self._closed:
            worker = await loop.run_in_executor(self._threads, _Worker, self._ctx, self.spec)
            warm = asyncio.ensure_future(worker.exchange(WarmJob()))
            done, _ = await asyncio.wait({warm}, timeout=STARTUP_TIMEOUT_SECONDS)
            if not done:
                warm.cancel()
            reply = warm.result() if done else Reply("timeout")
            if reply.kind == "ok":
                if self._closed:
                    worker.kill()
                    return
                self._all.add(worker)
                self._release(worker)
                return
            worker.kill()
            message = f"a scoring worker failed to start ({reply.kind}): {reply.value}"
            if raise_errors:
                raise RewardsmithError(message)
            log.error("%s; retrying in 1 s", message)
            await asyncio.sleep(1.0)
