"""A wall-clock deadline around one verification step, in any thread, without a process.

Verifiers bound each step (the reference, then each completion's extract + compare): parsers
with super-linear corners (sympy, math-verify's LaTeX grammar, a dataset's scorer) must not
hold a batch, nor a trainer, hostage (docs/architecture.md, Design: "Timeouts never rely on
SIGALRM in threads ... the caller never hangs"). `deadline(seconds)` raises `StepTimeout`, a
`BaseException`, so library code's `except Exception` handlers do not swallow it:

- on the main thread, with a timer signal (`setitimer`, fractional seconds): it interrupts
  any Python code, and C code that checks for signals. It fires again every
  `REFIRE_SECONDS` until the block stops, since a signal that lands in a gc callback or a
  `__del__` has its exception printed and dropped there. A timer the caller had set is
  restored afterwards, less the time spent here;
- on any other thread, where signals never arrive, with a profile hook (`sys.setprofile`,
  which is per thread): the clock is read at every function call and return, Python or C,
  so pure-Python work (parsers, sympy, scorers) stops within one call of the deadline.
  What it cannot stop is one long call into C that never returns (a catastrophic regex, a
  huge integer power): rewardsmith's own extractors are linear-time on at most
  `config.MAX_COMPLETION_CHARS` characters, so none of theirs is long, and work that may
  hold C code (math-verify) runs in worker processes by default
  (`rewardsmith.tools.verifier_pool`), whose parent kills a worker that overruns even this.

math-verify's own timeouts use `signal.alarm` on the main thread only and swallow the
timeout (a timed-out parse looks like "no answer"); tools turn them off and use this.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# After the deadline, how often the timer signal fires again until the block has stopped.
REFIRE_SECONDS = 0.05


class StepTimeout(BaseException):
    """Raised by `deadline`. A BaseException, so that `except Exception` handlers in parsers
    and sympy do not swallow it."""


def _raise_timeout(signum: int, frame: Any) -> None:
    raise StepTimeout()


def can_interrupt() -> bool:
    """Whether `deadline` uses a signal here (the main thread) rather than a profile hook."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise `StepTimeout` in the block after `seconds` of wall-clock time, in any thread
    (see the module docstring); with `seconds` None or 0 the block runs unbounded."""
    if not seconds:
        yield
        return
    if can_interrupt():
        with _signal_deadline(seconds):
            yield
    else:
        with _profile_deadline(seconds):
            yield


@contextmanager
def _signal_deadline(seconds: float) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    started = time.monotonic()
    # The timer repeats: a StepTimeout raised where Python swallows exceptions (a gc
    # callback, a `__del__`, a weakref callback only print them) is raised again.
    caller_delay, caller_interval = signal.setitimer(signal.ITIMER_REAL, seconds, REFIRE_SECONDS)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # restored even when a last firing lands here
            signal.signal(signal.SIGALRM, previous)
            if caller_delay > 0:
                left = max(caller_delay - (time.monotonic() - started), 1e-3)
                signal.setitimer(signal.ITIMER_REAL, left, caller_interval)


@contextmanager
def _profile_deadline(seconds: float) -> Iterator[None]:
    due = time.monotonic() + seconds
    previous = sys.getprofile()
    fired = False

    def check(frame: Any, event: Any, arg: Any) -> None:
        nonlocal fired
        if previous is not None:  # a profiler (or coverage) the caller runs keeps running
            previous(frame, event, arg)
        if not fired and time.monotonic() >= due:
            fired = True
            # CPython removes a hook that raises and the exception propagates at the call
            raise StepTimeout()

    sys.setprofile(check)
    try:
        yield
    finally:
        sys.setprofile(previous)
