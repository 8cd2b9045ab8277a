"""veRL adapter: `compute_score` for `custom_reward_function` (and a batched variant).

veRL's reward managers call `compute_score(data_source, solution_str, ground_truth,
extra_info)` once per sample (`naive`, `prime`, `dapo`), or
`compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos)` once per batch
(`batch`), in many worker processes. Each answers with a dict: `score` (a float, 0.0 when
the tool does not apply, since veRL needs a number), `applicable` (1 or 0), `failed`
(1 on a tool error or timeout) and the tool's components as flat keys (in the batched
variant, NaN in the rows of other tools; opt-in per sample, see `compute_score`). veRL rewards with
`score` and collects every key into `reward_extra_info` (logged, and usable as the DAPO
`filter_groups.metric`).

The tool for a sample is, first match wins: `extra_info["rewardsmith_tool"]`; the
`tool` reward kwarg (`+custom_reward_function.reward_kwargs.tool=gsm8k`); the data source
in `$REWARDSMITH_VERL_TASK_MAP` ("SOURCE=TOOL,..."); the data source in
`DEFAULT_DATA_SOURCES`. Anything else raises `ConfigError` saying how to map it.

With `$REWARDSMITH_URL` set (and `$REWARDSMITH_TOKEN` if the server has one), samples are
scored by that `rewardsmith serve` through `rewardsmith.client` instead of in each worker.
With `$REWARDSMITH_ROLLOUT_LOG` set, every scored sample is appended to that rollout file
(`rewardsmith.rollout_log`; `rewardsmith profile` gives its per-task metrics).

Use it from a veRL run (the file is loaded by path, so it imports rewardsmith absolutely):

    RS_VERL=$(python -c "import rewardsmith.integrations.verl as m; print(m.__file__)")
    python -m verl.trainer.main_ppo ... \\
        custom_reward_function.path=$RS_VERL custom_reward_function.name=compute_score
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from rewardsmith.client import RemoteScorer, remote_url
from rewardsmith.config import default_library_path
from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library
from rewardsmith.rollout_log import env_log, rollout_record
from rewardsmith.scoring import Scorer, parse_task_map
from rewardsmith.types import Reward, Sample

TASK_MAP_ENV = "REWARDSMITH_VERL_TASK_MAP"
#: Per-sample override: `extra_info[TOOL_KEY] = "math"`.
TOOL_KEY = "rewardsmith_tool"
#: The value of a component in a row whose tool does not report it (never a made-up 0.0).
NOT_RUN = float("nan")

#: The data_source names veRL's own preprocessing scripts (examples/data_preprocess) and
#: common recipes write, mapped to the built-in tool that scores them.
DEFAULT_DATA_SOURCES: Mapping[str, str] = {
    # grade-school math: "#### N" references
    "openai/gsm8k": "gsm8k",
    "gsm8k": "gsm8k",
    # competition math: LaTeX references, math-verify equivalence
    "lighteval/MATH": "math",
    "DigitalLearningGmbH/MATH-lighteval": "math",
    "HuggingFaceH4/MATH-500": "math",
    "math": "math",
    "math_dapo": "math",
    "math_dapo_reasoning": "math",
    "aime24": "math",
    "aime25": "math",
    "aime2024": "math",
    "aime2025": "math",
    "BytedTsinghua-SIA/AIME-2024": "math",
    "AI-MO/aimo-validation-aime": "math",
    "Maxwell-Jia/AIME_2024": "math",
    "opencompass/AIME2025": "math",
    "numina_aops_forum": "math",
    "numina_synthetic_math": "math",
    "numina_amc_aime": "math",
    "numina_synthetic_amc": "math",
    "numina_cn_k12": "math",
    "numina_olympiads": "math",
}


class _ProcessCache:
    """One `Library` and one `Scorer` per tool, per process and library file.

    veRL forks and spawns reward workers; a SQLite connection must not cross a fork, so the
    cache is keyed by the process id as well as the library path.
    """

    def __init__(self) -> None:
        self.key: tuple[int, str] | None = None
        self.library: Library | None = None
        self.scorers: dict[str, Scorer] = {}
        self.task_map_text: str | None = None
        self.task_map: dict[str, str] = {}
        self.remote: dict[str, RemoteScorer] = {}

    def scorer(self, tool: str) -> Scorer | RemoteScorer:
        if remote_url():
            remote = self.remote.get(tool)
            if remote is None:
                remote = self.remote[tool] = RemoteScorer(tool)
            return remote
        key = (os.getpid(), str(default_library_path()))
        if key != self.key or self.library is None:
            if self.library is not None and self.key is not None and self.key[0] == key[0]:
                self.library.close()  # same process, another library file
            # after a fork the parent's connection is abandoned, never closed from the child
            self.library = Library(key[1])
            self.scorers = {}
            self.key = key
        scorer = self.scorers.get(tool)
        if scorer is None:
            scorer = self.scorers[tool] = Scorer(tool, library=self.library)
        return scorer

    def env_task_map(self) -> dict[str, str]:
        text = os.environ.get(TASK_MAP_ENV, "")
        if text != self.task_map_text:
            try:
                self.task_map = parse_task_map(text)
            except ConfigError as exc:
                raise ConfigError(f"${TASK_MAP_ENV} must read SOURCE=TOOL,...: {exc}") from None
            self.task_map_text = text
        return self.task_map


_CACHE = _ProcessCache()


def tool_for(data_source: str, extra_info: Mapping[str, Any] | None, tool: str | None) -> str:
    """The tool name for one sample (see the module docstring for the order)."""
    if extra_info and extra_info.get(TOOL_KEY):
        return str(extra_info[TOOL_KEY])
    if tool:
        return tool
    mapped = _CACHE.env_task_map().get(data_source) or DEFAULT_DATA_SOURCES.get(data_source)
    if mapped is None:
        raise ConfigError(
            f"rewardsmith has no tool for veRL data_source {data_source!r}. Map it with "
            f"{TASK_MAP_ENV}='{data_source}=TOOL' (e.g. TOOL=gsm8k, math, multiple_choice), "
            f"or set +custom_reward_function.reward_kwargs.tool=TOOL, or put "
            f"extra_info['{TOOL_KEY}'] in the data. Known data sources: "
            f"{', '.join(sorted(DEFAULT_DATA_SOURCES))}"
        )
    return mapped


def _reference(ground_truth: Any) -> str | None:
    # veRL datasets store ground truths as strings, numbers, or lists (several gold answers)
    if ground_truth is None or isinstance(ground_truth, str):
        return ground_truth
    if isinstance(ground_truth, bool | int | float):
        return str(ground_truth)
    if hasattr(ground_truth, "tolist"):  # numpy arrays and scalars from parquet
        ground_truth = ground_truth.tolist()
        if isinstance(ground_truth, str | int | float):
            return str(ground_truth)
    try:
        return json.dumps(ground_truth, ensure_ascii=False)
    except TypeError:
        return str(ground_truth)


def result_dict(reward: Reward, components: bool = True) -> dict[str, Any]:
    """A `Reward` as the dict veRL logs: `score`, `applicable`, `failed`, components."""
    applicable = reward.status != "not_applicable" and reward.score is not None
    out: dict[str, Any] = {
        "score": float(reward.score) if applicable and reward.score is not None else 0.0,
        "applicable": int(applicable),
        "failed": int(reward.status in ("error", "timeout")),
    }
    if components:
        for key, value in reward.components.items():
            if key not in out:  # a component may not shadow the fields veRL reads
                out[key] = float(value)
    return out


def _score(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None],
    tool: str | None,
) -> list[Reward]:
    groups: dict[str, list[int]] = {}
    for i, (source, extra) in enumerate(zip(data_sources, extra_infos, strict=True)):
        extra_map = extra if isinstance(extra, Mapping) else None
        groups.setdefault(tool_for(str(source), extra_map, tool), []).append(i)
    rewards: list[Reward | None] = [None] * len(data_sources)
    for name, indices in groups.items():
        samples = [
            Sample(
                completion=solution_strs[i] or "",
                reference=_reference(ground_truths[i]),
                task=str(data_sources[i]),
            )
            for i in indices
        ]
        scored = list(_CACHE.scorer(name).score(samples))
        for i, reward in zip(indices, scored, strict=True):
            rewards[i] = reward
        log = env_log()
        if log is not None:  # veRL gives no prompt: each line is a group of its own
            log.write(
                rollout_record(s, r, source="verl") for s, r in zip(samples, scored, strict=True)
            )
    return [r for r in rewards if r is not None]


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    tool: str | None = None,
    components: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """veRL's per-sample reward function: `{"score": float, "applicable": 0|1, "failed":
    0|1, **components}`.

    `tool` forces one tool for every data source. `components=True` adds the tool's
    components; it is off by default because veRL's per-sample managers stack each key
    into a column and fail when one sample's dict lacks a key another has, which happens
    when a tool reports components for some samples only (a gate that stops early) or one
    run mixes tools. Turn it on (`+custom_reward_function.reward_kwargs.components=true`)
    for tools that always report the same components, or use `compute_score_batch`, which
    fills the gaps. Other keyword arguments veRL passes (sandbox settings...) are ignored.
    """
    reward = _score([data_source], [solution_str], [ground_truth], [extra_info], tool)[0]
    return result_dict(reward, components)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    tool: str | None = None,
    components: bool = True,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """veRL's `batch` reward manager entry point: one dict per sample, as `compute_score`.

    Each tool scores its share of the batch in one call. Every dict carries the same keys,
    as veRL stacks them into columns; a component a sample's tool did not report (another
    task's tool: `gsm8k` on a math row) is NaN, not 0.0, so veRL's per-data-source means
    (`val-aux/<data_source>/<key>/mean@N`) do not show a made-up 0.0 for a tool that never
    ran on those rows.
    """
    n = len(solution_strs)
    if len(data_sources) != n or len(ground_truths) != n:
        raise ValueError(
            f"got {len(data_sources)} data sources, {n} solutions and {len(ground_truths)} "
            "ground truths; they must match"
        )
    extras: Sequence[Mapping[str, Any] | None] = (
        list(extra_infos) if extra_infos is not None else [None] * n
    )
    if len(extras) != n:
        raise ValueError(f"got {len(extras)} extra_infos for {n} solutions")
    out = [
        result_dict(r, components)
        for r in _score(data_sources, solution_strs, ground_truths, extras, tool)
    ]
    keys = {key for row in out for key in row}
    for row in out:
        for key in keys - row.keys():
            row[key] = NOT_RUN
    return out


__all__ = [
    "DEFAULT_DATA_SOURCES",
    "TASK_MAP_ENV",
    "TOOL_KEY",
    "compute_score",
    "compute_score_batch",
    "result_dict",
    "tool_for",
]
