"""math: final-answer equivalence for competition math (MATH, AIME, AMC), built on math-verify.

Rule followed: math-verify (huggingface/Math-Verify). `extract` is its `parse` of the
clipped completion (`\\boxed{}` first, then "the answer is", then the last LaTeX or plain
expression); `compare` is its `verify(gold, answer)` against the parsed reference. A bare
reference (`\\frac{1}{2}`, `3, 5, 7`) is wrapped as `$...$` before parsing, which is how
math-verify reads all of it: unwrapped it reads only a plain expression (`3, 5, 7` -> 7).
See `math_worker.py` for these steps and `math_pool.py` for the worker processes.

How a batch is scored:

- Samples are grouped by reference, then by clipped completion: each distinct reference is
  parsed once (GRPO groups share one), each distinct completion verified once against it.
- The groups go, in chunks of at most `CHUNK_COMPLETIONS`, to a small pool of worker
  processes: fresh interpreters, safe to start from a trainer with threads and from a script
  without a `__main__` guard (see `WorkerPool`). The pool starts on first use (or `start()`),
  is reused, and stops on `close()`, when the tool is collected, or at exit.
- Deadlines. math-verify's own timeouts use `signal.alarm`, which works only on the main
  thread. In a worker the work runs on the main thread, so each step (the reference, then each
  completion) gets a `timeout_seconds` alarm of its own and a late step scores 0.0 with status
  `timeout`. The parent enforces `timeout_seconds + math_pool.KILL_GRACE_SECONDS` per step,
  from any thread: a worker that overruns (stuck in C code, stopped) is killed and replaced,
  its current item scores `timeout`, the rest is re-sent, and the caller never waits longer.
- `workers=0` scores in the calling process: no start-up cost, but the deadline then works
  only when `score` is called from the main thread; elsewhere nothing is interrupted.

Missing, empty or unparseable references give `invalid_reference` (score None), a completion
without an answer scores 0.0 with reason "no answer found"; no input makes `score` raise.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Sequence
from typing import Any

from rewardsmith.config import MAX_REFERENCE_CHARS, clip_tail
from rewardsmith.errors import ConfigError
from rewardsmith.tools import math_worker
from rewardsmith.tools.base import LOG_EXCERPT_CHARS, AnswerVerifier, Verdict, make_reward
from rewardsmith.tools.math_pool import Chunk, Result, WorkerPool
from rewardsmith.types import Reward, Sample, ToolSpec

log = logging.getLogger(__name__)

# math-verify's own default for one parse or one verify call.
DEFAULT_TIMEOUT_SECONDS = 5.0
# Completions per message: amortizes pickling and reference look-ups, still spreads a single
# big group over several workers.
CHUNK_COMPLETIONS = 16


def default_workers() -> int:
    """min(2, usable CPUs): verification is CPU-bound and trainers need their cores too."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(2, cpus)


