"""`rewardsmith grpo train|eval`: GRPO with rewardsmith rewards, and held-out evaluation.

torch and transformers are imported inside the commands, so `rewardsmith --help` stays fast
and works without the `rl` extra.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from rewardsmith.cli.common import (
    LibraryOption,
    LLMKeyOption,
    LLMModelOption,
    LLMUrlOption,
    apply_llm_flags,
    progress_bar,
    warn_long_warmup,
)
from rewardsmith.cli.grpo_common import default_data, require_torch
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import ConfigError, MissingDependencyError
from rewardsmith.models.loading import torch_threads
from rewardsmith.report.grpo_plot import plot_metrics
from rewardsmith.rl.prompts import load_items

app = typer.Typer(
    help="GRPO on rewardsmith rewards: train a policy, evaluate checkpoints.",
    no_args_is_help=True,
)
console = PlainConsole()

# The final table averages the last steps: one step's numbers are noisy with few prompts.
SUMMARY_STEPS = 10
# Per-task metrics stay in metrics.jsonl: the table would be too long.
PER_TASK_PREFIXES = ("rewardsmith/", "accuracy/")


def synthesis_table(path: Path) -> Table:
    """The tools synthesized during a run (OUT/synthesis.jsonl): step, task, verdict."""
    table = Table(title="library growth during training")
    for col in ("step", "task", "tool", "admitted", "held-out acc", "reason"):
        table.add_column(col, justify="right" if col in ("step", "held-out acc") else "left")
    rows = []
    if path.exists():
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for r in rows:
        acc = r.get("held_out_accuracy")
        table.add_row(
            str(r.get("step")),
            str(r.get("task") or "-"),
            str(r.get("tool")),
            "yes" if r.get("admitted") else "no",
            "-" if acc is None else f"{acc:.3f}",
            str(r.get("reason") or "")[:60],
        )
    if not rows:
        table.caption = "no task needed a new tool"
    return table


def _floats(text: str | None) -> tuple[float, ...] | None:
    if not text:
        return None
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError as exc:
        raise ConfigError(f"expected comma-separated numbers, got {text!r}") from exc


@app.command("train")
def train_cmd(
    out: Annotated[
        Path, typer.Option("--out-dir", "--out", help="Run folder (metrics, checkpoints, model).")
    ],
    policy: Annotated[
        str,
        typer.Option(
            help="testbed, testbed-multi (7 task families), testbed-tiny, smollm2, or a model "
            "folder."
        ),
    ] = "testbed",
    reward: Annotated[
        str | None,
        typer.Option(
            help="Reward tool(s), comma-separated: gsm8k,format_tags; 'router' routes each "
            "sample (default: router with --synthesize, else gsm8k,format_tags)."
        ),
    ] = None,
    reward_weights: Annotated[
        str | None, typer.Option(help="Weights of the reward tools, comma-separated.")
    ] = None,
    steps: Annotated[int, typer.Option(help="Optimizer steps (rollout batches).")] = 200,
    data: Annotated[
        str | None,
        typer.Option(
            help="Prompts: 'testbed', 'testbed-multi', or a JSONL file (question or prompt, "
            "reference or answer, optional task). Default: the policy's own ('testbed-multi' "
            "for testbed-multi, else 'testbed')."
        ),
    ] = None,
    n_prompts: Annotated[int | None, typer.Option(help="Use the first N prompts.")] = None,
    prompts_per_step: Annotated[int, typer.Option(help="Prompts per step.")] = 8,
    group_size: Annotated[
        int, typer.Option("--group-size", "-G", help="Completions per prompt.")
    ] = 8,
    max_new_tokens: Annotated[int, typer.Option(help="Completion length limit (tokens).")] = 64,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 1.0,
    top_k: Annotated[int, typer.Option(help="Top-k sampling (0: off).")] = 0,
    top_p: Annotated[float, typer.Option(help="Nucleus sampling mass.")] = 1.0,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 1e-4,
    warmup_steps: Annotated[int, typer.Option(help="Linear warmup steps.")] = 0,
    beta: Annotated[float, typer.Option(help="KL coefficient to the reference policy.")] = 0.0,
    epsilon: Annotated[float, typer.Option(help="Clip range (low; and high unless given).")] = 0.2,
    epsilon_high: Annotated[float | None, typer.Option(help="Upper clip range.")] = None,
    num_iterations: Annotated[int, typer.Option(help="Update passes per rollout batch (mu).")] = 1,
    grad_accum: Annotated[int, typer.Option(help="Gradient accumulation micro-batches.")] = 1,
    loss_type: Annotated[
        str, typer.Option(help="dapo (token mean) or grpo (sequence mean).")
    ] = "dapo",
    scale_rewards: Annotated[bool, typer.Option(help="Divide advantages by the group std.")] = True,
    lora_rank: Annotated[int, typer.Option(help="LoRA rank (0: full fine-tuning).")] = 32,
    lora_alpha: Annotated[int, typer.Option(help="LoRA alpha.")] = 64,
    answer: Annotated[
        str | None, typer.Option(help="Answer format for accuracy: solution or gsm8k.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of prompts, sampling and LoRA init.")] = 0,
    save_every: Annotated[int, typer.Option(help="Checkpoint every N steps (0: at the end).")] = 0,
    time_limit: Annotated[
        float | None, typer.Option(help="Stop and save after this many minutes.")
    ] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue from the newest checkpoint in OUT.")
    ] = False,
    backend: Annotated[str, typer.Option(help="embedded (default) or trl.")] = "embedded",
    device: Annotated[str, typer.Option(help="cpu, cuda...")] = "cpu",
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    plot: Annotated[bool, typer.Option(help="Write OUT/metrics.png.")] = True,
    log_completions_every: Annotated[
        int,
        typer.Option(
            help="Every N steps, write the step's completions and rewards to "
            "OUT/completions.jsonl (for a reward-hacking audit; 0: never)."
        ),
    ] = 0,
    synthesize: Annotated[
        bool,
        typer.Option(
            "--synthesize",
            help="Grow the library while training: a task the library cannot grade gets a "
            "synthesized, gated tool from its first samples; until then its samples are skipped.",
        ),
    ] = False,
    synth_backend: Annotated[
        str,
        typer.Option(
            help="How --synthesize writes a verifier: offline (composed) or llm (--llm-url). "
            "Named so because --backend is the trainer."
        ),
    ] = "offline",
    llm_url: LLMUrlOption = None,
    llm_model: LLMModelOption = None,
    llm_key: LLMKeyOption = None,
    library: LibraryOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Train a policy with GRPO on rewardsmith rewards; metrics go to OUT/metrics.jsonl.

    With --synthesize, the library grows during training: tasks it cannot grade are
    synthesized for (OUT/synthesis.jsonl, library events with the step), and per-task
    metrics rewardsmith/TASK/TOOL/mean are logged."""
    require_torch()
    apply_llm_flags(llm_url, llm_model, llm_key)
    from rewardsmith.rl.grpo import GRPOConfig, GRPOTrainer
    from rewardsmith.rl.policies import load_policy
    from rewardsmith.rl.rewards import parse_rewards

    if backend not in ("embedded", "trl"):
        raise ConfigError(f"--backend must be embedded or trl, got {backend!r}")
    if backend == "trl" and log_completions_every:
        raise ConfigError("--log-completions-every is for the embedded backend")
    torch_threads(threads)
    warn_long_warmup(warmup_steps, steps)
    config = GRPOConfig(
        steps=steps,
        prompts_per_step=prompts_per_step,
        group_size=group_size,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        lr=lr,
        warmup_steps=warmup_steps,
        epsilon=epsilon,
        epsilon_high=epsilon_high,
        beta=beta,
        scale_rewards=scale_rewards,
        loss_type=loss_type,  # type: ignore[arg-type]  # checked by GRPOConfig
        num_iterations=num_iterations,
        grad_accum=grad_accum,
        lora_rank=lora_rank,
        lora_alpha=lora_alpha,
        reward_weights=_floats(reward_weights),
        answer_format=answer,  # type: ignore[arg-type]  # checked by GRPOConfig
        seed=seed,
        save_every=save_every,
        time_limit_s=time_limit * 60 if time_limit else None,
        log_completions_every=log_completions_every,
        skip_unscored=synthesize,
    )
    tools = parse_rewards(reward or ("router" if synthesize else "gsm8k,format_tags"))
    with console.status(f"loading policy {policy}...", spinner="dots") if not quiet else _Null():
        pol = load_policy(policy, device=device, progress=None if quiet else console.log)
    items = load_items(data or default_data(policy), n_prompts, seed)
    history: list[dict[str, Any]] = []
    with progress_bar(console, quiet) as bar:
        task = bar.add_task("GRPO", total=steps)

        def on_step(m: dict[str, Any]) -> None:
            history.append(m)
            acc = m.get("accuracy", float("nan"))
            bar.update(
                task,
                completed=m["step"],
                description=f"GRPO reward {m.get('reward', 0):.3f} acc {acc:.3f}",
            )

        if backend == "trl":
            from rewardsmith.rl.trl_backend import train_trl

            result = train_trl(
                pol,
                tools,
                items,
                config,
                out,
                library=library,
                resume=resume,
                on_step=on_step,
                synthesize=synthesize,
                synth_backend=synth_backend,
            )
        else:
            trainer = GRPOTrainer(
                pol,
                tools,
                items,
                config,
                out,
                library=library,
                synthesize=synthesize,
                synth_backend=synth_backend,
            )
            result = trainer.train(resume=resume, on_step=on_step)
    if plot and (out / "metrics.jsonl").exists():
        try:
            plot_metrics(out / "metrics.jsonl", out / "metrics.png")
        except MissingDependencyError as exc:
            console.print(Text.assemble(("no plot:", "yellow"), f" {exc}"))
    if not quiet:
        console.print(_train_table(history, result.seconds, backend))
        if synthesize:
            console.print(synthesis_table(out / "synthesis.jsonl"))
        console.print(f"model: {result.model_dir}  metrics: {out / 'metrics.jsonl'}")


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _train_table(history: list[dict[str, Any]], seconds: float, backend: str) -> Table:
    table = Table(title=f"GRPO ({backend}): first and last {SUMMARY_STEPS} steps, means")
    table.add_column("metric")
    table.add_column("first", justify="right")
    table.add_column("last", justify="right")
    head, tail = history[:SUMMARY_STEPS], history[-SUMMARY_STEPS:]
    keys = [
        k
        for k in (history[-1] if history else {})
        if k != "step" and not k.endswith("_frac") and not k.startswith(PER_TASK_PREFIXES)
    ]
    for key in keys:
        a = [float(m[key]) for m in head if key in m]
        b = [float(m[key]) for m in tail if key in m]
        if a and b:
            table.add_row(key, f"{statistics.fmean(a):.4g}", f"{statistics.fmean(b):.4g}")
    table.caption = f"{len(history)} steps in {seconds:.0f} s"
    return table


# Registered here so `rewardsmith grpo --help` lists them after train.
from rewardsmith.cli.grpo_eval import eval_cmd  # noqa: E402
from rewardsmith.cli.grpo_testbed import testbed_cmd  # noqa: E402

app.command("eval")(eval_cmd)
app.command("testbed")(testbed_cmd)
