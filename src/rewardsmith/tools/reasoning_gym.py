"""Score any reasoning-gym task with reasoning-gym's own scorer.

reasoning-gym (open-thought/reasoning-gym) generates procedural tasks, and every dataset
class knows how to grade an answer: `dataset.score_answer(answer, entry) -> float in [0, 1]`.
This tool only finds the answer in the completion and hands it, with the entry, to that
scorer; it never re-implements a task's grading.

The sample's reference carries the dataset entry as JSON, in one of two forms:

- the entry itself, as `create_dataset(...)[i]` returns it:
  `{"question": ..., "answer": ..., "metadata": {"source_dataset": NAME, ...}}`;
- a wrapper `{"dataset": NAME, "entry": {...}}`, optionally with `"config": {...}`, the
  dataset's config fields (`create_dataset(NAME, **config)`).

Most scorers read only the entry, so the scorer is taken from the dataset with its default
config (`reasoning_gym.get_score_answer_fn`, built once per dataset name). A few read their
config too (`decimal_arithmetic` rounds to `max_num_decimal_places`, `time_intervals` and
`polynomial_equations` use tolerances, `puzzle24` checks the number range): pass
`"config"` when the entries were generated with a non-default config of those.

The answer is the text inside the `<answer>...</answer>` tags (reasoning-gym's convention;
the same pairing as its `reasoning_gym.utils.extract_answer`, in linear time). Without
tags, `fallback` decides: `"last_line"` (default) reads the final answer in any common style
(`rewardsmith.answers`: "The answer is ...", `\\boxed{}`, "Final answer: ..."), else the
last non-empty line, where chat models put a bare final answer; `"all"` takes the whole
stripped completion (for multi-line answers such as grids given without tags); `"none"`
scores 0, as reasoning-gym's own evaluation does.

Hedges score 0.0 (reason `hedged: ...`): several `<answer>` tags (or marked answers) that
the scorer does not score alike; an answer that names alternatives ("7 or 8", "7, 8"; for a
list answer, only at hedging words: "a, b, or b, a", and a list longer than the entry's,
which some scorers pay by position); a bare list of values, one per line, at the end.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast

from rewardsmith.answers import (
    alternatives,
    clean,
    final_answer,
    hedge_reason,
    listed_above,
    marked_answers,
    split_for,
)
from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools import rg_datasets
from rewardsmith.tools.base import AnswerVerifier, Verdict, make_reward
from rewardsmith.types import Reward, ToolSpec

Fallback = Literal["last_line", "all", "none"]
FALLBACKS: tuple[Fallback, ...] = ("last_line", "all", "none")
# More distinct answers than this is a hedge whatever they are: none is scored.
MAX_CANDIDATES = 8

ScoreFn = Callable[[str | None, dict[str, Any]], float]

# Entries of these datasets hold grids as tuples of tuples and their scorers compare the
# parsed answer with `==`; JSON turns the tuples into lists, so they are turned back.
_TUPLE_GRID_FIELDS: Mapping[str, tuple[str, ...]] = {
    "arc_agi": ("input", "output"),
    "rearc": ("input", "output"),
}


@lru_cache(maxsize=256)
def _score_fn(name: str, config_json: str) -> ScoreFn:
    """The scorer of dataset `name`, built once per (name, config), from the dataset's own
    module (`rg_datasets`: not the whole of reasoning-gym).

    Module-level cache rather than a tool attribute, so tools stay cheap to pickle into
    worker processes.
    """
    factory = rg_datasets.factory_for(name)
    if config_json == "null":
        fn: ScoreFn = factory.get_score_answer_fn(name)
        return fn
    dataset = factory.create_dataset(name, **json.loads(config_json))
    score_answer: ScoreFn = dataset.score_answer
    return score_answer


@dataclass(frozen=True)
class RGReference:
    """A parsed reference: the dataset's name, its entry and the scorer to call."""

    dataset: str
    entry: dict[str, Any]
    score_fn: ScoreFn