class MathTool(AnswerVerifier):
    """Math final-answer equivalence with math-verify; see the module docstring.

    `timeout_seconds` bounds each step (reference parse, or one completion's extract +
    compare); `workers` is the number of worker processes (0: score in the calling process).
    """

    def __init__(
        self,
        spec: ToolSpec | None = None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        workers: int | None = None,
    ) -> None:
        super().__init__(spec or ToolSpec(name="math", domains=("math",), reference_format="latex"))
        if not (isinstance(timeout_seconds, int | float) and math.isfinite(timeout_seconds)):
            raise ConfigError(f"math: timeout_seconds must be a number, got {timeout_seconds!r}")
        if timeout_seconds <= 0:
            raise ConfigError(f"math: timeout_seconds must be > 0, got {timeout_seconds!r}")
        workers = default_workers() if workers is None else workers
        if not isinstance(workers, int) or workers < 0:
            raise ConfigError(f"math: workers must be an integer >= 0, got {workers!r}")
        self.timeout_seconds = float(timeout_seconds)
        self.workers = workers
        self._lock = threading.Lock()
        self._pool: WorkerPool | None = None

    # -- the verifier steps, usable one at a time (in this process, without a deadline) --

    def parse_reference(self, reference: str) -> list[Any]:
        return math_worker.parse_gold(reference)

    def extract(self, completion: str) -> list[Any] | None:
        return math_worker.extract_answer(clip_tail(completion))

    def compare(self, answer: Any, reference: Any) -> Verdict:
        if math_worker.is_equivalent(answer, reference):
            return Verdict(1.0, reason="equivalent to the reference")
        excerpt = math_worker.answer_excerpt(answer)
        return Verdict(0.0, reason=f"answer {excerpt!r} differs from the reference")

    # -- batches --

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        rewards: list[Reward | None] = [None] * len(samples)
        slot_of: dict[tuple[str, str], int] = {}
        slot_samples: list[list[int]] = []
        by_reference: dict[str, tuple[list[int], list[str]]] = {}
        for i, sample in enumerate(samples):
            reference = sample.reference
            problem = _reference_problem(reference)
            if problem or reference is None:
                rewards[i] = make_reward(self.spec, None, "invalid_reference", reason=problem)
                continue
            completion = sample.completion if isinstance(sample.completion, str) else ""
            text = clip_tail(completion)
            key = (reference, text)
            if key not in slot_of:
                slot_of[key] = len(slot_samples)
                slot_samples.append([])
                slots, texts = by_reference.setdefault(reference, ([], []))
                slots.append(slot_of[key])
                texts.append(text)
            slot_samples[slot_of[key]].append(i)

        results: list[Result] = [("error", "not scored")] * len(slot_samples)
        chunks = [
            Chunk(ref, slots[s : s + CHUNK_COMPLETIONS], texts[s : s + CHUNK_COMPLETIONS])
            for ref, (slots, texts) in by_reference.items()
            for s in range(0, len(slots), CHUNK_COMPLETIONS)
        ]
        if chunks:
            self._verify(chunks, results)
        for slot, (outcome, reason) in enumerate(results):
            reward = self._reward(outcome, reason)
            if reward.status in ("timeout", "error"):
                first = samples[slot_samples[slot][0]]
                log.warning(
                    "%s: %s on completion %r",
                    self.spec.ref,
                    reason,
                    (first.completion or "")[:LOG_EXCERPT_CHARS],
                )
            for i in slot_samples[slot]:
                rewards[i] = reward
        return [r or make_reward(self.spec, 0.0, "error", reason="not scored") for r in rewards]

    def _verify(self, chunks: list[Chunk], results: list[Result]) -> None:
        if self.workers == 0:
            timeout = self.timeout_seconds if math_worker.can_interrupt() else None
            for chunk in chunks:
                for event in math_worker.score_chunk(chunk.reference, chunk.texts, timeout):
                    if event[0] == "ref" and not event[1]:
                        for slot in chunk.slots:
                            results[slot] = ("invalid_reference", event[2])
                    elif event[0] == "item":
                        results[chunk.slots[event[1]]] = (event[2], event[3])
            return
        with self._lock:  # one batch at a time per tool; the pool is not re-entrant
            if self._pool is None:
                self._pool = WorkerPool(self.workers)
            self._pool.run(chunks, self.timeout_seconds, results)

    def _reward(self, outcome: str, reason: str) -> Reward:
        if outcome == "correct":
            return make_reward(self.spec, 1.0, reason=reason)
        if outcome == "wrong":
            return make_reward(self.spec, 0.0, reason=reason)
        if outcome == "no_answer":
            return self.no_answer()
        if outcome == "invalid_reference":
            return make_reward(self.spec, None, "invalid_reference", reason=reason)
        if outcome == "timeout":
            return make_reward(self.spec, 0.0, "timeout", reason=reason)
        return make_reward(self.spec, 0.0, "error", reason=reason)

    def start(self) -> None:
        """Start the worker pool now and wait until it is ready (otherwise the first `score`
        starts it, ~1 s); nothing to do with `workers=0`."""
        if self.workers == 0:
            return
        with self._lock:
            if self._pool is None:
                self._pool = WorkerPool(self.workers)
            self._pool.start()

    def worker_pids(self) -> list[int]:
        """Process ids of the running workers (empty before first use or with workers=0)."""
        return self._pool.pids() if self._pool is not None else []

    def close(self) -> None:
        """Stop the worker processes; the next `score` starts new ones."""
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __getstate__(self) -> dict[str, Any]:
        # Picklable for trainers and Ray: the copy starts its own pool when first used.
        state = self.__dict__.copy()
        state["_lock"] = None
        state["_pool"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _reference_problem(reference: object) -> str:
    """Why a reference cannot be used before parsing it, or "" when it may be."""
    if reference is None:
        return "missing reference"
    if not isinstance(reference, str):
        return f"reference is {type(reference).__name__}, not text"
    if not reference.strip():
        return "empty reference"
    if len(reference) > MAX_REFERENCE_CHARS:
        return f"reference longer than {MAX_REFERENCE_CHARS} characters"
    return ""
