"""What the router knows about one *prompt group*: the samples of a batch that share their
prompt, reference and task (GRPO's G completions of one prompt are one group).

A group is the unit of decision. Its evidence is a function of the group's multiset of
samples, never of their order: prompt and reference are shared, and what the completions
say is averaged (sorted before summing, so float rounding cannot depend on order either),
and a marker counts as seen in the completions when at least half of them carry it. One
completion therefore cannot swing a decision, and a policy that writes odd completions
moves its prompt's decision only as far as all its completions agree.
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from rewardsmith.router.content import completion_fit, math_notation, word_problem
from rewardsmith.router.features import (
    MAX_FEATURE_CHARS,
    NON_LATIN_LIMIT,
    SampleFeatures,
    markers,
    prompt_parts,
)
from rewardsmith.router.language import LanguageEvidence, language_evidence, prompt_language
from rewardsmith.types import Sample

# For a reference of each format, the tool formats that can read it and whose answer form
# `completion_fit` knows (a number reference: gsm8k-like and math-verify tools).
COMPLETION_FORMATS: dict[str, tuple[str, ...]] = {
    "number": ("number", "latex"),
    "latex": ("latex",),
    "choice": ("choice",),
    "json_entry": ("json_entry",),
    "unit_tests": ("unit_tests",),
    "free_text": ("free_text",),
}
# Prompt-level evidence kept in memory by (prompt, reference): GRPO sends each prompt G
# times per step and again every epoch.
CONTENT_CACHE_SIZE = 50_000


def group_key(sample: Sample) -> str:
    """The key of a sample's group: its task, prompt and reference, exactly."""
    return json.dumps(
        [sample.task, sample.prompt, sample.reference], ensure_ascii=False, sort_keys=True
    )


@dataclass(frozen=True)
class PromptContent:
    """Evidence from a group's prompt and reference (see content.py)."""

    language: LanguageEvidence = field(default_factory=LanguageEvidence)
    math: float = 0.0  # mathematics in the prompt, 0..1
    word_problem: float = 0.0  # an everyday story with quantities, 0..1
    foreign: bool = False  # the prompt's main language is not English (MiniLM reads English)


@dataclass(frozen=True)
class GroupEvidence:
    """Everything the logit reads about a group besides the prompt embedding."""

    features: SampleFeatures  # prompt/reference features (shared by the group)
    reference_markers: frozenset[str]
    completion_markers: frozenset[str]  # carried by at least half of the completions
    content: PromptContent
    completion_fit: dict[str, float]  # per tool reference format: mean over completions
    size: int = 1

    @property
    def seen_markers(self) -> frozenset[str]:
        return self.features.prompt_markers | self.completion_markers | self.reference_markers


class ContentCache:
    """`PromptContent` by (prompt text, reference, format), least recently used dropped."""

    def __init__(self, size: int = CONTENT_CACHE_SIZE) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str, str], PromptContent] = OrderedDict()

    def get(self, text: str, reference: str | None, f: SampleFeatures) -> PromptContent:
        key = (text, reference or "", f.ref_format)
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        content = prompt_content(text, reference, f)
        self._items[key] = content
        if len(self._items) > self.size:
            self._items.popitem(last=False)
        return content


def prompt_content(text: str, reference: str | None, f: SampleFeatures) -> PromptContent:
    """Language relation, math notation and prompt language of one prompt and reference.
    The language of a reference is read only where it matters (free text)."""
    clipped = text[:MAX_FEATURE_CHARS]
    if f.ref_format == "free_text" and reference:
        language = language_evidence(clipped, reference[:MAX_FEATURE_CHARS])
        main = language.prompt
    else:
        language = LanguageEvidence()
        # the prompt's language matters where it decides between tools and synthesize; a
        # dataset entry or unit tests decide alone, other JSON and option indexes have no tool
        decided = f.ref_format in ("json_entry", "unit_tests", "json", "choice_index")
        main = "" if decided or f.non_latin > NON_LATIN_LIMIT else prompt_language(clipped)
    foreign = f.non_latin > NON_LATIN_LIMIT or (bool(main) and main != "en")
    return PromptContent(
        language=language,
        math=math_notation(clipped),
        word_problem=word_problem(clipped),
        foreign=foreign,
    )


def group_evidence(
    samples: Sequence[Sample],
    feats: Sequence[SampleFeatures],
    cache: ContentCache | None = None,
) -> GroupEvidence:
    """The evidence of one group (samples sharing prompt, reference and task)."""
    lead, f = samples[0], feats[0]
    text, _, _ = prompt_parts(lead)
    content = (cache or ContentCache(1)).get(text, lead.reference, f)
    counts: Counter[str] = Counter()
    for g in feats:
        counts.update(g.completion_markers)
    common = frozenset(m for m, n in counts.items() if 2 * n >= len(feats))
    lang = content.language
    fits: dict[str, float] = {}
    for fmt in COMPLETION_FORMATS.get(f.ref_format, ()):
        if fmt == "free_text" and not lang.reference:
            continue
        values = sorted(
            completion_fit(fmt, s.completion, lang.reference, lang.other_units) for s in samples
        )
        fits[fmt] = sum(values) / len(values)
    ref_markers = markers(lead.reference[-500:]) if lead.reference else frozenset()
    return GroupEvidence(f, ref_markers, common, content, fits, len(samples))


def mean_rows(rows: Sequence[Sequence[float]]) -> list[float]:
    """Column means of equally long rows (summed in the given order)."""
    n = len(rows)
    return [sum(col) / n for col in zip(*rows, strict=True)]
