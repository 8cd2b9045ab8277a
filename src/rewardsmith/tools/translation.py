"""Translation: sentence-level chrF (default) or BLEU against reference translations.

Rule followed: sacrebleu's sentence-level metrics (Post 2018, "A Call for Clarity in
Reporting BLEU Scores"): chrF with sacrebleu's defaults (Popović 2015: character 6-grams,
beta 2) and BLEU with `effective_order=True`, the setting sacrebleu recommends for single
sentences (it ignores n-gram orders longer than the hypothesis instead of zeroing the score).
The score is the metric divided by 100, in [0, 1]; the raw metric is the only component.

The reference is a plain string or a JSON list of strings (several reference translations,
scored as sacrebleu's multi-reference). The translation is the marked answer of the
completion (`<answer>` tags, `\\boxed{}`, a `####` or "Final answer:" label that starts its
line: `read_translations`), else a fenced block that ends it, else the whole completion;
stripped of whitespace and of a leading label such as "Translation:" or "English
translation:". Several marked translations that differ are a hedge and score 0.0.
"""

from __future__ import annotations

import json
import re

from sacrebleu.metrics import BLEU, CHRF

from rewardsmith.answers import last_fenced, lookalikes_mapped, marked_answers, visible
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Hedged, Verdict
from rewardsmith.tools.reference_shape import check_reference_kind
from rewardsmith.types import ToolSpec

METRICS = ("chrf", "bleu")
# A label is at most a few words before "translation:", within this many characters of
# the start; the pattern only ever sees them (a whitespace-heavy completion once made it
# polynomial).
LABEL_CHARS = 80
_LABEL_RE = re.compile(
    r"(?:\*\*|__)?(?:[\w-]{1,30}[ \t]{1,3}){0,2}(?:translation|translated[ \t]{1,3}text)"
    r"[ \t]{0,3}(?:\*\*|__)?[ \t]{0,3}:[ \t]{0,3}(?:\*\*|__)?",
    re.IGNORECASE,
)


def strip_label(text: str) -> str:
    """`text` without surrounding whitespace and a leading "Translation:"-style label."""
    text = text.strip()
    label = _LABEL_RE.match(text[:LABEL_CHARS])
    return text[label.end() :].strip() if label is not None else text


# Answer phrases read as labels only at the start of a line ("Final answer: ..."): inside a
# translation, "the answer is" is text. These and `####` run to the next marker.
_PHRASES = ("final_answer", "answer_is", "label")
_RUN_ON = (*_PHRASES, "hashes")


def read_translations(completion: str) -> list[str]:
    """The translations a completion offers: each marked answer (`<answer>` tags,
    `\\boxed{}`, or a `####` / "Final answer:"-style label that starts its line, then
    everything up to the next marker), else a fenced block that ends the completion, else
    the whole completion; without "Translation:"-style labels. Several that differ are a
    hedge."""
    completion = visible(completion)
    mapped = lookalikes_mapped(completion)  # a marker in look-alike letters is one too
    marks = [m for m in marked_answers(mapped) if _is_label(mapped, m)]
    out: list[str] = []
    for i, (style, start, end, _) in enumerate(marks):
        if style in _RUN_ON:  # a translation runs on over lines and sentences
            end = marks[i + 1][3] if i + 1 < len(marks) else len(completion)
        text = strip_label(completion[start:end])
        if text and text not in out:
            out.append(text)
    if marks:
        return out
    fenced = last_fenced(completion)
    if fenced is not None:
        return [strip_label(completion[fenced[0] : fenced[1]])]
    return [strip_label(completion)]


_LEAD = re.compile(r"[ \t*_#>]*(?:(?:the|my|our|so|thus|hence|final)[ \t]+)*", re.IGNORECASE)


def _is_label(text: str, marker: tuple[str, int, int, int]) -> bool:
    if marker[0] not in _PHRASES:
        return True
    line_start = text.rfind("\n", 0, marker[3]) + 1
    lead = _LEAD.match(text, line_start, marker[3])
    return lead is not None and lead.end() == marker[3]


class TranslationTool(AnswerVerifier):
    """Sentence chrF or BLEU of the completion against one or more references, in [0, 1]."""

    def __init__(self, spec: ToolSpec, *, metric: str = "chrf") -> None:
        super().__init__(spec)
        if metric not in METRICS:
            raise ConfigError(f"translation metric must be one of {METRICS}, got {metric!r}")
        self.metric = metric
        # Built once per tool (they hold their settings, and pickle into worker processes).
        self._scorer: CHRF | BLEU = CHRF() if metric == "chrf" else BLEU(effective_order=True)

    def parse_reference(self, reference: str) -> list[str]:
        """One reference string, or a JSON list of several."""
        text = reference.strip()
        if not text:
            raise InvalidReferenceError("empty reference")
        foreign = check_reference_kind(
            "translation", "a reference translation or a JSON list of them", text, string_lists=True
        )
        if foreign:
            raise InvalidReferenceError(foreign)
        if text.startswith("["):
            try:
                refs = json.loads(text)
            except json.JSONDecodeError:
                return [text]  # a translation that happens to start with "["
            if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
                raise InvalidReferenceError("a JSON reference must be a list of strings")
            refs = [r.strip() for r in refs if r.strip()]
            if not refs:
                raise InvalidReferenceError("the JSON list of references holds no text")
            return refs
        return [text]

    def extract(self, completion: str) -> str | Hedged | None:
        texts = [t for t in read_translations(completion) if t]
        if len(texts) > 1:
            return Hedged(tuple(t[:40] for t in texts))
        return texts[0] if texts else None

    def compare(self, answer: str, reference: list[str]) -> Verdict:
        raw = float(self._scorer.sentence_score(answer, reference).score)
        score = min(1.0, max(0.0, raw / 100.0))
        refs = f" ({len(reference)} references)" if len(reference) > 1 else ""
        return Verdict(
            score, components={self.metric: raw}, reason=f"{self.metric} {raw:.1f}{refs}"
        )
