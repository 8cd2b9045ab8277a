"""What a reward-function search optimizes for: a `SearchTask`.

A task names the policy to train, the prompts to train on, the held-out problems to judge
by, the protected base rewards every candidate is added to, how answers are read for
accuracy and F1, and the GRPO settings. Four sources:

- `testbed`: the CPU testbed policy on procedural arithmetic word problems (`rl.problems`),
  the stand-in for the search-driven paper's Llama-3.2-3B on GSM8K;
- `testbed-multi`: the multi-task testbed (`rl.multitask`: seven task families, six answer
  styles, with or without worked steps), where how a response is written changes how often
  it is right; every item carries its task family, and answers are judged by that family's
  rule (the `family` answer format); the base reward is the families' own graders
  (`family_oracle`, `rl.oracle.FamilyOracle`);
- `gsm8k`: SmolLM2-135M-Instruct on `../shared/data/gsm8k` (train/test JSONL), for a GPU
  (`--grpo-backend trl --device cuda`); on a CPU it is slow;
- a task file (JSON, or TOML by its `.toml` suffix): any of the fields below; paths are
  relative to the file's folder. Unknown fields are refused, so a typo cannot pass silently.

```json
{"name": "word-problems", "description": "Grade-school word problems ...",
 "policy": "testbed", "train": "train.jsonl", "eval": "test.jsonl",
 "base_rewards": ["format_tags", "format_tags_approx", "gsm8k"],
 "answer_format": "solution", "tags": ["thinking", "solution"],
 "validation_size": 300, "test_size": 1000, "grpo": {"lr": 0.0005, "max_new_tokens": 48}}
```

The held-out problems are split once: the first `validation_size` rank candidates (level-1
fitness), the next `test_size` judge the ensembles, so the set that picks the winners is
not the set that reports them.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.rl.answers import ANSWER_FORMATS
from rewardsmith.rl.multitask import MIX
from rewardsmith.rl.prompts import (
    PromptItem,
    load_items,
    multitask_eval_tasks,
    testbed_eval_problems,
)
from rewardsmith.search.results import RunState
from rewardsmith.synth.features import DEFAULT_ANSWER_TAG, DEFAULT_THINK_TAG

#: The three protected base rewards of the search-driven paper: exact format, approximate
#: format, answer check.
BASE_REWARDS: tuple[str, ...] = ("format_tags", "format_tags_approx", "gsm8k")
BUILTIN_TASKS = ("testbed", "testbed-multi", "gsm8k")
#: The base reward name that stands for `rl.oracle.FamilyOracle` (each item graded by its own
#: task family's rule): no library tool grades every family of `testbed-multi`.
FAMILY_ORACLE = "family_oracle"
#: Prompt and held-out sources that are not files (`rl.prompts.load_items`).
PROCEDURAL_DATA = ("testbed", "testbed-multi")
#: Where the built-in gsm8k task reads its data (relative to the working directory).
GSM8K_DIR = Path("../shared/data/gsm8k")
#: GRPO settings a task may set (`rl.grpo.GRPOConfig` fields); steps and seeds are the
#: search's own budgets.
GRPO_FIELDS = frozenset(
    {
        "prompts_per_step",
        "group_size",
        "max_new_tokens",
        "temperature",
        "lr",
        "warmup_steps",
        "epsilon",
        "beta",
        "scale_rewards",
        "loss_type",
        "lora_rank",
        "lora_alpha",
        "grad_accum",
    }
)
#: Policy names that are not paths (`rl.policies.load_policy`).
POLICIES = ("testbed", "testbed-tiny", "testbed-multi", "testbed-multi-tiny", "smollm2")
# Fewer held-out problems than this cannot tell candidates apart.
MIN_HELD_OUT = 20


@dataclass(frozen=True)
class SearchTask:
    """Everything the search needs to know about the task (see the module docstring)."""

    name: str
    description: str
    policy: str = "testbed"
    train: str = "testbed"
    eval: str = "testbed"
    base_rewards: tuple[str, ...] = BASE_REWARDS
    answer_format: str = "solution"
    tags: tuple[str, str] = (DEFAULT_THINK_TAG, DEFAULT_ANSWER_TAG)
    validation_size: int = 300
    test_size: int = 1000
    eval_max_new_tokens: int = 64
    #: Rollouts of the proxy pool: prompts x completions each, sampled once per run.
    pool_prompts: int = 48
    pool_group: int = 8
    train_prompts: int = 20_000
    grpo: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.answer_format not in ANSWER_FORMATS:
            raise ConfigError(
                f"task {self.name}: answer_format must be one of {ANSWER_FORMATS}, "
                f"got {self.answer_format!r}"
            )
        if not self.base_rewards:
            raise ConfigError(f"task {self.name}: base_rewards must name at least one tool")
        if FAMILY_ORACLE in self.base_rewards and self.answer_format != "family":
            raise ConfigError(
                f"task {self.name}: {FAMILY_ORACLE} grades each item by its task family; it "
                'needs answer_format "family" and prompts that carry a task (e.g. testbed-multi)'
            )
        if len(self.tags) != 2 or not all(
            isinstance(t, str) and t.isidentifier() for t in self.tags
        ):
            raise ConfigError(f"task {self.name}: tags must be two tag names, got {self.tags!r}")
        for key in ("validation_size", "test_size"):
            if getattr(self, key) < MIN_HELD_OUT // 2:
                raise ConfigError(f"task {self.name}: {key} must be >= {MIN_HELD_OUT // 2}")
        for key in ("pool_prompts", "pool_group", "train_prompts", "eval_max_new_tokens"):
            if getattr(self, key) < 1:
                raise ConfigError(f"task {self.name}: {key} must be >= 1")
        unknown = set(self.grpo) - GRPO_FIELDS
        if unknown:
            raise ConfigError(
                f"task {self.name}: unknown grpo settings {sorted(unknown)}; "
                f"known: {sorted(GRPO_FIELDS)}"
            )

    @property
    def think_tag(self) -> str:
        return self.tags[0]

    @property
    def answer_tag(self) -> str:
        return self.tags[1]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["base_rewards"] = list(self.base_rewards)
        data["tags"] = list(self.tags)
        data["grpo"] = dict(self.grpo)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "task") -> SearchTask:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"{where}: unknown fields {sorted(unknown)}; known: {sorted(known)}")
        if "name" not in data:
            raise ConfigError(f"{where}: needs a 'name'")
        values = dict(data)
        for key in ("base_rewards", "tags"):
            if key in values:
                if not isinstance(values[key], list | tuple):
                    raise ConfigError(f"{where}: {key} must be a list")
                values[key] = tuple(values[key])
        if not isinstance(values.get("grpo", {}), Mapping):
            raise ConfigError(f"{where}: grpo must be an object of GRPO settings")
        values.setdefault("description", values["name"])
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from exc

    def base_tools(self) -> list[Any]:
        """The base rewards as GRPO takes them: library names, and `FAMILY_ORACLE` as the
        families' own graders (`rl.oracle.FamilyOracle`, not a library tool)."""
        from rewardsmith.rl.oracle import FamilyOracle

        return [FamilyOracle() if name == FAMILY_ORACLE else name for name in self.base_rewards]

    # -- data ------------------------------------------------------------------------------

    def train_items(self) -> list[PromptItem]:
        """The prompts GRPO trains on (and the proxy pool is sampled from)."""
        return load_items(self.train, self.train_prompts)

    def held_out(self) -> tuple[list[PromptItem], list[PromptItem]]:
        """(validation, test): disjoint held-out problems (see the module docstring)."""
        wanted = self.validation_size + self.test_size
        if self.eval == "testbed":
            items = [PromptItem(p.question, p.reference) for p in testbed_eval_problems(wanted)]
        elif self.eval == "testbed-multi":
            items = multitask_held_out(wanted)
        else:
            items = load_items(self.eval, wanted)
        if len(items) < MIN_HELD_OUT:
            raise InputError(
                f"task {self.name}: {self.eval} holds {len(items)} held-out problems; need >= {MIN_HELD_OUT}"
            )
        n_val = self.validation_size if len(items) >= wanted else len(items) // 3
        return items[:n_val], items[n_val:wanted]


