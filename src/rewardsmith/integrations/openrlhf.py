"""OpenRLHF adapter: a custom `reward_func` for `--reward.remote_url /path/to/this/file.py`.

OpenRLHF loads the file by path and calls its module-level
`reward_func(queries, prompts, labels, **kwargs)`: `queries` are prompt + response texts,
`prompts` the prompts, `labels` the `--data.label_key` column. It reads back a dict:

- `rewards`: float tensor (B,), the reward the advantages are computed from;
- `scores`: float tensor (B,) in [0, 1], used by dynamic filtering (here: rewards clipped
  to [0, 1]);
- `extra_logs`: per-sample float tensors (B,); OpenRLHF concatenates them across batches
  and logs their means: `applicable` (1/0), `failed` (1 on a tool error or timeout), and,
  when asked for, the tool's components.

A sample the tool does not apply to gets reward 0.0 and `applicable` 0.

    --reward.remote_url $(python -c "import rewardsmith.integrations.openrlhf as m; print(m.__file__)")
    --data.label_key answer
    REWARDSMITH_OPENRLHF_TOOL=gsm8k   # any tool in the library (default gsm8k)

From Python, `make_reward_func(tool=..., task_map=...)` returns a picklable callable with the
same signature. OpenRLHF's HTTP mode (`--reward.remote_url http://HOST:8000/v1/openrlhf`) is
served by `rewardsmith serve` (docs/server.md); with `$REWARDSMITH_URL` set, this file too
scores through that server (`rewardsmith.client`) instead of in OpenRLHF's process. With
`$REWARDSMITH_ROLLOUT_LOG` set, every scored query is appended to that rollout file
(`rewardsmith.rollout_log`), grouped by prompt, for `rewardsmith profile / compare / rescore`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardsmith.client import RemoteScorer, remote_url
from rewardsmith.config import default_library_path
from rewardsmith.errors import MissingDependencyError
from rewardsmith.library.store import Library
from rewardsmith.rollout_log import env_log, rollout_record
from rewardsmith.scoring import Scorer
from rewardsmith.types import Reward, Sample

TOOL_ENV = "REWARDSMITH_OPENRLHF_TOOL"
#: Set to 1 to add the tool's components to `extra_logs` (see `RewardFunc`).
COMPONENTS_ENV = "REWARDSMITH_OPENRLHF_COMPONENTS"
DEFAULT_TOOL = "gsm8k"


def response_text(query: str, prompt: str | None) -> str:
    """The response inside `query` (= prompt + response): what follows the prompt, or the
    whole query when the prompt cannot be found in it (decoding can alter whitespace)."""
    if not prompt:
        return query
    if query.startswith(prompt):
        return query[len(prompt) :]
    at = query.find(prompt)
    return query[at + len(prompt) :] if at >= 0 else query


def label_reference(label: Any) -> str | None:
    if label is None or isinstance(label, str):
        return label
    if isinstance(label, bool | int | float):
        return str(label)
    try:
        return json.dumps(label, ensure_ascii=False)
    except TypeError:
        return str(label)


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch ships with the train extra
        raise MissingDependencyError("torch", "train") from exc
    return torch


class RewardFunc:
    """A rewardsmith tool with OpenRLHF's `reward_func` signature. Picklable.

    `components=True` adds each component as a per-sample `extra_logs` tensor. It is off by
    default because OpenRLHF takes the `extra_logs` keys of the first batch for all batches
    and fails on a later batch that lacks one; turn it on for tools that report the same
    components for every sample (composites). Missing components are 0.0 and a key once
    seen is reported in every later batch of this process.
    """

    def __init__(
        self,
        tool: str = DEFAULT_TOOL,
        *,
        task_map: Mapping[str, str] | None = None,
        library: str | Path | Library | None = None,
        components: bool = False,
    ) -> None:
        self.tool = tool
        self.task_map = dict(task_map or {})
        self.library = str(library.path) if isinstance(library, Library) else library
        self.components = components
        self.__name__ = f"rewardsmith_{tool}"
        self._component_keys: list[str] = []
        self._scorer: Scorer | RemoteScorer | None = None
        self._scorer_pid: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_scorer"] = None
        state["_scorer_pid"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return f"<RewardFunc {self.__name__}>"

    @property
    def scorer(self) -> Scorer | RemoteScorer:
        """The scorer, built once per process (a SQLite connection must not cross a fork): a
        `rewardsmith serve` client when `$REWARDSMITH_URL` is set, else in-process."""
        if self._scorer is None or self._scorer_pid != os.getpid():
            if remote_url():
                self._scorer = RemoteScorer(self.tool, self.task_map or None)
            else:
                self._scorer = Scorer(self.tool, self.task_map, self.library)
            self._scorer_pid = os.getpid()
        return self._scorer

    def rewards(
        self,
        queries: Sequence[str],
        prompts: Sequence[str] | None,
        labels: Sequence[Any] | None,
        tasks: Sequence[str | None] | None = None,
    ) -> list[Reward]:
        """The `Reward` of each query (what `__call__` turns into tensors)."""
        n = len(queries)
        columns = {"prompts": prompts, "labels": labels, "tasks": tasks}
        for name, values in columns.items():
            if values is not None and len(values) != n:
                raise ValueError(f"got {len(values)} {name} for {n} queries")
        samples = [
            Sample(
                completion=response_text(queries[i], prompts[i] if prompts else None),
                prompt=prompts[i] if prompts else None,
                reference=label_reference(labels[i]) if labels is not None else None,
                task=tasks[i] if tasks is not None else None,
            )
            for i in range(n)
        ]
        rewards = list(self.scorer.score(samples))
        log = env_log()
        if log is not None:
            log.write(
                rollout_record(s, r, source="openrlhf")
                for s, r in zip(samples, rewards, strict=True)
            )
        return rewards

    def __call__(
        self,
        queries: Sequence[str],
        prompts: Sequence[str] | None = None,
        labels: Sequence[Any] | None = None,
        tasks: Sequence[str | None] | None = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        torch = _torch()
        rewards = self.rewards(queries, prompts, labels, tasks)
        applicable = [r.status != "not_applicable" and r.score is not None for r in rewards]
        values = [
            float(r.score) if ok and r.score is not None else 0.0
            for r, ok in zip(rewards, applicable, strict=True)
        ]
        reward_tensor = torch.tensor(values, dtype=torch.float32)
        extra_logs = {
            "applicable": torch.tensor([float(ok) for ok in applicable], dtype=torch.float32),
            "failed": torch.tensor(
                [float(r.status in ("error", "timeout")) for r in rewards], dtype=torch.float32
            ),
        }
        if self.components:
            for reward in rewards:
                for key in reward.components:
                    if key not in self._component_keys and key not in extra_logs:
                        self._component_keys.append(key)
            for key in self._component_keys:
                extra_logs[key] = torch.tensor(
                    [float(r.components.get(key, 0.0)) for r in rewards], dtype=torch.float32
                )
        return {
            "rewards": reward_tensor,
            "scores": reward_tensor.clamp(0.0, 1.0),
            "extra_logs": extra_logs,
        }


def make_reward_func(
    tool: str = DEFAULT_TOOL,
    *,
    task_map: Mapping[str, str] | None = None,
    library: str | Path | Library | None = None,
    components: bool = False,
) -> RewardFunc:
    """A picklable OpenRLHF reward function for `tool` (see `RewardFunc`)."""
    return RewardFunc(tool, task_map=task_map, library=library, components=components)


_FUNCS: dict[tuple[str, bool, str], RewardFunc] = {}


def reward_func(
    queries: Sequence[str],
    prompts: Sequence[str] | None = None,
    labels: Sequence[Any] | None = None,
    **kwargs: Any,
) -> dict[str, Any]:
    """The entry point OpenRLHF loads: scores with `$REWARDSMITH_OPENRLHF_TOOL` (default
    gsm8k) from the library at `$REWARDSMITH_HOME`."""
    tool = os.environ.get(TOOL_ENV, "").strip() or DEFAULT_TOOL
    components = os.environ.get(COMPONENTS_ENV, "").strip().lower() in ("1", "true", "yes")
    library = str(default_library_path())
    func = _FUNCS.get((tool, components, library))
    if func is None:
        func = RewardFunc(tool, library=library, components=components)
        _FUNCS[(tool, components, library)] = func
    return func(queries, prompts, labels, **kwargs)


__all__ = [
    "COMPONENTS_ENV",
    "DEFAULT_TOOL",
    "TOOL_ENV",
    "RewardFunc",
    "make_reward_func",
    "response_text",
    "reward_func",
]
