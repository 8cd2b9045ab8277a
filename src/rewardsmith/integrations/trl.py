"""TRL adapter: rewardsmith tools as `reward_funcs` for `trl.GRPOTrainer` (and RLOO, Online DPO).

TRL calls each reward function once per generation batch as
`f(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_extra=...,
log_metric=..., **dataset_columns)` and expects one float per completion, or None where the
reward does not apply (TRL turns None into NaN and leaves that function out of the sum for
that row). With `$REWARDSMITH_URL` set, the functions score through that `rewardsmith serve`
(`rewardsmith.client`) instead of in the trainer's process. `reward_funcs` returns one `RewardFunction` per tool: a callable class, not a
closure, so it survives `pickle` into worker processes; the scorer behind it is built lazily
in each process and dropped when pickled.

    from trl import GRPOTrainer
    from rewardsmith.integrations.trl import reward_funcs

    trainer = GRPOTrainer(model=..., reward_funcs=reward_funcs(["gsm8k", "format_tags"]),
                          train_dataset=dataset_with_prompt_and_solution_columns, ...)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.client import RemoteScorer, remote_url
from rewardsmith.combine import component_means
from rewardsmith.errors import ConfigError
from rewardsmith.library.store import Library, parse_tool_ref
from rewardsmith.reward_metrics import task_metrics
from rewardsmith.rollout_log import RolloutLog, rollout_record
from rewardsmith.scoring import Scorer
from rewardsmith.types import Reward, RewardTool, Sample

log = logging.getLogger(__name__)

#: Dataset columns tried, in order, for the reference when `reference_column` is not given.
REFERENCE_COLUMNS: tuple[str, ...] = ("reference", "solution", "answer", "ground_truth")
#: The dataset column whose value becomes `Sample.task` (matched against `task_map`).
TASK_COLUMN = "task"
# Keyword arguments TRL passes that are not dataset columns.
_TRL_KWARGS = frozenset(
    {"completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


def _message_text(content: Any) -> str:
    """A message's text: a plain string, or the text parts of multimodal content."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [p.get("text", "") for p in content if isinstance(p, Mapping)]
        return "".join(p for p in parts if isinstance(p, str))
    return str(content)


def completion_text(completion: Any) -> str:
    """The text to score: a string as is; for conversational completions (a list of
    messages) the content of the last assistant message (the last message when none is
    marked assistant)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _message_text(completion.get("content"))
    if isinstance(completion, Sequence):
        messages = [m for m in completion if isinstance(m, Mapping)]
        assistant = [m for m in messages if m.get("role") == "assistant"]
        chosen = assistant[-1] if assistant else (messages[-1] if messages else None)
        return "" if chosen is None else _message_text(chosen.get("content"))
    return "" if completion is None else str(completion)


def _prompt_value(prompt: Any) -> str | list[dict[str, Any]] | None:
    if prompt is None or isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return [
            {"role": m.get("role", "user"), "content": _message_text(m.get("content"))}
            for m in prompt
            if isinstance(m, Mapping)
        ]
    return str(prompt)


def reference_text(value: Any) -> str | None:
    """A dataset cell as a reference string: numbers as text, JSON for lists and dicts."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except TypeError:
        return str(value)


def _library_path(library: str | Path | Library | None) -> str | None:
    # A `Library` holds a SQLite connection, which cannot be pickled; keep its path only.
    if isinstance(library, Library):
        return str(library.path)
    return None if library is None else str(library)


def _tool_name(tool: str | RewardTool | None) -> str:
    if tool is None:
        return "routed"
    return tool if isinstance(tool, str) else tool.spec.name


def function_name(tool: str | RewardTool | None, task_map: Mapping[str, str]) -> str:
    """The function's `__name__`, which TRL logs it under (`rewards/<name>/mean`): the tool,
    and with a task map every tool it routes to (`rewardsmith_gsm8k+math+multiple_choice`),
    so a function covering several tasks is not named after its fallback alone."""
    names = [] if tool is None else [_tool_name(tool)]
    for ref in task_map.values():
        name = ref.partition("@")[0]
        if name not in names:
            names.append(name)
    return "rewardsmith_" + ("+".join(names) or "routed")


