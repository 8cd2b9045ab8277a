"""The embedded GRPO trainer: Group Relative Policy Optimization for any Hugging Face causal LM.

One step (Shao et al. 2024, "DeepSeekMath", section 4.1, outcome supervision):

1. draw `prompts_per_step` prompts and sample G = `group_size` completions for each;
2. score every completion with the reward tools (a weighted sum, `rl.rewards`);
3. advantages A_i = (r_i - mean(r_group)) / (std(r_group) + eps), the same for every token
   of completion i (`scale_rewards=False`: A_i = r_i - mean, as in Dr. GRPO);
4. minimize -min(rho_t A_i, clip(rho_t, 1 - epsilon, 1 + epsilon_high) A_i)
   + beta * KL_t, with rho_t = pi(o_t) / pi_old(o_t) and the k3 estimator
   KL_t = exp(ref_t - logp_t) - (ref_t - logp_t) - 1 against a frozen reference policy;
   `num_iterations` (mu) passes over each rollout batch, each one optimizer step, with
   gradient accumulation over `grad_accum` micro-batches.

How it departs from the GRPO paper:

- no reference model by default (beta = 0, as DAPO, Dr. GRPO and TRL's default): the KL term
  costs a second forward pass and the clip already bounds each update;
- the default loss averages over all completion tokens of the batch (`loss_type="dapo"`, DAPO's
  token-level loss) rather than per sequence then per group (`loss_type="grpo"`, the paper's
  1/G sum_i 1/|o_i| sum_t), which favours short wrong answers over long wrong ones;
- std is the population std of the group (the paper does not say which); a group whose
  rewards are all equal gets zero advantage and contributes no gradient.

How it departs from TRL's `GRPOTrainer`:

- rollouts are sampled with a plain KV-cache loop (`rl.generation`), not `model.generate`,
  so the sampling distribution and the log-prob pass are written side by side (same speed);
- each step's prompts and sampling RNG are a function of (seed, step) alone, and a checkpoint
  holds the trainable weights and the optimizer and scheduler states, so a resumed run repeats
  the uninterrupted one exactly (the loss of the next step is bit-identical on the same
  machine and thread count);
- the group std is the population std (TRL uses the sample std); rewards that do not score
  (None) count as 0 instead of being left out of the sum;
- metrics: every reward tool and component, strict accuracy (`rl.answers`), completion
  lengths and the time split (generation / reward / update) are written per step to
  `OUT/metrics.jsonl`.

LoRA (through peft, rank 32 by default, on every linear layer) or full fine-tuning
(`lora_rank=0`). The trained policy is saved as a plain Hugging Face model in `OUT/model`
(LoRA merged), loadable by `rewardsmith grpo eval --policy OUT/model`.

    rewardsmith grpo train --policy testbed --reward gsm8k,format_tags --steps 300 --out-dir runs/tb
"""

from __future__ import annotations

import copy
import json
import logging
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import get_constant_schedule_with_warmup

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.files import atomic_write
from rewardsmith.library.store import Library
from rewardsmith.models.checkpoints import (
    CHECKPOINTS,
    METRICS_FILE,
    STATE_FILE,
    append_metrics,
    checkpoint_dir,
    latest_checkpoint,
    load_trainer_state,
    truncate_metrics,
    writing_checkpoint,
)
from rewardsmith.rl.answers import AnswerFormat, judge_answer
from rewardsmith.rl.collapse import CollapseMonitor
from rewardsmith.rl.generation import Rollout, generate, token_logprobs
from rewardsmith.rl.grpo_config import GRPOConfig
from rewardsmith.rl.grpo_math import (
    batch_indices,
    clipped_objective,
    group_advantages,
    step_seed,
)
from rewardsmith.rl.lora import add_lora
from rewardsmith.rl.policies import Policy, save_policy
from rewardsmith.rl.prompts import PromptItem
from rewardsmith.rl.rewards import RewardSet, ToolRef
from rewardsmith.rollout_log import RolloutLog

log = logging.getLogger(__name__)

CONFIG_FILE = "grpo_config.json"
SUMMARY_FILE = "summary.json"
COMPLETIONS_FILE = "completions.jsonl"
SYNTHESIS_FILE = "synthesis.jsonl"
MODEL_DIR = "model"


# -- the trainer --------------------------------------------------------------------------------


def task_accuracy(tasks: Sequence[str | None], verdicts: Sequence[Any]) -> dict[str, float]:
    """`accuracy/<task>` per task of the batch (strict accuracy of its completions)."""
    if all(t is None for t in tasks):
        return {}
    by: dict[str, list[bool]] = {}
    for task, verdict in zip(tasks, verdicts, strict=True):
        by.setdefault(task or "-", []).append(verdict.correct)
    return {f"accuracy/{t}": sum(v) / len(v) for t, v in sorted(by.items())}


