"""The math tool's verification step, and the loop that runs it inside a worker process.

Everything here calls math-verify (huggingface/Math-Verify): `parse` turns text into
candidate answers (`\\boxed{}`, "the answer is", the last LaTeX or plain expression,
`parser.py`) and `verify` compares candidates (`grader.py`). math-verify guards each call
with `signal.alarm`, which works only on the main thread of the main interpreter and
swallows the timeout (a timed-out parse looks like "no answer"). So we turn its timers off
(`parsing_timeout=None`, `timeout_seconds=None`) and put one deadline of our own around each
item: `setitimer` on the main thread of a worker process, whose timeout is reported as
`timeout`. The parent process (`rewardsmith.tools.math`) kills a worker that overruns even
that deadline, e.g. inside C code that never returns to the interpreter.

This module is imported by every worker, so it stays small: math-verify and rewardsmith.errors.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from multiprocessing.connection import Connection
from typing import Any, Literal

from math_verify import parse, verify

from rewardsmith.errors import InvalidReferenceError

Outcome = Literal["correct", "wrong", "no_answer", "timeout", "error"]
# ("ref", ok, reason) once per chunk, then ("item", index, outcome, reason) per completion.
Event = tuple[Any, ...]

# A worker keeps this many parsed references: a trainer revisits a prompt many times and a
# big GRPO group is split over several chunks, but one epoch of references can be large.
GOLD_CACHE_SIZE = 1024
# A short delimiter-free completion is read as one LaTeX expression ("\\frac{3}{4}i",
# "(x-2)(x+2)"), as a reference is; longer text is prose, left to math-verify's extraction.
BARE_ANSWER_MAX_CHARS = 100
# The warm-up normally takes well under a second; it must never keep a worker from starting.
STARTUP_WARM_UP_SECONDS = 20.0
# Shown in reasons; sympy's str() of a huge expression can itself take forever, so reasons
# use the matched text math-verify returns beside each expression.
ANSWER_EXCERPT_CHARS = 80

# `$`, `\(`, `\[` or `\boxed` mark where math is; an escaped dollar `\$5` is currency.
_MATH_DELIMITER = re.compile(r"(?<!\\)\$|\\\(|\\\[|\\boxed|\\fbox")
# "1,22": math-verify's expression reading is the decimal 1.22 (its own test_number_extraction),
# the LaTeX reading the set {1, 22} (MATH writes "-2,1" for two roots): both are accepted.
_DECIMAL_COMMA = re.compile(r"[-+]?\d+,\d+")
# Words of three letters or more mean prose ("The answer is 5"), except command names and
# the contents of `\text{...}`-like commands.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_TEXT_COMMAND = re.compile(r"\\(?:text|mathrm|textbf|mbox|operatorname|begin|end)\s*\{[^{}]*\}")
# Digits, separators and signs only ("1 000", "1000,99"): math-verify's expression reading
# of a number beats LaTeX's, which reads "1000,99" as a set.
_NUMBER_LIKE = re.compile(r"[\s\d.,+\-]+")


# One answer of each common shape: the first parse / verify of a shape imports sympy modules
# and builds caches (~0.05 s each), which a worker pays before it reports ready, not in a batch.
WARM_UP_ANSWERS = (
    "\\boxed{\\frac{1}{2}}",
    "\\boxed{3\\sqrt{2}}",
    "\\boxed{x^2+1}",
    "\\boxed{y=2x+1}",
    "\\boxed{(1,2]}",
    "\\boxed{\\{1,2\\}}",
    "\\boxed{\\begin{pmatrix}1\\\\2\\end{pmatrix}}",
    "\\boxed{10\\%}",
    "\\boxed{\\text{(A)}}",
    "The answer is 5.",
)


class ItemTimeout(BaseException):
    """Raised by the deadline's alarm. A BaseException, so that math-verify's and sympy's
    `except Exception` handlers do not swallow it."""


class _QuietTimeoutWarning(logging.Filter):
    """math-verify warns once that its timers are off; here `deadline` replaces them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_QuietTimeoutWarning())


def _raise_timeout(signum: int, frame: Any) -> None:
    raise ItemTimeout()