def parse_rg_reference(reference: str) -> RGReference:
    """Read a reasoning-gym entry (either form of the module docstring) from JSON.

    Raises `InvalidReferenceError` on bad JSON, a missing dataset name or an unknown dataset.
    """
    try:
        data = json.loads(reference)
    except json.JSONDecodeError as exc:
        raise InvalidReferenceError(
            f"reasoning-gym reference is not JSON ({exc.msg} at char {exc.pos}); expected "
            '{"dataset": NAME, "entry": {...}} or an entry with metadata.source_dataset'
        ) from exc
    if not isinstance(data, dict):
        raise InvalidReferenceError(
            f"reasoning-gym reference must be a JSON object, got {type(data).__name__}"
        )
    config: Any = None
    if "entry" in data:
        entry = data["entry"]
        config = data.get("config")
        if config is not None and not isinstance(config, dict):
            raise InvalidReferenceError("reasoning-gym reference: 'config' must be an object")
    else:
        entry = data
    if not isinstance(entry, dict):
        raise InvalidReferenceError("reasoning-gym reference: 'entry' must be a JSON object")
    metadata = entry.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise InvalidReferenceError("reasoning-gym entry: 'metadata' must be an object")
    name = data.get("dataset") if "entry" in data else None
    name = name or metadata.get("source_dataset")
    if not isinstance(name, str) or not name:
        raise InvalidReferenceError(
            "reasoning-gym reference names no dataset: give 'dataset' beside 'entry', or "
            "'metadata.source_dataset' in the entry"
        )
    # Scorers compare answers as strings (`oracle in answer`); a number here would make every
    # sample an error, so it is the reference that is wrong.
    if "answer" not in entry or not isinstance(entry["answer"], str | None):
        raise InvalidReferenceError(
            f"reasoning-gym entry of {name!r} needs an 'answer' that is a string or null, "
            f"got {entry.get('answer', '<missing>')!r}"
        )
    if not rg_datasets.is_registered(name):
        raise InvalidReferenceError(
            f"unknown reasoning-gym dataset {name!r}; see reasoning_gym.factory.DATASETS"
        )
    entry = {**entry, "metadata": _restore_tuples(name, metadata)}
    try:
        score_fn = _score_fn(name, json.dumps(config, sort_keys=True))
    except Exception as exc:  # a bad config is a bad reference, not a crash
        raise InvalidReferenceError(
            f"cannot build reasoning-gym dataset {name!r}: {type(exc).__name__}: {exc}"
        ) from exc
    return RGReference(dataset=name, entry=entry, score_fn=score_fn)


def _restore_tuples(name: str, metadata: dict[str, Any]) -> dict[str, Any]:
    fields = _TUPLE_GRID_FIELDS.get(name, ())
    if not fields:
        return metadata

    def to_tuple(value: Any) -> Any:
        return tuple(to_tuple(v) for v in value) if isinstance(value, list) else value

    return {k: to_tuple(v) if k in fields else v for k, v in metadata.items()}


def answer_texts(completion: str, fallback: Fallback = "last_line") -> list[str]:
    """Every answer `completion` gives, in order: the text of each standing `<answer>` tag
    (reasoning-gym's convention; a tag withdrawn before a later one does not count) and of
    any other marked answer beside them, else
    per `fallback`: "last_line", every standing marked answer of `rewardsmith.answers`
    ("The answer is ...", `\\boxed{}`, "Final answer: ...") else the last fenced block or
    non-empty line; "all", the whole stripped completion; "none", nothing. Linear time: the
    tags are paired in one pass (reasoning-gym's own `extract_answer` regex is quadratic in
    the number of unclosed `<answer>` tags)."""
    text = clean(completion)
    marks = marked_answers(text)
    if any(style == "answer_tags" for style, *_ in marks):
        # the tags, and any marked answer that stands beside them ("Answer: 8" after them)
        return [text[a:b].strip() for _, a, b, _ in marks]
    stripped = text.strip()
    if fallback == "none" or not stripped:
        return []
    if fallback == "all":
        return [stripped]
    if marks:
        return [text[a:b].strip() for _, a, b, _ in marks]
    final = final_answer(text)
    if final is None:
        return []
    listed = listed_above(text, final[1]) if final[0] == "last_line" else []
    return [*listed, text[final[1] : final[2]].strip()]  # "Candidates:\n12\n15": a list


