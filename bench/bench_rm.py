"""Benchmark: RBS training throughput, cross-encoder vs bi-encoder vs TRL's RewardTrainer.

All three train the same backbone (MiniLM-L6 by default) on the same batches of B
(prefix, suffix) pairs from the math corpus, and all three optimize the same comparisons:
every prefix's true suffix against the B - 1 other suffixes of its batch (B(B-1)
comparisons per batch).

- cross-encoder (`rm.model.CrossEncoder`): one forward pass per (prefix, suffix): B^2
  sequences per batch (the B chosen ones are shared by the B - 1 comparisons of their row);
- bi-encoder (`rm.model.BiEncoder`): B prefix and B suffix encodings, all B x B scores from
  them: 2B sequences per batch;
- TRL `RewardTrainer`: the B(B-1) comparisons as explicit rows `(chosen_ids, rejected_ids)`,
  pre-tokenized with exactly the cross-encoder's pair encoding, `per_device_train_batch_size
  = B` rows: 2 sequences per comparison, 2B(B-1) per batch. Its defaults of activation
  checkpointing and bf16 are turned off, so all three run plain fp32 with AdamW.

"pairs/s" is comparisons per second of training (forward, backward, AdamW step), "tokens/s"
the tokens through the backbone per second (padding excluded). One warm-up step per method is
not timed. Timings on a shared 2-vCPU machine vary by +-15% from run to run; the ratios are
the point.

    .venv/bin/python bench/bench_rm.py [--batch 8] [--batches 2] [--backbone minilm]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

from rewardsmith.rm.data import PairStream, SplitConfig, batches
from rewardsmith.rm.loss import rbs_loss
from rewardsmith.rm.model import ScoringModel, Windows, init_scorer

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
FALLBACK_CORPUS = (
    Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "gsm8k" / "test_slice.jsonl"
)


def corpus_source() -> tuple[str, str]:
    gsm8k = DATA / "gsm8k" / "train.jsonl"
    if gsm8k.is_file():
        return str(gsm8k), "question,answer"
    return str(FALLBACK_CORPUS), "question,answer"


def throughput(pairs: int, tokens: int, seconds: float) -> dict[str, float]:
    """One trainer's timed steps as rates (what the table prints)."""
    return {
        "pairs_per_s": pairs / seconds,
        "tokens_per_s": tokens / seconds,
        "seconds": seconds,
        "pairs": pairs,
        "tokens": tokens,
    }


def time_ours(scorer: ScoringModel, data: list[list[Any]], lr: float) -> dict[str, float]:
    """Train on `data` (first batch untimed); comparisons/s and tokens/s."""
    opt = torch.optim.AdamW(scorer.parameters(), lr=lr)
    scorer.train()
    pairs = tokens = 0
    start = 0.0
    for i, batch in enumerate(data):
        if i == 1:
            start = time.perf_counter()
        pos, neg, n_tokens = scorer.score_batch(
            [p.prefix for p in batch], [p.suffix for p in batch], None
        )
        rbs_loss(pos, neg, 0.01).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if i >= 1:
            pairs += neg.numel()
            tokens += n_tokens
    return throughput(pairs, tokens, time.perf_counter() - start)


def time_trl(
    backbone: str, data: list[list[Any]], windows: Windows, lr: float, out: Path
) -> dict[str, float]:
    """TRL RewardTrainer on the same comparisons as explicit rows (first batch untimed)."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import RewardConfig, RewardTrainer

    scorer = init_scorer(backbone, "cross", windows, seed=0, device="cpu")
    tok = scorer.tokenizer
    rows = []
    for batch in data:
        enc = {}
        for i, p in enumerate(batch):
            for j, r in enumerate(batch):
                enc[(i, j)] = tok(p.prefix, r.suffix, truncation="longest_first", max_length=512)[
                    "input_ids"
                ]
        rows += [
            {"chosen_ids": enc[(i, i)], "rejected_ids": enc[(i, j)]}
            for i in range(len(batch))
            for j in range(len(batch))
            if j != i
        ]
    b = len(data[0])
    per_batch = b * (b - 1)
    timed_rows = rows[per_batch:]
    # One warm-up TRL step of B rows, then every row of the timed batches.
    warm_steps = 1
    steps = warm_steps + len(timed_rows) // b

    class Clock(TrainerCallback):
        start = 0.0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if state.global_step == warm_steps:
                Clock.start = time.perf_counter()

    args = RewardConfig(
        output_dir=str(out),
        per_device_train_batch_size=b,
        max_steps=steps,
        learning_rate=lr,
        logging_steps=10_000,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        max_length=None,
        center_rewards_coefficient=None,
        disable_tqdm=True,
        seed=0,
        remove_unused_columns=False,
        # RewardConfig defaults to activation checkpointing and bf16; ours runs neither.
        gradient_checkpointing=False,
        bf16=False,
    )
    trainer = RewardTrainer(
        model=scorer.model,
        args=args,
        train_dataset=Dataset.from_list(rows[:b] + timed_rows),
        processing_class=tok,
        callbacks=[Clock()],
    )
    trainer.train()
    seconds = time.perf_counter() - Clock.start
    pairs = (steps - warm_steps) * b
    tokens = sum(len(r["chosen_ids"]) + len(r["rejected_ids"]) for r in timed_rows[:pairs])
    return throughput(pairs, tokens, seconds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", default="minilm")
    parser.add_argument("--batch", type=int, default=8, help="B: documents per batch")
    parser.add_argument("--batches", type=int, default=2, help="timed batches per method")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    windows = Windows(64, 64)
    split = SplitConfig(prefix_min=32, prefix_max=64, suffix_min=32, suffix_max=64, seed=0)
    source, field = corpus_source()
    cross = init_scorer(args.backbone, "cross", windows, seed=0, device="cpu")
    stream = PairStream([source], cross.tokenizer, split, field=field)
    data = []
    for batch in batches(stream, args.batch):
        data.append(batch)
        if len(data) == args.batches + 1:
            break
    lr = 3e-5
    results = {"cross-encoder": time_ours(cross, data, lr)}
    del cross
    results["bi-encoder"] = time_ours(
        init_scorer(args.backbone, "bi", windows, seed=0, device="cpu"), data, lr
    )
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        results["trl RewardTrainer"] = time_trl(args.backbone, data, windows, lr, Path(tmp))
    base = results["trl RewardTrainer"]
    print(
        f"B={args.batch}, {args.batches} timed batches of {args.batch * (args.batch - 1)} comparisons, "
        f"backbone {args.backbone}, {torch.get_num_threads()} threads"
    )
    print(f"{'method':<20}{'pairs/s':>10}{'tokens/s':>11}{'x TRL pairs/s':>15}")
    for name, r in results.items():
        print(
            f"{name:<20}{r['pairs_per_s']:>10.1f}{r['tokens_per_s']:>11.0f}"
            f"{r['pairs_per_s'] / base['pairs_per_s']:>15.2f}"
        )
    ratio = results["bi-encoder"]["pairs_per_s"] / results["cross-encoder"]["pairs_per_s"]
    print(f"bi-encoder / cross-encoder pairs/s: {ratio:.1f}x")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
