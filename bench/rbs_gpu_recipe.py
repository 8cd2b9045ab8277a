"""The RBS GPU recipe (issue 28, item 4): train a label-free reward model on SmolLM2-135M at the
seed paper's data scale, then run the whole evaluation that can decide, in one command.

The seed paper trains its reward models on 11M tokens of plain math text. This recipe trains
`rm train --backbone smollm2` (or any local model folder: a 0.5B model when one is on disk)
with the seed's objective exactly (random splits that break sentences, all B(B-1) in-batch
negatives, Bradley-Terry plus score centering) until the pairs it has read hold `--tokens`
prefix + suffix tokens (11M by default; `rm train` counts them as `corpus_tokens`), on a
label-free corpus of worked solutions (`rm corpus`: testbed problems of the `sft` split and
GSM8K train, plain text, no correctness field anywhere). Then, on problems no document comes
from:

- held-out pair sets (`rm pairs`: a true solution against the same with a wrong final answer
  and with a wrong intermediate step; testbed and GSM8K test), scored by the trained model, by
  the untrained backbone with the same seed-drawn head (`rm eval`'s untrained column) and by
  the backbone with other randomly initialized heads (`--head-seeds`: how far the untrained
  baseline moves with the head's draw); 95% intervals resample whole problems;
- best-of-8 (`bench/rbs_best_of_n.py`: the warm-start testbed policy's samples of 500
  held-out problems), the RM's pick against random, majority vote and the oracle;
- with `--grpo-steps N`, GRPO of the testbed policy with the RM (+ `format_tags`) as the only
  correctness reward and with the verifier (`gsm8k,format_tags`), then `grpo eval` of both
  against the warm start (exact McNemar).

Each stage is an existing command run in this process (`rewardsmith rm corpus|pairs|train|eval`,
`grpo train|eval`, the best-of-N bench); OUT/commands.sh lists them as shell commands, and
OUT/results.json and OUT/results.md hold the numbers, the intervals, the seconds per stage
and whether each acceptance line of issue 28 holds.

    .venv/bin/python bench/rbs_gpu_recipe.py --out-dir out/rbs_gpu --device cuda
    .venv/bin/python bench/rbs_gpu_recipe.py --out-dir /tmp/rbs_tiny --tiny --backbone testbed
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
SEED_PAPER_TOKENS = 11_000_000  # "11M tokens of math web text" (the seed paper, issue 5)
RM_TOOL = "rbs_recipe"
TINY_STEPS = 3
# What --tiny changes: sizes only (a CPU check of the whole path in about a minute).
TINY = {
    "testbed_docs": 64,
    "batch_size": 4,
    "warmup_steps": 1,
    "prefix_max": 96,
    "suffix_max": 64,
    "pair_problems": 4,
    "gsm8k_problems": 3,
    "bon_problems": 4,
    "samples": 4,
    "head_seeds": 1,
    "grpo_n_eval": 8,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--backbone", default="smollm2", help="smollm2, testbed or a local HF folder")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tiny", action="store_true", help="tiny sizes: a CPU check of the path")
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse OUT's data files and continue training from its newest checkpoint",
    )
    p.add_argument("--train-only", action="store_true", help="stop after training")
    size = p.add_argument_group("data and training sizes")
    size.add_argument(
        "--tokens",
        type=float,
        default=None,
        help="prefix + suffix tokens to train on (sets the steps; default the seed paper's 11M, "
        "with --tiny 3 steps)",
    )
    size.add_argument("--max-steps", type=int, default=None, help="steps (overrides --tokens)")
    size.add_argument("--testbed-docs", type=int, default=150_000, help="testbed documents")
    size.add_argument(
        "--gsm8k-dir",
        type=Path,
        default=Path("../shared/data/gsm8k"),
        help="folder with GSM8K train.jsonl (corpus) and test.jsonl (pairs)",
    )
    size.add_argument("--no-gsm8k", action="store_true", help="testbed documents and pairs only")
    size.add_argument("--batch-size", type=int, default=16, help="B (B(B-1) negatives a batch)")
    size.add_argument("--lr", type=float, default=1e-5)
    size.add_argument("--warmup-steps", type=int, default=100)
    size.add_argument("--centering", type=float, default=0.01)
    size.add_argument("--prefix-max", type=int, default=256)
    size.add_argument("--suffix-max", type=int, default=128)
    size.add_argument("--lora-rank", type=int, default=0, help="0: full fine-tuning")
    size.add_argument(
        "--max-sequences", type=int, default=64, help="sequences per pass (memory; 0: all)"
    )
    size.add_argument("--time-limit", type=float, default=None, help="training minutes")
    ev = p.add_argument_group("evaluation sizes")
    ev.add_argument("--pair-problems", type=int, default=400, help="held-out testbed problems")
    ev.add_argument("--gsm8k-problems", type=int, default=300, help="held-out GSM8K problems")
    ev.add_argument("--bon-problems", type=int, default=500, help="best-of-N problems")
    ev.add_argument("-N", "--samples", type=int, default=8, help="best-of-N samples")
    ev.add_argument("--head-seeds", type=int, default=2, help="extra random heads to score")
    ev.add_argument(
        "--no-likelihood",
        action="store_true",
        help="skip scoring the sets by the backbone's own log-likelihood",
    )
    ev.add_argument("--grpo-steps", type=int, default=0, help="GRPO with the RM (0: skip)")
    ev.add_argument("--grpo-n-eval", type=int, default=500, help="held-out problems for GRPO")
    args = p.parse_args(argv)
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
        if args.tokens is None and args.max_steps is None:
            args.max_steps = TINY_STEPS
    if args.tokens is None:
        args.tokens = SEED_PAPER_TOKENS
    return args


class Recipe:
    """Runs the stages, records each as a shell command and times it."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.out = args.out_dir
        self.data = self.out / "data"
        self.commands: list[str] = []
        self.seconds: dict[str, float] = {}
        self.common = ["--threads", str(args.threads)] if args.threads else []

    def _record(self, stage: str, words: list[str], comment: bool = False) -> float:
        line = "# " + " ".join(words) if comment else shlex.join(words)
        self.commands.append(f"# {stage}\n{line}")
        (self.out / "commands.sh").write_text(
            "#!/bin/sh\nset -e\n" + "\n".join(self.commands) + "\n", encoding="utf-8"
        )
        return time.perf_counter()

    def cli(self, stage: str, *words: str) -> None:
        """One `rewardsmith` command, in this process."""
        from rewardsmith.cli.main import app

        start = self._record(stage, ["rewardsmith", *words])
        code = app(args=list(words), standalone_mode=False)
        if code:
            raise SystemExit(f"{stage}: `rewardsmith {' '.join(words)}` exited with {code}")
        self.seconds[stage] = round(time.perf_counter() - start, 1)

    def likelihood(self, files: list[Path], out: Path) -> dict[str, Any]:
        """The backbone's own log-likelihood of each completion as the score (no head): does
        the backbone already tell the true solution from the wrong one?"""
        from rbs_cut_pairs import likelihood_scores
        from rewardsmith.rm.evaluate import evaluate_sets, load_eval_set

        a = self.args
        start = self._record(
            "backbone likelihood",
            ["in-process: rm.evaluate.evaluate_sets with bench/rbs_cut_pairs.py's",
             f"likelihood_scores({a.backbone!r}, {a.device!r}) on", *map(str, files)],
            comment=True,
        )  # fmt: skip
        sets = [load_eval_set(f) for f in files]
        results: dict[str, Any] = evaluate_sets(sets, likelihood_scores(a.backbone, a.device))
        out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        self.seconds["backbone likelihood"] = round(time.perf_counter() - start, 1)
        return results

    def best_of_n(self, out: Path) -> None:
        sys.path.insert(0, str(BENCH))
        import rbs_best_of_n

        a = self.args
        words = ["--out", str(out), "--n", str(a.bon_problems), "-N", str(a.samples)]
        words += ["--seed", str(a.seed), "--threads", str(a.threads or 1)]
        start = self._record("best-of-N samples", ["python", "bench/rbs_best_of_n.py", *words])
        rbs_best_of_n.main(words)
        self.seconds["best-of-N samples"] = round(time.perf_counter() - start, 1)


