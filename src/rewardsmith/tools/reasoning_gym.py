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

The answer is the text inside the last `<answer>...</answer>` (reasoning-gym's convention,
read with its own `reasoning_gym.utils.extract_answer`). Without tags, `fallback` decides:
`"last_line"` (default) takes the last non-empty line, where chat models put a bare final
answer; `"all"` takes the whole stripped completion (for multi-line answers such as grids
given without tags); `"none"` scores 0, as reasoning-gym's own evaluation does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast

from rewardsmith.errors import ConfigError, InvalidReferenceError
from rewardsmith.tools.base import AnswerVerifier, Verdict, make_reward
from rewardsmith.types import Reward, ToolSpec

Fallback = Literal["last_line", "all", "none"]
FALLBACKS: tuple[Fallback, ...] = ("last_line", "all", "none")

ScoreFn = Callable[[str | None, dict[str, Any]], float]

# Entries of these datasets hold grids as tuples of tuples and their scorers compare the
# parsed answer with `==`; JSON turns the tuples into lists, so they are turned back.
_TUPLE_GRID_FIELDS: Mapping[str, tuple[str, ...]] = {
    "arc_agi": ("input", "output"),
    "rearc": ("input", "output"),
}


def _reasoning_gym() -> Any:
    # Imported on first use: importing reasoning_gym loads all its ~100 datasets (~1 s).
    # It is a core dependency of rewardsmith, so a missing package is a broken install.
    import reasoning_gym

    return reasoning_gym


def known_datasets() -> list[str]:
    """Names of the datasets reasoning-gym registers (the values `source_dataset` may take)."""
    return sorted(_registered())


def _registered() -> Mapping[str, Any]:
    _reasoning_gym()
    from reasoning_gym.factory import DATASETS

    registered: Mapping[str, Any] = DATASETS
    return registered


@lru_cache(maxsize=256)
def _score_fn(name: str, config_json: str) -> ScoreFn:
    """The scorer of dataset `name`, built once per (name, config).

    Module-level cache rather than a tool attribute, so tools stay cheap to pickle into
    worker processes.
    """
    rg = _reasoning_gym()
    if config_json == "null":
        fn: ScoreFn = rg.get_score_answer_fn(name)
        return fn
    dataset = rg.create_dataset(name, **json.loads(config_json))
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
    if name not in _registered():
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


def extract_rg_answer(completion: str, fallback: Fallback = "last_line") -> str | None:
    """The answer in `completion`: the last `<answer>...</answer>`, else per `fallback`."""
    from reasoning_gym.utils import extract_answer

    tagged: str | None = extract_answer(completion)
    if tagged is not None:
        return tagged
    text = completion.strip()
    if fallback == "none" or not text:
        return None
    if fallback == "all":
        return text
    return next(line.strip() for line in reversed(text.splitlines()) if line.strip())


class ReasoningGymTool(AnswerVerifier):
    """Any reasoning-gym task, scored by the dataset's own `score_answer`.

    Score: what the scorer returns (in [0, 1]: 1.0 exact, partial credit where the dataset
    gives it), clamped to [0, 1]; components `{"rg_score": raw score}`.
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

    def extract(self, completion: str) -> str | None:
        return extract_rg_answer(completion, self.fallback)

    def compare(self, answer: str, reference: RGReference) -> Verdict:
        raw = float(reference.score_fn(answer, reference.entry))
        if not math.isfinite(raw):
            raise ValueError(f"reasoning-gym {reference.dataset} scorer returned {raw}")
        score = min(1.0, max(0.0, raw))
        verdict = "correct" if score == 1.0 else "partial credit" if score > 0 else "wrong"
        return Verdict(
            score=score,
            components={"rg_score": raw},
            reason=f"reasoning-gym {reference.dataset}: {verdict} ({raw:.3g}) for {answer[:40]!r}",
        )

    def no_answer(self) -> Reward:
        why = "no <answer> tags" if self.fallback == "none" else "empty completion"
        return make_reward(self.spec, 0.0, reason=f"no answer found ({why})")
