"""math: final-answer equivalence for competition math (MATH, AIME, AMC), built on math-verify.

Rule followed: math-verify (huggingface/Math-Verify). `extract` reads the answers the
clipped completion offers (`rewardsmith.tools.math_answers`: every marked answer, `\\boxed{}`,
`<answer>` tags, `####`, "the answer is"; else a bare final line; else math-verify's `parse`
of the prose, `parser.py`); `compare` is math-verify's `verify(gold, answer)` against the
parsed reference (`grader.py`) for each of them. Hedges score 0.0 (reason `hedged: ...`):
against a reference with one value, every answer offered must match ("The answer is 2 or
3." and `\\boxed{2} \\boxed{3}` offer two); against a set, tuple or interval the answers are
compared together ("x = 2 or x = 3" for the roots 2, 3). Answers under a negation ("It is
not 2.") and the question given back are not answers. A bare reference (`\\frac{1}{2}`, `3, 5, 7`) is wrapped as `$...$`
before parsing, which is how math-verify reads all of it: unwrapped it reads only a plain
expression (`3, 5, 7` -> 7). These steps and their reasons live here and nowhere else.

How a batch is scored: `AnswerVerifier.score` groups it by reference, each distinct
reference parsed once (GRPO groups share one), each distinct clipped completion verified
once against it. `verify_groups` sends the groups to a small pool of worker processes
(`rewardsmith.tools.verifier_pool`: fresh interpreters, safe to start from a trainer with
threads and from a script without a `__main__` guard), where each worker runs this tool's
own `check_group` on its main thread. The pool starts on first use (or `start()`), is
reused, and stops on `close()`, when the tool is collected, or at exit.

Deadlines. math-verify's own timeouts use `signal.alarm`, which works only on the main
thread and swallows the timeout (a timed-out parse looks like "no answer"), so they are off
(`parsing_timeout=None`, `timeout_seconds=None`) and each step (the reference, then each
completion's extract + compare) gets a `timeout_seconds` deadline of our own
(`rewardsmith.tools.deadline`); a late step scores 0.0 with status `timeout`. The pool also
enforces `timeout_seconds + verifier_pool.KILL_GRACE_SECONDS` per step from any thread: a
worker that overruns (stuck in C code, stopped) is killed and replaced, its current item
scores `timeout`, the rest is re-sent, and the caller never waits longer.
`workers=0` scores in the calling process: no start-up cost, and each step still has its
deadline in any thread (a timer signal on the main thread, a profile hook elsewhere:
`rewardsmith.tools.deadline`), but a step stuck inside one C call cannot be stopped there.

Missing, empty or unparseable references, and references of another tool's kind (a JSON list
of unit tests, a HumanEval record), give `invalid_reference` (score None), a completion
without an answer scores 0.0 with reason "no answer found"; no input makes `score` raise.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from rewardsmith.answers import hedge_reason
from rewardsmith.config import clip_tail
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Group, Verdict
from rewardsmith.tools.math_answers import (
    MAX_CANDIDATES,
    MathReading,
    as_latex,
    as_one,
    prose_answer_stands,
    prose_latex,
    read_math,
    single_valued,
    without_thousands,
)
from rewardsmith.tools.reference_shape import check_reference_kind
from rewardsmith.tools.verifier_pool import VerifierPool
from rewardsmith.types import Reward, ToolSpec

# What a math reference looks like, for the reason given when it is something else.
MATH_REFERENCE = "a final answer (LaTeX like '\\frac{1}{2}', or a number)"
# math-verify's own default for one parse or one verify call.
DEFAULT_TIMEOUT_SECONDS = 5.0
# A worker keeps this many parsed references: a trainer revisits a prompt many times and a
# big GRPO group is split over several chunks, but one epoch of references can be large.
GOLD_CACHE_SIZE = 1024
# Shown in reasons; sympy's str() of a huge expression can itself take forever, so reasons
# use the matched text math-verify returns beside each expression.
ANSWER_EXCERPT_CHARS = 80

# `$`, `\(`, `\[` or `\boxed` mark where math is; an escaped dollar `\$5` is currency.
_MATH_DELIMITER = re.compile(r"(?<!\\)\$|\\\(|\\\[|\\boxed|\\fbox")
# "1,22": math-verify's expression reading is the decimal 1.22 (its own test_number_extraction),
# the LaTeX reading the set {1, 22} (MATH writes "-2,1" for two roots): both are accepted.
_DECIMAL_COMMA = re.compile(r"[-+]?\d+,\d+")

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


class _QuietTimeoutWarning(logging.Filter):
    """math-verify warns once that its timers are off; our own deadline replaces them."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Timeout is disabled" not in record.getMessage()


for _name in ("math_verify.parser", "math_verify.grader"):
    logging.getLogger(_name).addFilter(_QuietTimeoutWarning())