def can_interrupt() -> bool:
    """Whether `deadline` can interrupt work here: signals reach only the main thread."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise `ItemTimeout` in the block after `seconds` of wall-clock time.

    Uses `signal.setitimer` (fractional seconds), so it acts only on the main thread; in any
    other thread, or with `seconds` None, the block runs without a deadline. A timer the
    caller had set is restored afterwards, less the time spent here.
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


def _parse(text: str) -> list[Any]:
    return list(parse(text, parsing_timeout=None))


@lru_cache(maxsize=GOLD_CACHE_SIZE)
def _parse_gold_cached(reference: str) -> tuple[list[Any], str]:
    text = reference.strip()
    if not text:
        return [], "empty reference"
    if _MATH_DELIMITER.search(text):
        gold = _parse(text)
    else:
        # A bare answer ("\\frac{1}{2}", "3, 5, 7") is LaTeX; unwrapped, math-verify reads
        # only a plain expression in it ("3\\sqrt{13}" -> 3, "3, 5, 7" -> 7).
        gold = _parse(f"${text}$")
        if _DECIMAL_COMMA.fullmatch(text):
            gold += _parse(text)
    if not gold:
        return [], f"math-verify found no answer in the reference {text[:ANSWER_EXCERPT_CHARS]!r}"
    return gold, ""


def parse_gold(reference: str) -> list[Any]:
    """The reference parsed by math-verify, as `verify`'s gold (cached per process).

    A reference with math delimiters (`$`, `\\(`, `\\[`, `\\boxed`) is parsed as written;
    a bare answer is wrapped as `$...$` first. Raises `InvalidReferenceError` when
    math-verify finds nothing to compare with.
    """
    gold, problem = _parse_gold_cached(reference)
    if problem:
        raise InvalidReferenceError(problem)
    return gold


def _is_bare_answer(text: str) -> bool:
    if not text or len(text) > BARE_ANSWER_MAX_CHARS or "\n" in text:
        return False
    if _MATH_DELIMITER.search(text) or _NUMBER_LIKE.fullmatch(text):
        return False
    return _WORD.search(_TEXT_COMMAND.sub(" ", text)) is None


def extract_answer(completion: str) -> list[Any] | None:
    """The candidate answers math-verify finds in `completion` (`parse` with its defaults:
    LaTeX then plain expressions, `\\boxed{}` first), or None when it finds none.

    A short delimiter-free completion that reads as one LaTeX expression is parsed as
    `$completion$`, as a bare reference is. The caller clips long completions.
    """
    answer = _parse(completion)
    bare = completion.strip()
    if _is_bare_answer(bare):
        as_latex = _parse(f"${bare}$")
        if as_latex and not isinstance(as_latex[0], str):
            answer = as_latex
    return answer or None


def is_equivalent(answer: list[Any], gold: list[Any]) -> bool:
    """math-verify's `verify(gold, answer)` with default precision and strictness."""
    return bool(verify(gold, answer, timeout_seconds=None))


def answer_excerpt(answer: list[Any]) -> str:
    """The matched text of an extracted answer, short enough for a reason."""
    texts = [a for a in answer if isinstance(a, str)]
    text = texts[0] if texts else "?"
    return text if len(text) <= ANSWER_EXCERPT_CHARS else text[:ANSWER_EXCERPT_CHARS] + "..."


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:ANSWER_EXCERPT_CHARS]}"


def score_chunk(
    reference: str, completions: Sequence[str], timeout: float | None
) -> Iterator[Event]:
    """Verify `completions` against one reference; never raises on bad input.

    Yields `("ref", ok, reason)`, then, when the reference parsed, one
    `("item", index, outcome, reason)` per completion as soon as it is decided, so that a
    parent that must kill this process knows which items were finished. Each step (the
    reference, then each completion's extract + compare) gets its own `deadline(timeout)`.
    """
    try:
        with deadline(timeout):
            gold, problem = _parse_gold_cached(reference)
    except ItemTimeout:
        gold, problem = [], f"parsing the reference timed out after {timeout:g}s"
    except Exception as exc:
        gold, problem = [], f"math-verify failed on the reference: {_error(exc)}"
    yield ("ref", not problem, problem)
    if problem:
        return
    for index, completion in enumerate(completions):
        try:
            with deadline(timeout):
                answer = extract_answer(completion)
                if answer is None:
                    outcome: Outcome = "no_answer"
                    reason = "no answer found"
                elif is_equivalent(answer, gold):
                    outcome, reason = "correct", "equivalent to the reference"
                else:
                    outcome = "wrong"
                    reason = f"answer {answer_excerpt(answer)!r} differs from the reference"
        except ItemTimeout:
            outcome, reason = "timeout", f"verification timed out after {timeout:g}s"
        except Exception as exc:  # a bad rollout is data, not a crash
            outcome, reason = "error", _error(exc)
        yield ("item", index, outcome, reason)


def warm_up() -> None:
    """Parse and verify `WARM_UP_ANSWERS` once, so first uses do not land in a batch."""
    gold = parse_gold("\\frac{1}{2}")
    for text in WARM_UP_ANSWERS:
        answer = extract_answer(text)
        if answer is not None:
            is_equivalent(answer, gold)


def main(fd: int) -> None:
    """Entry point of a worker started by the math tool: `fd` is its end of a socket pair."""
    worker_main(Connection(fd))


def worker_main(conn: Connection) -> None:
    """A worker process: receive `(reference, completions, timeout)` chunks, send events.

    Work runs on the process's main thread, where `deadline` can interrupt it. `None` or a
    closed connection (the parent exited) ends the loop.
    """
    # Ctrl-C reaches the whole process group; the parent decides when workers stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deadline(STARTUP_WARM_UP_SECONDS):
            warm_up()
    except (ItemTimeout, Exception):  # only a speed-up: never a reason not to start
        pass
    conn.send(("ready", os.getpid()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        reference, completions, timeout = message
        for event in score_chunk(reference, completions, timeout):
            conn.send(event)