class RewardFunction:
    """One rewardsmith tool with TRL's reward-function signature.

    `__call__(prompts, completions, **kwargs) -> list[float | None]`: None where the tool
    says `not_applicable` or gives no score (an invalid reference). The reference comes from
    the dataset column `reference_column`, else the first of `REFERENCE_COLUMNS` present; a
    `task` column, when present, routes samples through `task_map`. Picklable.
    """

    def __init__(
        self,
        tool: str | RewardTool | None,
        *,
        task_map: Mapping[str, str] | None = None,
        library: str | Path | Library | None = None,
        reference_column: str | None = None,
        name: str | None = None,
        rollout_log: str | Path | None = None,
    ) -> None:
        if tool is None and not task_map:
            raise ConfigError("a reward function needs a tool, a task_map, or both")
        self.tool = tool
        self.task_map = dict(task_map or {})
        self.library = _library_path(library)
        self.reference_column = reference_column
        # TRL names each function's metrics after `__name__` (rewards/<name>/mean).
        self.__name__ = name or function_name(tool, self.task_map)
        self.calls = 0
        self._scorer: Scorer | RemoteScorer | None = None
        self._warned_no_reference = False
        # Opened now: a path that cannot be written fails before the trainer starts.
        self.rollout_log = RolloutLog(rollout_log) if rollout_log is not None else None

    # -- pickling: keep the recipe, rebuild the scorer in the receiving process -----------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_scorer"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"<RewardFunction {self.__name__}>"

    @property
    def scorer(self) -> Scorer | RemoteScorer:
        """The scorer, built on first use in this process: a `rewardsmith serve` client when
        `$REWARDSMITH_URL` is set (and the tool is given by name), else in-process."""
        if self._scorer is None:
            if remote_url() and not isinstance(self.tool, RewardTool):
                self._scorer = RemoteScorer(self.tool, self.task_map or None)
            else:
                self._scorer = Scorer(self.tool, self.task_map, self.library)
        return self._scorer

    def close(self) -> None:
        """Release the scorer's library connection (it is rebuilt if called again)."""
        if self._scorer is not None:
            self._scorer.close()
            self._scorer = None

    # -- the TRL call ----------------------------------------------------------------------

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        self.calls += 1
        samples = self.samples(prompts, completions, kwargs)
        rewards = list(self.scorer.score(samples))
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            self._log_metrics(samples, rewards, log_metric)
        if self.rollout_log is not None:
            self._log_rollouts(samples, rewards, kwargs.get("trainer_state"))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra(f"{self.__name__}/status", [r.status for r in rewards])
        return [trl_value(r) for r in rewards]

    def samples(
        self, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any]
    ) -> list[Sample]:
        """Turn one TRL call into `Sample`s (public so callers can inspect what is scored)."""
        n = len(completions)
        if len(prompts) != n:
            raise ValueError(f"got {len(prompts)} prompts for {n} completions")
        references = self._column(columns, self._reference_key(columns), n)
        tasks = self._column(columns, TASK_COLUMN if TASK_COLUMN in columns else None, n)
        return [
            Sample(
                completion=completion_text(completions[i]),
                prompt=_prompt_value(prompts[i]),
                reference=reference_text(references[i]),
                task=None if tasks[i] is None else str(tasks[i]),
            )
            for i in range(n)
        ]

    def _reference_key(self, columns: Mapping[str, Any]) -> str | None:
        if self.reference_column is not None:
            if self.reference_column not in columns:
                present = sorted(k for k in columns if k not in _TRL_KWARGS)
                raise ConfigError(
                    f"{self.__name__}: reference column {self.reference_column!r} is not in "
                    f"the dataset; columns passed by the trainer: {present}"
                )
            return self.reference_column
        key = next((k for k in REFERENCE_COLUMNS if k in columns), None)
        if key is None and not self._warned_no_reference:
            self._warned_no_reference = True
            log.warning(
                "%s: the dataset has none of the columns %s; scoring without a reference "
                "(pass reference_column=... to name yours)",
                self.__name__,
                list(REFERENCE_COLUMNS),
            )
        return key

    @staticmethod
    def _column(columns: Mapping[str, Any], key: str | None, n: int) -> list[Any]:
        if key is None:
            return [None] * n
        values = list(columns[key])
        if len(values) != n:
            raise ValueError(f"column {key!r} has {len(values)} values for {n} completions")
        return values

    def _log_rollouts(
        self, samples: Sequence[Sample], rewards: Sequence[Reward], state: Any
    ) -> None:
        """One rollout line per completion (`rewardsmith.rollout_log`), grouped by function,
        step and prompt (TRL's `num_generations` completions of a prompt are one group)."""
        step = getattr(state, "global_step", None)
        extra: dict[str, Any] = {"source": "trl", "function": self.__name__}
        if isinstance(step, int):
            extra["step"] = step
        assert self.rollout_log is not None
        # One file may hold several functions' lines: a group is one function's rewards.
        self.rollout_log.write(
            rollout_record(s, r, group=f"{self.__name__} step {step}: {s.prompt_text()}", **extra)
            for s, r in zip(samples, rewards, strict=True)
        )

    def _log_metrics(
        self, samples: Sequence[Sample], rewards: Sequence[Reward], log_metric: Callable[..., Any]
    ) -> None:
        """Per (task, tool): mean, not-scored and failed shares (`rewardsmith.reward_metrics`);
        per function: the share not applicable or failed, and each component's batch mean."""
        if not rewards:
            return
        for key, value in task_metrics([s.task for s in samples], rewards).items():
            log_metric(key, value)
        prefix = f"rewardsmith/{_tool_name(self.tool)}"
        not_scored = sum(r.status in ("not_applicable", "invalid_reference") for r in rewards)
        failed = sum(r.status in ("error", "timeout") for r in rewards)
        log_metric(f"{prefix}/not_applicable_frac", not_scored / len(rewards))
        log_metric(f"{prefix}/failed_frac", failed / len(rewards))
        for key, mean in component_means(rewards).items():
            log_metric(f"{prefix}/{key}", mean)


