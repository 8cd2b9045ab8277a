"""Reading answers: the final answer of a completion in every common style, and hedges.

One module for every verifier, built-in or synthesized (`final.py`: styles and markers;
`hedges.py`: alternatives, negations, value runs; `reading.py`: the one precedence a
synthesized verifier reads its answer by). Both are plain functions over `re`, so
`embeddable_source()` can paste them into a generated reward program that runs in the
sandbox, and it reads answers exactly as the built-in tools do.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rewardsmith.answers.final import (
    STYLE_NAMES,
    STYLES,
    clean,
    final_answer,
    last_fenced,
    last_line_span,
    lookalikes_mapped,
    marked_answers,
    raw_markers,
    render_style,
    visible,
    without_prompt_copies,
)
from rewardsmith.answers.hedges import (
    alternatives,
    first_offered,
    hedge_reason,
    listed_above,
    negated,
    read_answers,
    same_key,
    split_for,
    split_top_level,
    value_run,
)
from rewardsmith.answers.reading import read_final, same_after_sentence_end

__all__ = [
    "STYLES",
    "STYLE_NAMES",
    "alternatives",
    "clean",
    "embeddable_source",
    "final_answer",
    "first_offered",
    "hedge_reason",
    "last_fenced",
    "last_line_span",
    "lookalikes_mapped",
    "listed_above",
    "marked_answers",
    "negated",
    "raw_markers",
    "read_answers",
    "read_final",
    "render_style",
    "same_after_sentence_end",
    "same_key",
    "split_for",
    "split_top_level",
    "value_run",
    "visible",
    "without_prompt_copies",
]

_EMBEDDED = ("final.py", "hedges.py", "reading.py")


@lru_cache(maxsize=1)
def embeddable_source() -> str:
    """The source of `final` and `hedges` as one module for a generated program: their
    imports of each other dropped (both are pasted), nothing else changed. It passes the
    sandbox's static check and runs in its restricted namespace (a test keeps it so)."""
    here = Path(__file__).resolve().parent
    parts = []
    for name in _EMBEDDED:
        text = (here / name).read_text(encoding="utf-8")
        parts.append(_drop_own_imports(text))
    return "\n\n".join(parts)


def _drop_own_imports(source: str) -> str:
    """`source` without its `from rewardsmith... import (...)` statements."""
    out: list[str] = []
    skipping = False
    for line in source.splitlines():
        if line.startswith("from rewardsmith."):
            skipping = line.rstrip().endswith("(")
            continue
        if skipping:
            skipping = not line.startswith(")")
            continue
        out.append(line)
    return "\n".join(out) + "\n"