def default_workers() -> int:
    """min(2, usable CPUs): verification is CPU-bound and trainers need their cores too."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return min(2, cpus)


def _math_verify() -> Any:
    """math-verify (with sympy and its LaTeX grammar, ~1 s to import), imported where it runs:
    a tool that scores in its own process imports it when built (never inside a step's
    deadline), a worker when it builds its tool; a process that only hands groups to
    workers (a routed `score`) never imports it."""
    import math_verify

    return math_verify


def parse(text: str, **kwargs: Any) -> Any:
    """math-verify's `parse` (see `_math_verify`)."""
    return _math_verify().parse(text, **kwargs)


def verify(gold: Any, answer: Any, **kwargs: Any) -> bool:
    """math-verify's `verify` (see `_math_verify`)."""
    return bool(_math_verify().verify(gold, answer, **kwargs))


def _read_prose(reading: MathReading) -> list[Any]:
    """What a prose reading answers: its final expression read whole as LaTeX when it holds
    undelimited LaTeX ("3\\sqrt{13}", "\\sqrt{51}/\\frac{14}{3}"), else math-verify's reading."""
    latex = prose_latex(reading)
    return (_parse(latex) if latex is not None else []) or _parse(reading.text)


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


def _answer_excerpt(answer: list[Any]) -> str:
    """The matched text of an extracted answer, short enough for a reason."""
    texts = [a for a in answer if isinstance(a, str)]
    text = texts[0] if texts else "?"
    return text if len(text) <= ANSWER_EXCERPT_CHARS else text[:ANSWER_EXCERPT_CHARS] + "..."


@dataclass(frozen=True)
class MathAnswer:
    """What `MathTool.extract` reads: math-verify's parse of the whole text (possibly empty)
    and the answers the completion offers."""

    parsed: list[Any]
    reading: MathReading


