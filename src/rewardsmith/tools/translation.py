"""Translation: sentence-level chrF (default) or BLEU against reference translations.

Rule followed: sacrebleu's sentence-level metrics (Post 2018, "A Call for Clarity in
Reporting BLEU Scores"): chrF with sacrebleu's defaults (Popović 2015: character 6-grams,
beta 2) and BLEU with `effective_order=True`, the setting sacrebleu recommends for single
sentences (it ignores n-gram orders longer than the hypothesis instead of zeroing the score).
The score is the metric divided by 100, in [0, 1]; the raw metric is the only component.

The reference is a plain string or a JSON list of strings (several reference translations,
scored as sacrebleu's multi-reference). The completion is stripped of whitespace and of a
leading label such as "Translation:" or "English translation:".
"""

from __future__ import annotations

import json
import re

from sacrebleu.metrics import BLEU, CHRF

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Verdict
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

    def extract(self, completion: str) -> str | None:
        text = strip_label(completion)
        return text or None

    def compare(self, answer: str, reference: list[str]) -> Verdict:
        raw = float(self._scorer.sentence_score(answer, reference).score)
        score = min(1.0, max(0.0, raw / 100.0))
        refs = f" ({len(reference)} references)" if len(reference) > 1 else ""
        return Verdict(
            score, components={self.metric: raw}, reason=f"{self.metric} {raw:.1f}{refs}"
        )