def trl_value(reward: Reward) -> float | None:
    """A `Reward` as TRL wants it: None when the tool does not apply, else the score."""
    if reward.status == "not_applicable" or reward.score is None:
        return None
    return float(reward.score)


def reward_funcs(
    tools: str | RewardTool | Sequence[str | RewardTool] | None = "gsm8k",
    *,
    task_map: Mapping[str, str] | None = None,
    library: str | Path | Library | None = None,
    reference_column: str | None = None,
    rollout_log: str | Path | None = None,
) -> list[RewardFunction]:
    """TRL `reward_funcs`: one picklable `RewardFunction` per tool.

    `tools` is a tool name (`"gsm8k"`, `"math@2"`), a `RewardTool`, or a list of them; TRL
    sums the functions (weights: `GRPOConfig.reward_weights`). `task_map` routes rows by
    their `task` column (`{"math500": "math"}`); rows with an unmapped task use the tool.
    It goes with one tool (or none: rows whose task is not mapped then get None), because
    with several tools every function would score the mapped rows again. `library` is a
    library path (default `$REWARDSMITH_HOME/library.db`). `rollout_log`: append every
    scored completion to this rollout file (`rewardsmith.rollout_log`; read by `rewardsmith
    rescore / compare / profile`).
    """
    if tools is None:
        chosen: list[str | RewardTool | None] = [None]
    elif isinstance(tools, str | RewardTool):
        chosen = [tools]
    else:
        chosen = list(tools)
    if not chosen:
        raise ConfigError("reward_funcs needs at least one tool, e.g. reward_funcs('gsm8k')")
    if task_map and len(chosen) > 1:
        raise ConfigError(
            "task_map goes with a single tool: reward_funcs('gsm8k', task_map={...}) "
            "+ reward_funcs('format_tags') gives a routed correctness reward plus a format reward"
        )
    names = [_tool_name(t) for t in chosen]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"tool(s) {duplicates} listed twice; TRL would log them under one name")
    _check_tools_exist([t for t in chosen if isinstance(t, str)], task_map, library)
    return [
        RewardFunction(
            t,
            task_map=task_map,
            library=library,
            reference_column=reference_column,
            rollout_log=rollout_log,
        )
        for t in chosen
    ]


def _check_tools_exist(
    names: Sequence[str],
    task_map: Mapping[str, str] | None,
    library: str | Path | Library | None,
) -> None:
    """Fail now on an unknown tool name, not after the trainer has loaded a model and
    generated its first batch. Only looks the names up; tools are built on first call."""
    wanted = [*names, *(task_map or {}).values()]
    if not wanted:
        return
    if isinstance(library, Library):
        for ref in wanted:
            library.record(*parse_tool_ref(ref))
        return
    with Library(library) as lib:
        for ref in wanted:
            lib.record(*parse_tool_ref(ref))


__all__ = [
    "REFERENCE_COLUMNS",
    "RewardFunction",
    "completion_text",
    "reward_funcs",
    "trl_value",
]