def extract_rg_answer(completion: str, fallback: Fallback = "last_line") -> str | None:
    """The answer in `completion`: the last of `answer_texts`, None when there is none."""
    found = answer_texts(completion, fallback)
    return found[-1] if found else None


@dataclass(frozen=True)
class RGAnswer:
    """The answers a completion gives (one per marked answer; several: they must agree)."""

    texts: tuple[str, ...]


class ReasoningGymTool(AnswerVerifier):
    """Any reasoning-gym task, scored by the dataset's own `score_answer`.

    Score: what the scorer returns (in [0, 1]: 1.0 exact, partial credit where the dataset
    gives it), clamped to [0, 1]; components `{"rg_score": raw score}`. A completion that
    offers several answers is scored on each: when they do not all score the same, it
    hedged and scores 0.0. When the entry's answer is one value, an answer naming
    alternatives ("<answer>7 or 8</answer>") offers each of them; when it is a list
    (word_sorting's "a, b, c") the answer is read whole.
    """

    def __init__(self, spec: ToolSpec, fallback: str = "last_line") -> None:
        super().__init__(spec)
        if fallback not in FALLBACKS:
            raise ConfigError(
                f"reasoning_gym: unknown fallback {fallback!r}; expected one of {FALLBACKS}"
            )
        self.fallback = cast(Fallback, fallback)

    def parse_reference(self, reference: str) -> RGReference:
        return parse_rg_reference(reference)

    def extract(self, completion: str) -> RGAnswer | None:
        texts = [t for t in answer_texts(completion, self.fallback) if t]
        return RGAnswer(tuple(dict.fromkeys(texts))) if texts else None

    def compare(self, answer: RGAnswer, reference: RGReference) -> Verdict:
        gold = reference.entry.get("answer")
        split = split_for(gold) if isinstance(gold, str) else False
        offered: list[str] = []
        for text in answer.texts:
            # a list answer (word_sorting's) is split only where it hedges: "a, b, or c, b";
            # a sentence answer not at all
            items, _ = alternatives(text, split=split)
            offered += [i for i in items if i not in offered]
        if not offered:  # "<answer>not 42</answer>"
            return Verdict(0.0, components={"rg_score": 0.0}, reason="every answer is negated")
        if split == "words" and isinstance(gold, str):
            expected = len(alternatives(gold)[0])
            longest = max(len(alternatives(text)[0]) for text in offered)
            if longest > expected:  # the right list followed by more: "a, b, c, x, y"
                return Verdict(
                    0.0,
                    components={"rg_score": 0.0},
                    reason=f"hedged: {longest} items offered for a list of {expected}",
                )
        scores = [self._score(reference, text) for text in offered[:MAX_CANDIDATES]]
        if len(offered) > MAX_CANDIDATES or len(set(scores)) > 1:
            return Verdict(0.0, components={"rg_score": 0.0}, reason=hedge_reason(offered))
        raw = scores[0]
        score = min(1.0, max(0.0, raw))
        verdict = "correct" if score == 1.0 else "partial credit" if score > 0 else "wrong"
        return Verdict(
            score=score,
            components={"rg_score": raw},
            reason=f"reasoning-gym {reference.dataset}: {verdict} ({raw:.3g}) for {offered[0][:40]!r}",
        )

    def _score(self, reference: RGReference, text: str) -> float:
        raw = float(reference.score_fn(text, reference.entry))
        if not math.isfinite(raw):
            raise ValueError(f"reasoning-gym {reference.dataset} scorer returned {raw}")
        return raw

    def no_answer(self) -> Reward:
        why = "no <answer> tags" if self.fallback == "none" else "empty completion"
        return make_reward(self.spec, 0.0, reason=f"no answer found ({why})")