@dataclass
class TrainResult:
    steps: int
    out: Path
    model_dir: Path | None
    seconds: float
    last: dict[str, Any] = field(default_factory=dict)


class GRPOTrainer:
    """GRPO on `policy` with rewardsmith rewards; writes metrics, checkpoints and the model
    under `out` (see the module docstring)."""

    def __init__(
        self,
        policy: Policy,
        rewards: Sequence[ToolRef],
        items: Sequence[PromptItem],
        config: GRPOConfig,
        out: str | Path,
        *,
        library: Library | str | Path | None = None,
        synthesize: bool = False,
        synth_backend: str = "offline",
    ) -> None:
        """`synthesize`: the `router` reward synthesizes a tool for a task the library
        cannot grade (see `rl.rewards`); syntheses go to `OUT/synthesis.jsonl`."""
        if not items:
            raise InputError("GRPO needs at least one training prompt")
        self.policy = policy
        self.items = list(items)
        self.config = config
        self.out = Path(out)
        self.answer_format: AnswerFormat = config.answer_format or policy.answer_format
        self.step = 0
        torch.manual_seed(config.seed)  # LoRA initialization
        self.ref_model: Any = None
        if config.beta > 0 and config.lora_rank == 0:
            self.ref_model = copy.deepcopy(policy.model).eval().requires_grad_(False)
        self.model = self._wrap(policy.model)
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(
            trainable, lr=config.lr, betas=(0.9, 0.99), weight_decay=config.weight_decay
        )
        # The schedule TRL's backend gets too (`lr_scheduler_type="constant_with_warmup"`).
        self.scheduler = get_constant_schedule_with_warmup(self.optimizer, config.warmup_steps)
        # Last: the reward tools hold processes and connections that `close()` releases.
        self.reward = RewardSet(
            rewards,
            config.reward_weights,
            library=library,
            synthesize=synthesize,
            synth_backend=synth_backend,
        )
        self.syntheses: list[dict[str, Any]] = []
        self.collapse = CollapseMonitor(
            answers="text" if self.answer_format == "family" else "number"
        )

    def _wrap(self, model: Any) -> Any:
        cfg = self.config
        if cfg.lora_rank == 0:
            model.requires_grad_(True)
            return model
        return add_lora(model, cfg.lora_rank, cfg.lora_alpha, cfg.lora_dropout)

    def close(self) -> None:
        """Release the reward tools (worker processes, library connection)."""
        self.reward.close()

    def __enter__(self) -> GRPOTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- one step -------------------------------------------------------------------------

    def train_step(self) -> dict[str, Any]:
        """Run the next step and return its metrics (also appended to `metrics.jsonl`)."""
        cfg = self.config
        self.step += 1
        torch.manual_seed(step_seed(cfg.seed, self.step))
        t0 = time.perf_counter()
        chosen = [
            self.items[i]
            for i in batch_indices(len(self.items), cfg.prompts_per_step, cfg.seed, self.step)
        ]
        prompts = [self.policy.prompt_for(it.question) for it in chosen]
        rollout = generate(
            self.model,
            self.policy.tokenizer,
            prompts,
            num_return=cfg.group_size,
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_k=cfg.top_k,
            top_p=cfg.top_p,
        )
        t1 = time.perf_counter()
        g = cfg.group_size
        flat_prompts = [p for p in prompts for _ in range(g)]
        references = [it.reference for it in chosen for _ in range(g)]
        tasks = [it.task for it in chosen for _ in range(g)]
        scored = self.reward.score(flat_prompts, rollout.texts, references, tasks, step=self.step)
        t2 = time.perf_counter()
        rewards = torch.tensor(scored.total)
        valid = torch.tensor(scored.valid, dtype=torch.bool)
        skip = cfg.skip_unscored and not bool(valid.all())
        advantages = group_advantages(rewards, g, cfg.scale_rewards, valid if skip else None)
        if skip:
            keep = valid.nonzero().squeeze(1)
            update = self._update(rollout.select(keep), advantages[keep]) if len(keep) else {}
        else:
            update = self._update(rollout, advantages)
        t3 = time.perf_counter()
        verdicts = [
            judge_answer(t, r, self.answer_format, task)
            for t, r, task in zip(rollout.texts, references, tasks, strict=True)
        ]
        lengths = rollout.lengths.float()
        group_std = rewards.view(-1, g).std(dim=1, unbiased=False)
        metrics: dict[str, Any] = {
            "step": self.step,
            "loss": update.get("loss", 0.0),
            "reward": float(rewards.mean()),
            "reward_std": float(rewards.std(unbiased=False)),
            **scored.metrics,
            "accuracy": sum(v.correct for v in verdicts) / len(verdicts),
            "parseable": sum(v.parseable for v in verdicts) / len(verdicts),
            "completion_length": float(lengths.mean()),
            "completion_length_min": float(lengths.min()),
            "completion_length_max": float(lengths.max()),
            "truncated": float(rollout.truncated.float().mean()),
            "zero_std_groups": float((group_std < 1e-8).float().mean()),
            "clip_frac": update.get("clip_frac", 0.0),
            "grad_norm": update.get("grad_norm", 0.0),
            "lr": self.scheduler.get_last_lr()[0],
            "time/generate": t1 - t0,
            "time/reward": t2 - t1,
            "time/update": t3 - t2,
            "time/step": t3 - t0,
            "reward_share": (t2 - t1) / max(t3 - t0, 1e-9),
        }
        if cfg.beta > 0:
            metrics["kl"] = update.get("kl", 0.0)
        if cfg.skip_unscored:
            metrics["skipped_frac"] = 1 - float(valid.float().mean())
        metrics.update(task_accuracy(tasks, verdicts))
        metrics.update(
            self.collapse.step(self.step, rollout.texts, flat_prompts, g, metrics["accuracy"])
        )
        if scored.admissions:
            self.syntheses.extend(scored.admissions)
            with (self.out / SYNTHESIS_FILE).open("a", encoding="utf-8") as fh:
                fh.writelines(json.dumps(row) + "\n" for row in scored.admissions)
        if self.syntheses:
            metrics["library/admitted"] = sum(r["admitted"] for r in self.syntheses)
        append_metrics(self.out / METRICS_FILE, metrics)
        if cfg.log_completions_every and self.step % cfg.log_completions_every == 0:
            with RolloutLog(self.out / COMPLETIONS_FILE) as rollout_log:
                rollout_log.write(scored.audit_rows(self.step, g, verdicts))
        return metrics

    def _micro_batches(self, n: int) -> list[slice]:
        size = math.ceil(n / self.config.grad_accum)
        return [slice(i, min(n, i + size)) for i in range(0, n, size)]

    def _logprobs(self, model: Any, rollout: Rollout, rows: slice) -> torch.Tensor:
        return token_logprobs(
            model,
            rollout.prompt_ids[rows],
            rollout.prompt_mask[rows],
            rollout.completion_ids[rows],
            rollout.completion_mask[rows],
            temperature=self.config.temperature,
        )

    def _reference_logprobs(self, rollout: Rollout, rows: slice) -> torch.Tensor:
        with torch.no_grad():
            if self.ref_model is not None:
                return self._logprobs(self.ref_model, rollout, rows)
            with self.model.disable_adapter():  # LoRA: the base model is the reference
                return self._logprobs(self.model, rollout, rows)

    def _update(self, rollout: Rollout, advantages: torch.Tensor) -> dict[str, float]:
        cfg = self.config
        n = rollout.completion_ids.shape[0]
        mask = rollout.completion_mask
        denominator = float(mask.sum().clamp(min=1)) if cfg.loss_type == "dapo" else float(n)
        chunks = self._micro_batches(n)
        self.model.train()
        old: list[torch.Tensor | None] = [None] * len(chunks)
        if cfg.num_iterations > 1:  # pi_old is the policy that sampled, fixed across passes
            with torch.no_grad():
                old = [self._logprobs(self.model, rollout, rows) for rows in chunks]
        refs: list[torch.Tensor | None] = [None] * len(chunks)
        if cfg.beta > 0:
            refs = [self._reference_logprobs(rollout, rows) for rows in chunks]
        first: dict[str, float] = {}
        for iteration in range(cfg.num_iterations):
            loss_total = clipped = kl = tokens = 0.0
            for k, rows in enumerate(chunks):
                logp = self._logprobs(self.model, rollout, rows)
                old_k = old[k]
                parts = clipped_objective(
                    logp,
                    logp.detach() if old_k is None else old_k,
                    advantages[rows],
                    mask[rows],
                    epsilon=cfg.epsilon,
                    epsilon_high=cfg.clip_high,
                    loss_type=cfg.loss_type,
                    denominator=denominator,
                    beta=cfg.beta,
                    ref_logp=refs[k],
                )
                parts.loss.backward()
                loss_total += float(parts.loss.detach())
                clipped += parts.clipped_tokens
                kl += parts.kl_sum
                tokens += parts.tokens
            params = [p for p in self.model.parameters() if p.requires_grad]
            grad_norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            if iteration == 0:
                first = {
                    "loss": loss_total,
                    "clip_frac": clipped / max(tokens, 1.0),
                    "kl": kl / max(tokens, 1.0),
                    "grad_norm": grad_norm,
                }
        return first

    # -- the run --------------------------------------------------------------------------

    def train(
        self,
        *,
        resume: bool = False,
        on_step: Callable[[dict[str, Any]], None] | None = None,
        save_model: bool = True,
    ) -> TrainResult:
        """Run to `config.steps` (or the time limit), checkpointing every `save_every` steps;
        `resume`: continue from the newest checkpoint in `out`. The reward tools are closed
        at the end, also when a step (or `on_step`) raises."""
        try:
            return self._run(resume, on_step, save_model)
        finally:
            self.close()

    def _run(
        self,
        resume: bool,
        on_step: Callable[[dict[str, Any]], None] | None,
        save_model: bool,
    ) -> TrainResult:
        self.out.mkdir(parents=True, exist_ok=True)
        atomic_write(
            self.out / CONFIG_FILE,
            json.dumps(
                {
                    "grpo": self.config.to_dict(),
                    "policy": self.policy.name,
                    "policy_source": self.policy.source,
                    "rewards": self.reward.names,
                    "items": len(self.items),
                },
                indent=2,
            )
            + "\n",
        )
        if resume:
            self.resume()
        else:
            for name in (METRICS_FILE, COMPLETIONS_FILE, SYNTHESIS_FILE):
                (self.out / name).unlink(missing_ok=True)
        start = time.perf_counter()
        last: dict[str, Any] = {}
        cfg = self.config
        while self.step < cfg.steps:
            last = self.train_step()
            if on_step:
                on_step(last)
            if cfg.save_every and self.step % cfg.save_every == 0:
                self.save_checkpoint()
            if cfg.time_limit_s and time.perf_counter() - start > cfg.time_limit_s:
                log.warning("time limit reached after step %d; saving", self.step)
                break
        if not cfg.save_every or self.step % cfg.save_every:
            self.save_checkpoint()
        model_dir = self.save_model(self.out / MODEL_DIR) if save_model else None
        seconds = time.perf_counter() - start
        summary = {"steps": self.step, "seconds": round(seconds, 1), "last": last}
        atomic_write(self.out / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
        return TrainResult(self.step, self.out, model_dir, seconds, last)

    # -- checkpoints --------------------------------------------------------------------------

    def trainable_state(self) -> dict[str, torch.Tensor]:
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def save_checkpoint(self) -> Path:
        """`out/checkpoints/step-N/trainer_state.pt`: trainable weights, optimizer, scheduler;
        the newest `keep_checkpoints` are kept."""
        state = {
            "step": self.step,
            "weights": self.trainable_state(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "config": self.config.to_dict(),
        }
        with writing_checkpoint(self.out, self.step, self.config.keep_checkpoints) as path:
            torch.save(state, path / STATE_FILE)
        return checkpoint_dir(self.out, self.step)

    def resume(self, checkpoint: Path | None = None) -> int:
        """Load the newest (or the given) checkpoint; returns the step it ends. Metrics lines
        after that step are dropped, since the resumed run writes them again."""
        path = checkpoint or latest_checkpoint(self.out)
        if path is None:
            raise ConfigError(f"no checkpoint to resume in {self.out / CHECKPOINTS}")
        state = load_trainer_state(path / STATE_FILE)
        params = dict(self.model.named_parameters())
        missing = set(params[n] for n in params if params[n].requires_grad)
        with torch.no_grad():
            for name, tensor in state["weights"].items():
                if name not in params:
                    raise ConfigError(
                        f"checkpoint {path} does not fit this model (no parameter {name}); "
                        "resume with the same policy and LoRA settings"
                    )
                params[name].copy_(tensor)
                missing.discard(params[name])
        if missing:
            raise ConfigError(f"checkpoint {path} lacks {len(missing)} trainable tensors")
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = int(state["step"])
        truncate_metrics(self.out / METRICS_FILE, self.step)
        if (self.out / METRICS_FILE).is_file():  # the monitor's history, as it was logged
            rows = (self.out / METRICS_FILE).read_text(encoding="utf-8").splitlines()
            self.collapse.replay([json.loads(line) for line in rows if line.strip()])
        truncate_metrics(self.out / COMPLETIONS_FILE, self.step)
        truncate_metrics(self.out / SYNTHESIS_FILE, self.step)
        path = self.out / SYNTHESIS_FILE
        if path.exists():
            lines = path.read_text(encoding="utf-8").splitlines()
            self.syntheses = [json.loads(line) for line in lines if line.strip()]
        return self.step

    def save_model(self, path: Path) -> Path:
        """The policy as a plain Hugging Face model (LoRA merged into a copy of the weights)."""
        model = self.model
        if hasattr(model, "merge_and_unload"):
            model = copy.deepcopy(model).merge_and_unload()
        if path.exists():
            shutil.rmtree(path)
        return save_policy(self.policy, model, path)
