"""`rewardsmith grpo train --backend trl`: the same run through TRL's `GRPOTrainer`.

This is the path for GPU users (vLLM generation, DeepSpeed, multi-GPU all come with TRL).
The rewards are `rewardsmith.integrations.trl.reward_funcs`; every `GRPOConfig` field of the
embedded trainer maps onto TRL's config where TRL has it:

| rewardsmith                | TRL `GRPOConfig`                                              |
|----------------------------|---------------------------------------------------------------|
| prompts_per_step x G       | per_device_train_batch_size x gradient_accumulation_steps     |
| group_size                 | num_generations                                               |
| grad_accum                 | gradient_accumulation_steps (= steps_per_generation)          |
| max_new_tokens             | max_completion_length                                         |
| lr, warmup_steps           | learning_rate, warmup_steps (constant_with_warmup)            |
| epsilon, epsilon_high      | epsilon, epsilon_high                                         |
| beta, num_iterations       | beta, num_iterations                                          |
| scale_rewards              | scale_rewards = "group" / "none"                              |
| loss_type                  | loss_type ("grpo" or "dapo")                                  |
| lora_rank, lora_alpha      | peft_config = LoraConfig(r, lora_alpha)                       |
| reward_weights             | reward_weights                                                |

Strict accuracy is logged through one more reward function with weight 0. With
`synthesize=True` (training that grows the library) the rewards are instead one function,
`LoopReward`, around the embedded trainer's `RewardSet`: it routes each sample by its `task`
column, synthesizes tools for tasks the library cannot grade, returns None for samples no
tool scores yet (TRL then leaves them out of the group baseline and gives them advantage 0),
and logs the per-task metrics, strict accuracy and each synthesis (with the step) itself.
Each TRL log line
becomes a line of `OUT/metrics.jsonl` with the embedded trainer's key names where one exists
(`reward/<tool>`, `accuracy`, `completion_length`, `time/step`); the trained model is saved
to `OUT/model` like the embedded trainer's.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from datasets import Dataset
from transformers import PrinterCallback, TrainerCallback
from trl import GRPOConfig as TRLConfig
from trl import GRPOTrainer as TRLTrainer

from rewardsmith.integrations.trl import completion_text, reward_funcs
from rewardsmith.library.store import Library
from rewardsmith.models.checkpoints import METRICS_FILE, append_metrics
from rewardsmith.rl.answers import AnswerFormat, judge_answer
from rewardsmith.rl.grpo import MODEL_DIR, SYNTHESIS_FILE, GRPOConfig, TrainResult, task_accuracy
from rewardsmith.rl.lora import lora_config
from rewardsmith.rl.policies import Policy, save_policy
from rewardsmith.rl.prompts import PromptItem
from rewardsmith.rl.rewards import RewardSet, ToolRef, tool_name

TRL_DIR = "trl"


class StrictAccuracy:
    """A TRL reward function (weight 0): 1.0 when the answer is parseable and correct."""

    def __init__(self, answer_format: AnswerFormat) -> None:
        self.answer_format = answer_format
        self.__name__ = "accuracy"

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float]:
        refs = kwargs["reference"]
        tasks = kwargs.get("task") or [None] * len(refs)
        return [
            float(judge_answer(completion_text(c), str(r), self.answer_format, t).correct)
            for c, r, t in zip(completions, refs, tasks, strict=True)
        ]


class LoopReward:
    """The whole reward of a run that grows the library, as one TRL reward function (see the
    module docstring); built on first call, closed by `close()`."""

    def __init__(
        self,
        rewards: Sequence[ToolRef],
        config: GRPOConfig,
        answer_format: AnswerFormat,
        out: Path,
        *,
        library: Library | str | Path | None,
        synth_backend: str,
    ) -> None:
        self.__name__ = "rewardsmith"
        self.rewards = list(rewards)
        self.weights = config.reward_weights
        self.answer_format = answer_format
        self.out = out
        self.library = library
        self.synth_backend = synth_backend
        self._set: RewardSet | None = None
        self.syntheses: list[dict[str, Any]] = []

    @property
    def reward_set(self) -> RewardSet:
        if self._set is None:
            self._set = RewardSet(
                self.rewards,
                self.weights,
                library=self.library,
                synthesize=True,
                synth_backend=self.synth_backend,
            )
        return self._set

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any
    ) -> list[float | None]:
        texts = [completion_text(c) for c in completions]
        refs = [str(r) for r in kwargs["reference"]]
        tasks = kwargs.get("task") or [None] * len(texts)
        state = kwargs.get("trainer_state")
        step = int(state.global_step) + 1 if state is not None else None
        scored = self.reward_set.score([str(p) for p in prompts], texts, refs, tasks, step=step)
        verdicts = [
            judge_answer(t, r, self.answer_format, task)
            for t, r, task in zip(texts, refs, tasks, strict=True)
        ]
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            metrics = {
                **scored.metrics,
                "accuracy": sum(v.correct for v in verdicts) / max(1, len(verdicts)),
                **task_accuracy(tasks, verdicts),
                "skipped_frac": 1 - sum(scored.valid) / max(1, len(texts)),
            }
            if scored.admissions or self.syntheses:
                self.syntheses.extend(scored.admissions)
                metrics["library/admitted"] = sum(r["admitted"] for r in self.syntheses)
            for name, value in metrics.items():
                log_metric(name, value)
        if scored.admissions:
            with (self.out / SYNTHESIS_FILE).open("a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row) + "\n" for row in scored.admissions)
        return [t if ok else None for t, ok in zip(scored.total, scored.valid, strict=True)]

    def close(self) -> None:
        if self._set is not None:
            self._set.close()
            self._set = None


def trl_config(config: GRPOConfig, out: Path, n_tools: int, loop: bool = False) -> Any:
    """TRL's `GRPOConfig` for our config (see the table in the module docstring); `loop`:
    one `LoopReward` function, which weighs the tools itself."""
    completions = config.prompts_per_step * config.group_size
    if completions % config.grad_accum:
        raise ValueError("prompts_per_step * group_size must divide by grad_accum for TRL")
    weights = [1.0] if loop else list(config.reward_weights or [1.0] * n_tools) + [0.0]
    use_cpu = not torch.cuda.is_available()
    return TRLConfig(
        output_dir=str(out / TRL_DIR),
        max_steps=config.steps,
        per_device_train_batch_size=completions // config.grad_accum,
        gradient_accumulation_steps=config.grad_accum,
        num_generations=config.group_size,
        max_completion_length=config.max_new_tokens,
        temperature=config.temperature,
        top_k=config.top_k,
        top_p=config.top_p,
        learning_rate=config.lr,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_steps,
        lr_scheduler_type="constant_with_warmup",
        adam_beta2=0.99,
        max_grad_norm=config.max_grad_norm,
        epsilon=config.epsilon,
        epsilon_high=config.epsilon_high,
        beta=config.beta,
        num_iterations=config.num_iterations,
        loss_type=config.loss_type,
        scale_rewards="group" if config.scale_rewards else "none",
        reward_weights=weights,
        seed=config.seed,
        use_cpu=use_cpu,
        bf16=False,
        report_to=[],
        logging_steps=1,
        save_strategy="steps" if config.save_every else "no",
        save_steps=config.save_every or 500,
        save_total_limit=config.keep_checkpoints,
        disable_tqdm=True,
    )


# Keys `LoopReward` logs under the embedded trainer's own names (copied as they are).
_LOOP_PREFIXES = ("accuracy", "library/", "skipped_frac", "reward/")


def _metrics_line(
    logs: dict[str, Any], step: int, names: Sequence[str], loop: bool = False
) -> dict[str, Any]:
    row: dict[str, Any] = {"step": step}
    renames = {
        "loss": "loss",
        "reward": "reward",
        "reward_std": "reward_std",
        "completions/mean_length": "completion_length",
        "completions/min_length": "completion_length_min",
        "completions/max_length": "completion_length_max",
        "completions/clipped_ratio": "truncated",
        "kl": "kl",
        "grad_norm": "grad_norm",
        "learning_rate": "lr",
        "rewards/accuracy/mean": "accuracy",
    }
    for src, dst in renames.items():
        if src in logs:
            row[dst] = logs[src]
    for name in names:
        key = f"rewards/rewardsmith_{name}/mean"
        if key in logs:
            row[f"reward/{name}"] = logs[key]
    for key, value in logs.items():
        if loop and (key.startswith("rewardsmith/") or key.startswith(_LOOP_PREFIXES)):
            row[key] = value  # the per-task names are the embedded trainer's (rl.rewards)
        elif key.startswith("rewardsmith/"):
            row["reward/" + key.split("/", 1)[1]] = value
    return row


class _MetricsLog(TrainerCallback):
    """Writes each logged TRL step to `metrics.jsonl` in our names (`_metrics_line`), with the
    wall time from step begin to step end (generation, reward and update)."""

    def __init__(
        self,
        path: Path,
        names: Sequence[str],
        on_step: Callable[[dict[str, Any]], None] | None,
        loop: bool = False,
    ) -> None:
        self.path = path
        self.names = list(names)
        self.loop = loop
        self.on_step = on_step
        self.started = 0.0
        self.step_seconds = 0.0
        self.last: dict[str, Any] = {}

    def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.started = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        self.step_seconds = time.perf_counter() - self.started

    def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
        if not logs or "reward" not in logs:
            return
        row = _metrics_line(logs, state.global_step, self.names, self.loop)
        row["time/step"] = self.step_seconds
        self.last = row
        append_metrics(self.path, row)
        if self.on_step:
            self.on_step(row)


def train_trl(
    policy: Policy,
    rewards: Sequence[ToolRef],
    items: Sequence[PromptItem],
    config: GRPOConfig,
    out: str | Path,
    *,
    library: Library | str | Path | None = None,
    resume: bool = False,
    on_step: Callable[[dict[str, Any]], None] | None = None,
    save_model: bool = True,
    synthesize: bool = False,
    synth_backend: str = "offline",
) -> TrainResult:
    """GRPO with TRL's `GRPOTrainer` on `policy` (prompts formatted by the policy); the
    reward functions are closed at the end, also when training raises. `synthesize`: the
    rewards grow the library (`LoopReward`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = [tool_name(t) for t in rewards]
    answer_format = config.answer_format or policy.answer_format
    funcs: list[Any]
    if synthesize:
        if not resume:
            (out / SYNTHESIS_FILE).unlink(missing_ok=True)
        loop_reward = LoopReward(
            rewards, config, answer_format, out, library=library, synth_backend=synth_backend
        )
        _ = loop_reward.reward_set  # built now: a bad reward list fails before training
        funcs = [loop_reward]
    else:
        funcs = list(reward_funcs(list(rewards), library=library, reference_column="reference"))
        funcs.append(StrictAccuracy(answer_format))
    try:
        return _train(
            policy, funcs, names, items, config, out, resume, on_step, save_model, synthesize
        )
    finally:
        for f in funcs:
            close = getattr(f, "close", None)
            if close:
                close()


def _train(
    policy: Policy,
    funcs: list[Any],
    names: list[str],
    items: Sequence[PromptItem],
    config: GRPOConfig,
    out: Path,
    resume: bool,
    on_step: Callable[[dict[str, Any]], None] | None,
    save_model: bool,
    loop: bool = False,
) -> TrainResult:
    columns: dict[str, list[Any]] = {
        "prompt": [policy.prompt_for(it.question) for it in items],
        "reference": [it.reference for it in items],
    }
    if any(it.task is not None for it in items):
        columns["task"] = [it.task for it in items]
    dataset = Dataset.from_dict(columns)
    peft_config = None
    if config.lora_rank:
        peft_config = lora_config(
            policy.model, config.lora_rank, config.lora_alpha, config.lora_dropout
        )
    metrics_path = out / METRICS_FILE
    if not resume and metrics_path.exists():
        metrics_path.unlink()
    logger = _MetricsLog(metrics_path, names, on_step, loop)
    torch.manual_seed(config.seed)
    trainer = TRLTrainer(
        model=policy.model,
        reward_funcs=funcs,
        args=trl_config(config, out, len(names), loop),
        train_dataset=dataset,
        processing_class=policy.tokenizer,
        peft_config=peft_config,
        callbacks=[logger],
    )
    trainer.remove_callback(PrinterCallback)  # our own progress and metrics file report
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if resume else None)
    seconds = time.perf_counter() - start
    model_dir = None
    if save_model:
        model: Any = trainer.model
        if hasattr(model, "merge_and_unload"):
            model = model.merge_and_unload()
        model_dir = save_policy(policy, model, out / MODEL_DIR)
    return TrainResult(trainer.state.global_step, out, model_dir, seconds, logger.last)