def multitask_held_out(n: int) -> list[PromptItem]:
    """`n` held-out multi-task problems with their families, the families taking turns
    (`rl.prompts.multitask_eval_tasks` groups them by family; a slice of the first k must
    hold every family, so validation and test both do)."""
    per_family = -(-n // len(MIX))
    tasks = multitask_eval_tasks(per_family)
    turns = [tasks[f * per_family + i] for i in range(per_family) for f in range(len(MIX))]
    return [PromptItem(t.question, t.reference, t.family) for t in turns[:n]]


TESTBED_TASK = SearchTask(
    name="testbed",
    description=(
        "Arithmetic word problems (two or three steps on small numbers). The policy answers "
        "<thinking>worked steps such as 3*6=18. 14+18=32.</thinking><solution>32</solution>; "
        "the reference is the final number."
    ),
    # lr 3e-5: with 8 prompts a step, 240 steps at 1e-4 took the base rewards' test accuracy
    # from the warm start's 0.393 down to 0.313 (McNemar p 2e-7), so a search ranked
    # rewards by how much less they harmed; at 3e-5, 0.396 (p 0.88); at 5e-4 eight steps
    # took F1 to 0.07 (docs/search.md, Measured).
    grpo={"max_new_tokens": 48, "lora_rank": 0, "lr": 3e-5},
)


TESTBED_MULTI_TASK = SearchTask(
    name="testbed-multi",
    description=(
        "Seven task families: arithmetic word problems, chain sums, leg counting, multiple "
        "choice (a letter), sorting numbers (a comma-separated list), clock times (H:MM) and "
        "reversing a list of words. The policy answers in any of six styles "
        "(<thinking>steps</thinking><solution>A</solution>, <think>/<answer>, \\boxed{A}, "
        "'The answer is A.', 'Final answer: A', '#### A'), with worked steps such as "
        "'3*6=18. 14+18=32.' or without; the reference is the bare answer, graded by the "
        "task family's own rule."
    ),
    policy="testbed-multi",
    train="testbed-multi",
    eval="testbed-multi",
    # The families' own graders, as the oracle arm of bench/rlar_multitask.py trains with
    # (0.370 -> 0.491 on 1,050 held-out problems in 150 steps): no library tool grades every
    # family, and the answer check must be right for each. No format reward: the policy
    # answers in six styles, all of which the judge accepts; which style and how much
    # reasoning to pay is what the search is for (docs/search.md, testbed-multi).
    base_rewards=(FAMILY_ORACLE,),
    answer_format="family",
    validation_size=350,
    test_size=1050,
    eval_max_new_tokens=96,
    grpo={"max_new_tokens": 64, "lora_rank": 0, "lr": 1e-4, "prompts_per_step": 8},
)


def gsm8k_task() -> SearchTask:
    """GSM8K with SmolLM2-135M-Instruct (meant for a GPU)."""
    for split in ("train", "test"):
        if not (GSM8K_DIR / f"{split}.jsonl").is_file():
            raise ConfigError(
                f"task gsm8k reads {GSM8K_DIR}/{split}.jsonl, which is not there; run from a "
                "checkout beside shared/data or write a task file that names the data"
            )
    return SearchTask(
        name="gsm8k",
        description=(
            "GSM8K grade-school math word problems. The policy reasons inside "
            "<thinking>...</thinking> and writes the final number inside "
            "<solution>...</solution>; the reference is a worked solution ending in '#### N'."
        ),
        policy="smollm2",
        train=str(GSM8K_DIR / "train.jsonl"),
        eval=str(GSM8K_DIR / "test.jsonl"),
        answer_format="gsm8k",
        validation_size=300,
        test_size=1000,
        eval_max_new_tokens=256,
        pool_prompts=32,
        grpo={"max_new_tokens": 256, "lora_rank": 32, "lr": 1e-5, "temperature": 0.8},
    )


def load_task(spec: str) -> SearchTask:
    """`testbed`, `testbed-multi`, `gsm8k`, or a task file (JSON, or TOML by suffix)."""
    if spec == "testbed":
        return TESTBED_TASK
    if spec == "testbed-multi":
        return TESTBED_MULTI_TASK
    if spec == "gsm8k":
        return gsm8k_task()
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"--task {spec!r}: expected testbed, testbed-multi, gsm8k or a task file")
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"task file {path}: cannot read it: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"task file {path}: expected an object of task fields")
    for key, names in (("train", PROCEDURAL_DATA), ("eval", PROCEDURAL_DATA), ("policy", POLICIES)):
        value = data.get(key)
        if isinstance(value, str) and value not in names and not Path(value).is_absolute():
            data[key] = str(path.parent / value)
    return SearchTask.from_dict(data, where=f"task file {path}")


def run_task(state: RunState | Mapping[str, Any]) -> SearchTask:
    """The task a run was started with: the settings `run.json` stored, so a resumed run, its
    ensembles and its audit train exactly as the search did even after a default or the
    task file changed; `load_task` of the run's `--task` for a run that stored none yet."""
    stored = state.task if isinstance(state, RunState) else state.get("task")
    if isinstance(stored, Mapping):
        return SearchTask.from_dict(stored, where="run.json task")
    config = state.config if isinstance(state, RunState) else state["config"]
    return load_task(config["task"])