def pair_tokens(args: argparse.Namespace, corpus: Path, sample: int = 256) -> float:
    """Mean prefix + suffix tokens of a training pair, from the first `sample` pairs of the
    stream `rm train` will read (same tokenizer, same splits)."""
    from rewardsmith.models.loading import load_tokenizer
    from rewardsmith.rm.backbones import resolve_backbone
    from rewardsmith.rm.data import PairStream

    tokenizer = load_tokenizer(resolve_backbone(args.backbone))
    stream = PairStream([corpus], tokenizer, split_config(args), epochs=1)
    sizes = []
    for pair in stream:
        sizes.append(pair.prefix_tokens + pair.suffix_tokens)
        if len(sizes) == sample:
            break
    return sum(sizes) / len(sizes)


def split_config(args: argparse.Namespace) -> Any:
    from rewardsmith.rm.data import SplitConfig

    return SplitConfig(8, args.prefix_max, 4, args.suffix_max, "random", args.seed)


def train_words(args: argparse.Namespace, out: Path, corpus: Path, steps: int) -> list[str]:
    words = ["rm", "train", "-c", str(corpus), "--out-dir", str(out)]
    words += ["--backbone", args.backbone, "--split-mode", "random"]
    words += ["--prefix-min", "8", "--prefix-max", str(args.prefix_max)]
    words += ["--suffix-min", "4", "--suffix-max", str(args.suffix_max)]
    words += ["--batch-size", str(args.batch_size), "--centering", str(args.centering)]
    words += ["--lr", str(args.lr), "--warmup-steps", str(min(args.warmup_steps, steps))]
    words += ["--max-steps", str(steps), "--save-every", str(max(1, steps // 4 or 1))]
    words += ["--lora-rank", str(args.lora_rank), "--max-sequences", str(args.max_sequences)]
    words += ["--seed", str(args.seed), "--device", args.device, "--quiet"]
    if args.time_limit is not None:
        words += ["--time-limit", str(args.time_limit)]
    return words


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The whole recipe; returns (and writes) the results."""
    args.out_dir.mkdir(parents=True, exist_ok=True)
    if args.device.startswith("cuda"):
        import torch

        torch.set_float32_matmul_precision("high")  # TF32 matmuls: float32 weights, ~3x faster
    r = Recipe(args)
    corpus, pairs, bo8 = r.data / "corpus.jsonl", r.data / "pairs", r.data / "bo8.jsonl"
    gsm8k = [] if args.no_gsm8k else ["--gsm8k", str(args.gsm8k_dir / "train.jsonl")]
    if not (args.resume and corpus.is_file()):
        r.cli(
            "corpus",
            *["rm", "corpus", "-o", str(corpus), "--testbed", str(args.testbed_docs), *gsm8k],
            *["--seed", str(args.seed)],
        )
    held_out = ["--testbed", str(args.pair_problems), "--per-kind", "2", "--seed", str(args.seed)]
    if args.no_gsm8k:
        held_out += ["--gsm8k-problems", "0"]
    else:
        held_out += ["--gsm8k", str(args.gsm8k_dir / "test.jsonl")]
        held_out += ["--gsm8k-problems", str(args.gsm8k_problems)]
    if not (args.resume and any(pairs.glob("*_pairs.jsonl"))):
        r.cli("pair sets", "rm", "pairs", "--out-dir", str(pairs), *held_out)
    if not (args.resume and bo8.is_file()):
        r.best_of_n(bo8)

    mean_pair = pair_tokens(args, corpus)
    steps = args.max_steps
    if steps is None:
        steps = max(1, math.ceil(args.tokens / (args.batch_size * mean_pair)))
    model = args.out_dir / "rm"
    register = ["--library", str(args.out_dir / "library.db"), "--name", RM_TOOL]
    train = train_words(args, model, corpus, steps)
    if args.resume and (model / "checkpoints").is_dir():
        train.append("--resume")
    r.cli("train", *train, *(register if args.grpo_steps else ["--no-register"]), *r.common)
    if args.train_only:
        return {"training": json.loads((model / "rbs_config.json").read_text()).get("result")}

    eval_data = [w for f in sorted(pairs.glob("*_pairs.jsonl")) for w in ("-d", str(f))]
    eval_data += ["-d", str(bo8), "--device", args.device, *r.common]
    evals = args.out_dir / "eval"
    r.cli("eval trained + untrained", "rm", "eval", "-m", str(model), *eval_data,
          "-o", str(evals / "trained.json"))  # fmt: skip
    heads = []
    for k in range(1, args.head_seeds + 1):
        head_dir = args.out_dir / f"head_seed{args.seed + k}"
        words = train_words(args, head_dir, corpus, 0)
        words[words.index("--seed") + 1] = str(args.seed + k)
        r.cli(f"random head {k}", *words, "--no-register", *r.common)
        r.cli(f"eval random head {k}", "rm", "eval", "-m", str(head_dir), *eval_data,
              "--no-untrained", "-o", str(evals / f"head_seed{args.seed + k}.json"))  # fmt: skip
        heads.append(json.loads((evals / f"head_seed{args.seed + k}.json").read_text()))
    files = [Path(w) for w in eval_data[1 : eval_data.index("--device") : 2]]
    likelihood = None if args.no_likelihood else r.likelihood(files, evals / "likelihood.json")
    grpo = run_grpo(r, args, register) if args.grpo_steps else None
    from rbs_recipe_report import summarize, write_markdown

    results = summarize(
        json.loads((evals / "trained.json").read_text()),
        heads,
        likelihood,
        json.loads((model / "rbs_config.json").read_text()),
        grpo,
        settings={**vars(args), "out_dir": str(args.out_dir), "gsm8k_dir": str(args.gsm8k_dir)},
        seconds=r.seconds,
        mean_pair_tokens=mean_pair,
    )
    (args.out_dir / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    write_markdown(results, args.out_dir / "results.md")
    return results


def run_grpo(r: Recipe, args: argparse.Namespace, register: list[str]) -> dict[str, Any]:
    """GRPO of the testbed policy with the RM as the only correctness reward, and with the
    verifier, at the same budget; `grpo eval` of both against the warm start."""
    library = register[:2]
    runs = {"rm": f"{RM_TOOL},format_tags", "verifier": "gsm8k,format_tags"}
    for name, reward in runs.items():
        r.cli(
            f"grpo {name}",
            *["grpo", "train", "--out-dir", str(args.out_dir / f"grpo_{name}")],
            *["--policy", "testbed", "--reward", reward, "--steps", str(args.grpo_steps)],
            *["--prompts-per-step", "16", "-G", "8", "--max-new-tokens", "48", "--lr", "1e-4"],
            *["--lora-rank", "0", "--seed", str(args.seed), "--device", args.device],
            *["--log-completions-every", "20", "--no-plot", "--quiet", *library, *r.common],
        )
    out = args.out_dir / "eval" / "grpo.json"
    policies = ["-p", "testbed"] + [
        w for name in runs for w in ("-p", str(args.out_dir / f"grpo_{name}" / "model"))
    ]
    r.cli("grpo eval", "grpo", "eval", *policies, "--n", str(args.grpo_n_eval),
          "--device", args.device, "-o", str(out), "--quiet", *r.common)  # fmt: skip
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.path.insert(0, str(BENCH))
    results = run(args)
    if args.train_only:
        print(f"trained (--train-only): {results['training']}")
        return
    print((args.out_dir / "results.md").read_text(encoding="utf-8"))
    print(f"acceptance: {results['acceptance']}")


if __name__ == "__main__":
    main()