class MathTool(AnswerVerifier):
    """Math final-answer equivalence with math-verify; see the module docstring.

    `timeout_seconds` bounds each step (reference parse, or one completion's extract +
    compare); `workers` is the number of worker processes (0: score in the calling process).
    """

    blanks_prompt_copies = True  # an echoed question's numbers are no answer

    def __init__(
        self,
        spec: ToolSpec | None = None,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        workers: int | None = None,
    ) -> None:
        super().__init__(
            spec
            or ToolSpec(
                name="math", domains=("math",), reference_format="latex", ref_format="latex"
            )
        )
        if not (isinstance(timeout_seconds, int | float) and math.isfinite(timeout_seconds)):
            raise ConfigError(f"math: timeout_seconds must be a number, got {timeout_seconds!r}")
        if timeout_seconds <= 0:
            raise ConfigError(f"math: timeout_seconds must be > 0, got {timeout_seconds!r}")
        workers = default_workers() if workers is None else workers
        if not isinstance(workers, int) or workers < 0:
            raise ConfigError(f"math: workers must be an integer >= 0, got {workers!r}")
        self.timeout_seconds = float(timeout_seconds)
        self.step_timeout = self.timeout_seconds
        self.workers = workers
        if workers == 0:  # it scores here: import it now, outside any step's deadline
            _math_verify()
        self._lock = threading.Lock()
        self._pool: VerifierPool | None = None

    # -- the verifier steps (also what each worker process runs) --

    def parse_reference(self, reference: str) -> list[Any]:
        """The reference parsed by math-verify, as `verify`'s gold (cached per process).

        A reference with math delimiters (`$`, `\\(`, `\\[`, `\\boxed`) is parsed as written;
        a bare answer is wrapped as `$...$` first. Raises `InvalidReferenceError` when the
        reference is another tool's kind (unit tests, a HumanEval record: see
        `rewardsmith.tools.reference_shape`), or math-verify finds nothing to compare with, or
        fails on it.
        """
        foreign = check_reference_kind("math", MATH_REFERENCE, reference)
        if foreign:
            raise InvalidReferenceError(foreign)
        try:
            gold, problem = _parse_gold_cached(reference)
        except Exception as exc:
            reason = f"math-verify failed on the reference: {self.error_reason(exc)}"
            raise InvalidReferenceError(reason) from exc
        if problem:
            raise InvalidReferenceError(problem)
        return gold

    def extract(self, completion: str) -> MathAnswer | None:
        """What the clipped `completion` answers (`rewardsmith.tools.math_answers.read_math`):
        the answers its markers or its bare final answer offer, else math-verify's own
        reading of its prose (`parse` with its defaults: LaTeX then plain expressions); None
        when it answers nothing (or only under a negation, or only with the question)."""
        reading = read_math(clip_tail(completion))
        if reading.how != "prose":
            return MathAnswer([], reading) if reading.groups else None
        if not prose_answer_stands(reading):
            return None
        answer = _read_prose(reading)
        if not answer:
            return None
        return MathAnswer(answer, reading)

    def compare(self, answer: MathAnswer, reference: Any) -> Verdict:
        """math-verify's `verify(gold, answer)` with default precision and strictness, for
        every answer offered (see `rewardsmith.tools.math_answers`): a reference with one
        value is matched only when each of them matches it; a reference with several values
        is matched by the answers together."""
        offered = answer.reading.candidates
        if len(offered) > MAX_CANDIDATES:
            return Verdict(0.0, reason=hedge_reason(offered))
        if not offered:  # prose: math-verify's reading of it
            if verify(reference, answer.parsed, timeout_seconds=None) or (
                single_valued(reference) and self._plain_line_matches(reference, answer)
            ):
                return Verdict(1.0, reason="equivalent to the reference")
            return Verdict(
                0.0, reason=f"answer {_answer_excerpt(answer.parsed)!r} differs from the reference"
            )
        if single_valued(reference):
            if all(self._matches_one(reference, c) for c in offered):
                return Verdict(1.0, reason="equivalent to the reference")
        elif (
            self._matches(reference, as_one(offered))
            or self._groups_agree(answer, reference)
            # one answer math-verify reads better whole ("between $12$ and $13$")
            or (len(answer.reading.groups) == 1 and self._whole_matches(reference, answer))
        ):
            return Verdict(1.0, reason="equivalent to the reference")
        if len(offered) > 1:
            return Verdict(0.0, reason=hedge_reason(offered))
        return Verdict(
            0.0, reason=f"answer {offered[0][:ANSWER_EXCERPT_CHARS]!r} differs from the reference"
        )

    def _matches_one(self, gold: Any, candidate: str) -> bool:
        """Whether one candidate is the one-valued reference, also read with its thousands
        separators dropped ("x = 1,000" for 1000: a set is never a one-valued answer)."""
        plain = without_thousands(candidate)
        return self._matches(gold, as_latex(candidate)) or (
            plain is not None and self._matches(gold, as_latex(plain))
        )

    def _plain_line_matches(self, gold: Any, answer: MathAnswer) -> bool:
        """Whether the prose's last line, its thousands separators dropped, is the answer
        ("So we get $x = 1,000$." for 1000)."""
        plain = without_thousands(answer.reading.final_line)
        if plain is None:
            return False
        reading = replace(answer.reading, text=plain, final_line=plain)
        return bool(verify(gold, _read_prose(reading), timeout_seconds=None))

    def _matches(self, gold: Any, latex: str) -> bool:
        return bool(verify(gold, _parse(latex), timeout_seconds=None))

    def _whole_matches(self, gold: Any, answer: MathAnswer) -> bool:
        """Whether math-verify's reading of the whole answer matches, when that reading holds
        every value offered (a set or interval of them): "-2,1, 15x - 80" read whole is the
        decimal -2.1, one value of three, and must not pay a several-valued "-2,1"."""
        from sympy import FiniteSet, Interval, Tuple

        parsed = _parse(answer.reading.text)
        if not parsed:
            return False
        value = parsed[0]
        if isinstance(value, FiniteSet | Tuple | list | tuple):
            size = len(value)
        elif isinstance(value, Interval):
            size = 2
        else:
            size = 1
        return size >= len(answer.reading.candidates) and bool(
            verify(gold, parsed, timeout_seconds=None)
        )

    def _groups_agree(self, answer: MathAnswer, gold: Any) -> bool:
        """Whether several marked answers are each the (several-valued) reference."""
        groups = answer.reading.groups
        return len(groups) > 1 and all(self._matches(gold, as_one(group)) for group in groups)

    def error_reason(self, exc: Exception) -> str:
        # Clipped: sympy's messages can hold a whole expression.
        return f"{type(exc).__name__}: {str(exc)[:ANSWER_EXCERPT_CHARS]}"

    def warm_up(self) -> None:
        """Parse and verify `WARM_UP_ANSWERS` once, so first uses do not land in a batch."""
        gold = self.parse_reference("\\frac{1}{2}")
        for text in WARM_UP_ANSWERS:
            answer = self.extract(text)
            if answer is not None:
                self.compare(answer, gold)

    # -- batches --

    def verify_groups(self, groups: Sequence[Group]) -> list[list[Reward]]:
        if self.workers == 0:
            return super().verify_groups(groups)
        with self._lock:  # one batch at a time per tool; the pool is not re-entrant
            return self._worker_pool().verify(groups)

    def _worker_pool(self) -> VerifierPool:
        if self._pool is None:
            self._pool = VerifierPool(
                self.workers,
                self.spec,
                f"{type(self).__module__}:{type(self).__qualname__}",
                {"timeout_seconds": self.timeout_seconds, "workers": 0},
                self.timeout_seconds,
            )
        return self._pool

    def start(self) -> None:
        """Start the worker pool now and wait until it is ready (otherwise the first `score`
        starts it, ~1 s); nothing to do with `workers=0`."""
        if self.workers == 0:
            return
        with self._lock:
            self._worker_pool().start()

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
