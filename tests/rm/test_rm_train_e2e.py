"""End to end on a tiny random backbone: train, save, load, evaluate, register, score.

This is the test `make test` runs for the RBS path; it takes seconds on one CPU core.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from rewardsmith.library.store import Library
from rewardsmith.models.checkpoints import METRICS_FILE, latest_checkpoint
from rewardsmith.rm.data import SplitConfig
from rewardsmith.rm.evaluate import PrefRow, pairwise_accuracy
from rewardsmith.rm.model import load_scorer
from rewardsmith.rm.registry import list_models, register_trained, search_models
from rewardsmith.rm.train import TrainConfig, train
from rewardsmith.types import Sample

WORDS = [
    "apple",
    "river",
    "engine",
    "violin",
    "planet",
    "garden",
    "copper",
    "winter",
    "silver",
    "forest",
    "harbor",
    "candle",
    "desert",
    "meadow",
    "rocket",
    "tunnel",
]


def topic_docs(n: int, seed: int) -> list[str]:
    """Documents that each repeat one topic word: the true suffix shares the prefix's word."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        w = rng.choice(WORDS)
        docs.append(" ".join(rng.choice([w, w, w, "the", "a", "of"]) for _ in range(40)))
    return docs


def held_out_pairs(seed: int) -> list[PrefRow]:
    rng = random.Random(seed)
    rows = []
    for _ in range(64):
        w, other = rng.sample(WORDS, 2)
        rows.append(
            PrefRow(
                f"the {w} of {w} a {w}", (f"{w} the {w} {w}",), (f"{other} the {other} {other}",)
            )
        )
    return rows


SPLIT = SplitConfig(prefix_min=6, prefix_max=24, suffix_min=6, suffix_max=16, shuffle_buffer=64)


def config(backbone: Path, steps: int, **kw: object) -> TrainConfig:
    # The legacy pair format: a 2-layer random encoder tells prompt from completion by their
    # segment ids, and learns this task from it more reliably across seeds than from the chat
    # format's single text (tests/rm/test_rm_export.py trains that format end to end).
    base = dict(
        backbone=str(backbone),
        input_format="pair",
        split=SPLIT,
        batch_size=8,
        lr=2e-3,
        warmup_steps=2,
        max_steps=steps,
        save_every=10,
        device="cpu",
        centering=0.01,
    )
    base.update(kw)
    return TrainConfig(**base)  # type: ignore[arg-type]


@pytest.mark.slow  # end to end, 40-90 s on 2 shared cores (issue 27)
def test_train_save_load_evaluate_register_score(tiny_backbone: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    corpus = [topic_docs(400, seed=0)]
    untrained_dir, out = tmp_path / "untrained", tmp_path / "rm"
    train(corpus, untrained_dir, config(tiny_backbone, 0), progress=False)
    result = train(corpus, out, config(tiny_backbone, 80, lr=1e-2), progress=False)

    # Saved as a plain Hugging Face sequence-classification model, with a card and metrics.
    from transformers import AutoModelForSequenceClassification

    hf = AutoModelForSequenceClassification.from_pretrained(out)
    assert hf.config.num_labels == 1
    assert "RBS reward model" in (out / "README.md").read_text()
    metrics = [json.loads(line) for line in (out / METRICS_FILE).read_text().splitlines()]
    assert [m["step"] for m in metrics] == list(range(1, 81))
    # transformers' linear schedule: 2 warmup steps up to lr 1e-2, then linear decay to 0
    assert [m["lr"] for m in metrics[:3]] == pytest.approx([5e-3, 1e-2, 1e-2 * 77 / 78])
    assert metrics[-1]["lr"] == 0.0
    assert result.steps == 80 and result.comparisons == 80 * 8 * 7 and result.tokens > 0

    # Learned something: the trained model prefers the on-topic completion, the untrained
    # one (same backbone, same head init) is at chance.
    rows = held_out_pairs(seed=1)
    trained_acc = pairwise_accuracy(rows, load_scorer(out, device="cpu").score_texts)["accuracy"]
    base_acc = pairwise_accuracy(rows, load_scorer(untrained_dir, device="cpu").score_texts)[
        "accuracy"
    ]
    assert trained_acc >= 0.7 and base_acc < 0.6

    # Registered as a `model` tool and in the local model registry; scores through the library.
    with Library(tmp_path / "lib.db") as lib:
        spec = register_trained(out, lib, name="topic_rm", domains=("test",))
        assert spec.kind == "model" and not spec.needs_reference
        tool = lib.get("topic_rm")
        samples = [Sample(completion=r.chosen[0], prompt=r.prompt) for r in rows[:5]]
        samples += [
            Sample(completion=r.rejected[0], prompt=r.prompt, reference="ignored") for r in rows[:5]
        ]
        rewards = tool.score(samples)
    assert [r.status for r in rewards] == ["ok"] * 10
    assert all(r.tool == "topic_rm@1" for r in rewards)
    # the tool gives the model's own scores (the reference column is ignored)
    direct = load_scorer(out, device="cpu").score_texts(
        [s.prompt for s in samples], [s.completion for s in samples]
    )
    assert [r.score for r in rewards] == pytest.approx(direct, abs=1e-5)
    (entry,) = list_models()
    assert entry.name == "topic_rm" and entry.source == "rm train" and entry.parameters > 0
    assert search_models("topic", domains=("test",)) == [entry]


def test_resume_continues_exactly_where_it_stopped(tiny_backbone: Path, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    corpus = [topic_docs(100, seed=2)]
    straight_dir, out = tmp_path / "straight", tmp_path / "resumed"
    train(corpus, straight_dir, config(tiny_backbone, 8, save_every=4), progress=False)
    straight = [
        json.loads(line)["loss"] for line in (straight_dir / METRICS_FILE).read_text().splitlines()
    ]

    def crash_at_step_6(row: dict[str, object]) -> None:
        if row["step"] == 6:
            raise KeyboardInterrupt  # killed after the step-4 checkpoint

    with pytest.raises(KeyboardInterrupt):
        train(
            corpus,
            out,
            config(tiny_backbone, 8, save_every=4),
            progress=False,
            on_log=crash_at_step_6,
        )
    ckpt = latest_checkpoint(out)
    assert ckpt is not None and ckpt.name == "step-4"
    resumed = train(
        corpus, out, config(tiny_backbone, 8, save_every=4), resume=True, progress=False
    )
    assert resumed.steps == 8 and resumed.pairs == 8 * 8
    again = [json.loads(line)["loss"] for line in (out / METRICS_FILE).read_text().splitlines()]
    # Same batches, negatives, dropout masks and optimizer state: the same losses.
    assert again == pytest.approx(straight, rel=1e-4, abs=1e-6)
