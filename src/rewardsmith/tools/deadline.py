"""A wall-clock deadline around one verification step, where Python can interrupt it.

Verifiers that call parsers with super-linear corners (sympy, math-verify's LaTeX grammar)
bound each step: the reference, then each completion's extract + compare. Signals are the
only way to interrupt pure-Python work, and they reach only the main thread of the main
interpreter; math-verify's own timeouts use `signal.alarm` the same way and swallow the
timeout (a timed-out parse looks like "no answer"). `deadline` uses `setitimer` (fractional
seconds) and raises `StepTimeout`, a `BaseException`, so library code's `except Exception`
handlers do not swallow it. Work that must be bounded from any thread runs in a worker
process, on that process's main thread (`rewardsmith.tools.verifier_pool`), whose parent
kills it when even this deadline does not fire (stuck in C code, stopped).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class StepTimeout(BaseException):
    """Raised by `deadline`'s alarm. A BaseException, so that `except Exception` handlers in
    parsers and sympy do not swallow it."""


def _raise_timeout(signum: int, frame: Any) -> None:
    raise StepTimeout()


def can_interrupt() -> bool:
    """Whether `deadline` can interrupt work here: signals reach only the main thread."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise `StepTimeout` in the block after `seconds` of wall-clock time.

    Acts only on the main thread; in any other thread, or with `seconds` None, the block
    runs without a deadline. A timer the caller had set is restored afterwards, less the
    time spent here.
    """
    if not seconds or not can_interrupt():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    started = time.monotonic()
    caller_delay, caller_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if caller_delay > 0:
            left = max(caller_delay - (time.monotonic() - started), 1e-3)
            signal.setitimer(signal.ITIMER_REAL, left, caller_interval)
