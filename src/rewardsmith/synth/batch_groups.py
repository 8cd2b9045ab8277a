"""Synthesis from a scoring batch: which samples form one task, and what the batch says
about a verifier built for it.

*Grouping* (`group_keys`): samples without a `task` field are one task when their prompts
share a template and their references a shape. The template is the prompt with its varying
parts masked (numbers, quoted text, bracketed lists, what follows a colon on its line), cut
to its first `TEMPLATE_WORDS` words, keeping the words that more than half of the batch's
prompts of the same reference shape share; the shape masks
each run of digits as `9` and each run of letters as `a`, and collapses a repeated item
(`a, a, a` is `a(, a)*`), so `2019-10-23` and `2021-01-05` share `9-9-9`. The router's
cluster signature splits a family of free-form prompts into groups of 1-3; this key keeps
one task together so that it has enough lines to synthesize from.

*Batch evidence* (`batch_flag`): a verifier the gate admitted is still judged on the
batch's own completions: when it pays 0 to every completion of the batch, or to every one
written in some answer style while it pays completions in other styles, the verifier is
flagged with the reason (an event and a warning): the batch suggests it refuses right
answers, which in training punishes a policy for a style.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

from rewardsmith.answers import read_final
from rewardsmith.types import Sample

TEMPLATE_WORDS = 12
# A style needs this many completions before "all of them got 0" means anything.
MIN_STYLE_COMPLETIONS = 3
MIN_BATCH_COMPLETIONS = 4

_QUOTED = re.compile(r"\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'|`[^`\n]{0,200}`")
_BRACKETED = re.compile(r"\[[^\]\n]{0,400}\]|\([^)\n]{0,200}\)|\{[^}\n]{0,400}\}")
_NUMBERS = re.compile(r"\d+(?:[.,]\d+)*")
_AFTER_COLON = re.compile(r":[^\n]*")
_WORD = re.compile(r"[A-Za-z#]+")


def prompt_template(prompt: str) -> str:
    """The prompt's fixed wording (see module docstring)."""
    text = _QUOTED.sub("#", prompt[:2000])
    text = _BRACKETED.sub("#", text)
    text = _NUMBERS.sub("#", text)
    text = _AFTER_COLON.sub(":#", text)
    words = _WORD.findall(text.lower())
    return " ".join(words[:TEMPLATE_WORDS])


def reference_shape(reference: str | None) -> str:
    """The reference's shape: digits `9`, letters `a`, repeated items collapsed."""
    if reference is None or not reference.strip():
        return "-"
    text = re.sub(r"[0-9]+", "9", reference.strip()[:400])
    text = re.sub(r"[^\W\d_]+", "a", text)
    text = re.sub(r"\s+", " ", text)
    # "a, a, a" -> "a(, a)*": any number of items is one shape
    return re.sub(r"(\w)((?:[,;] ?| )\1)+", r"\1(\2)*", text)


def group_keys(samples: Sequence[Sample]) -> list[str]:
    """One key per task for samples without a `task` field: the reference shape, and the
    prompt's template words that more than half the prompts of that shape share (so "Convert
    March 5" and "Convert October 23" agree on "convert ... to an iso date")."""
    shapes = [reference_shape(s.reference) for s in samples]
    words = [prompt_template(s.prompt_text()).split() for s in samples]
    common: dict[str, set[str]] = {}
    for shape in set(shapes):
        members = [w for w, sh in zip(words, shapes, strict=True) if sh == shape]
        counts = Counter(word for w in members for word in set(w))
        common[shape] = {word for word, n in counts.items() if 2 * n > len(members)}
    keys = []
    for shape, w in zip(shapes, words, strict=True):
        template = " ".join(word for word in w if word in common[shape])
        key = f"{template}|{shape}"
        keys.append("template:" + hashlib.sha1(key.encode()).hexdigest()[:12])
    return keys


def batch_flag(samples: Sequence[Sample], scores: Sequence[float | None]) -> str:
    """Why the batch's own completions suggest the verifier refuses right answers (see
    module docstring), or "" when they do not."""
    paid = [(s, (v or 0.0) > 0.0) for s, v in zip(samples, scores, strict=True)]
    if len(paid) >= MIN_BATCH_COMPLETIONS and not any(p for _, p in paid):
        return f"it paid 0 to every one of the batch's {len(paid)} completions"
    by_style: dict[str, list[bool]] = {}
    for sample, was_paid in paid:
        found = read_final(sample.completion or "")
        by_style.setdefault(found[0] if found else "none", []).append(was_paid)
    if not any(any(v) for v in by_style.values()):
        return ""
    refused = Counter(
        {
            style: len(v)
            for style, v in by_style.items()
            if len(v) >= MIN_STYLE_COMPLETIONS and not any(v) and style != "none"
        }
    )
    if not refused:
        return ""
    names = ", ".join(f"{style} ({n})" for style, n in refused.most_common())
    return f"it paid 0 to every completion of the batch answering in these styles: {names}"
