"""Training that grows the library: a task the library cannot grade is synthesized for from
its first samples; until a tool is admitted its samples are skipped, never scored 0; each
synthesis is a library event with its training step; metrics are split by task. Both the
embedded trainer and the TRL backend."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from rewardsmith.library.store import Library  # noqa: E402
from rewardsmith.rl.grpo import SYNTHESIS_FILE, GRPOConfig, GRPOTrainer  # noqa: E402
from rewardsmith.rl.grpo_math import group_advantages  # noqa: E402
from rewardsmith.rl.multitask import draw  # noqa: E402
from rewardsmith.rl.policies import load_pretrained  # noqa: E402
from rewardsmith.rl.prompts import PromptItem, load_items  # noqa: E402
from rewardsmith.rl.rewards import RewardSet  # noqa: E402
from rewardsmith.types import Reward, RewardTool, Sample, ToolSpec  # noqa: E402


def _stream(path: Path, families: Sequence[str], n: int = 64) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for t in draw(n, 0, "rl", families):
            fh.write(json.dumps({"task": t.family, "prompt": t.question, "reference": t.reference}))
            fh.write("\n")
    return path


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


CONFIG = GRPOConfig(
    steps=4,
    prompts_per_step=4,
    group_size=4,
    max_new_tokens=16,
    lora_rank=0,
    seed=0,
    skip_unscored=True,
)


def test_a_new_task_is_synthesized_while_training_and_skipped_until_then(
    tiny_multi: Path, tmp_path: Path
) -> None:
    items = load_items(str(_stream(tmp_path / "s.jsonl", ("arith_word", "word_reversal"))))
    assert {it.task for it in items} == {"arith_word", "word_reversal"}
    with Library(tmp_path / "lib.db") as lib:
        trainer = GRPOTrainer(
            load_pretrained(tiny_multi),
            ["router"],
            items,
            CONFIG,
            tmp_path / "run",
            library=lib,
            synthesize=True,
        )
        trainer.train(save_model=False)
        events = [e for e in lib.history() if e.kind == "train_synthesis"]
    syntheses = _rows(tmp_path / "run" / SYNTHESIS_FILE)
    metrics = _rows(tmp_path / "run" / "metrics.jsonl")
    # the new task got a tool during training, recorded with the step, in the file and the log
    made = [s for s in syntheses if s["task"] == "word_reversal"]
    assert made and all(isinstance(s["step"], int) and s["step"] >= 1 for s in syntheses)
    assert [e.detail["step"] for e in events] == [s["step"] for s in syntheses]
    first = int(made[0]["step"])  # type: ignore[call-overload]
    # before it, the new task's samples were not scored and were left out of the update
    for row in metrics[: first - 1]:
        if "rewardsmith/word_reversal/total/not_scored_frac" in row:
            assert row["rewardsmith/word_reversal/total/not_scored_frac"] == 1.0
            assert row["skipped_frac"] > 0
    # the known task is routed to a built-in from the first step, named per task and tool
    assert "rewardsmith/arith_word/gsm8k/mean" in metrics[0]
    assert metrics[0]["rewardsmith/arith_word/total/not_scored_frac"] == 0.0
    if made[0]["admitted"]:
        later = [r for r in metrics if int(r["step"]) > first]  # type: ignore[call-overload]
        assert any("rewardsmith/word_reversal/word_reversal/mean" in r for r in later)
    assert all(f"accuracy/{t}" in metrics[-1] for t in ("arith_word", "word_reversal"))


class NotForNew(RewardTool):
    """1.0 for every sample, except those of task `new`, which it does not apply to."""

    spec = ToolSpec(name="not_for_new", provenance="user", needs_reference=False)

    def score(self, samples: Sequence[Sample]) -> list[Reward]:
        return [
            Reward(None, "not_applicable", tool=self.spec.ref)
            if s.task == "new"
            else Reward(float(len(s.completion) % 2), tool=self.spec.ref)
            for s in samples
        ]


def test_a_step_whose_samples_are_all_unscored_changes_nothing(
    tiny_multi: Path, tmp_path: Path
) -> None:
    items = [PromptItem(f"What is {i} + 1?", str(i + 1), "new") for i in range(4)]
    policy = load_pretrained(tiny_multi)
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    trainer = GRPOTrainer(
        policy, [NotForNew()], items, CONFIG, tmp_path / "run", library=tmp_path / "lib.db"
    )
    row = trainer.train_step()
    trainer.close()
    assert row["skipped_frac"] == 1.0 and row["loss"] == 0.0 and row["grad_norm"] == 0.0
    after = policy.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_skipped_samples_leave_their_group_baseline_alone() -> None:
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 1.0, 0.0])
    valid = torch.tensor([True, True, False, False, True, True, True, True])
    adv = group_advantages(rewards, 4, scale=False, valid=valid)
    # group 1: the mean of the two scored members (0.5), the unscored get 0
    assert adv[:4].tolist() == [0.5, -0.5, 0.0, 0.0]
    assert torch.allclose(adv[4:], group_advantages(rewards[4:], 4, scale=False))


def test_synthesis_needs_the_router() -> None:
    from rewardsmith.errors import ConfigError

    with pytest.raises(ConfigError, match="router"):
        RewardSet(["gsm8k"], synthesize=True, library=":memory:")
    with pytest.raises(ConfigError, match="offline"):
        RewardSet(["router"], synthesize=True, synth_backend="gpt", library=":memory:")


def test_the_trl_backend_grows_the_library_too(tiny_multi: Path, tmp_path: Path) -> None:
    pytest.importorskip("trl")
    from rewardsmith.rl.trl_backend import train_trl

    items = load_items(str(_stream(tmp_path / "s.jsonl", ("arith_word", "word_reversal"))))
    config = GRPOConfig(
        steps=3, prompts_per_step=4, group_size=2, max_new_tokens=12, lora_rank=0, seed=0
    )
    result = train_trl(
        load_pretrained(tiny_multi),
        ["router"],
        items,
        config,
        tmp_path / "trl",
        library=tmp_path / "lib.db",
        synthesize=True,
        save_model=False,
    )
    assert result.steps == 3
    rows = _rows(tmp_path / "trl" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    keys = set().union(*rows)
    assert "rewardsmith/arith_word/gsm8k/mean" in keys and "accuracy/arith_word" in keys
    syntheses = _rows(tmp_path / "trl" / SYNTHESIS_FILE)
    assert any(s["task"] == "word_reversal" for s in syntheses)
    assert all(isinstance(s["step"], int) for s in syntheses)


STREAM = Path(__file__).resolve().parents[2] / "examples" / "stream.jsonl"


@pytest.mark.slow  # about a minute: the router's embedder, syntheses, 4 steps
def test_the_cli_grows_the_library_on_the_bundled_stream(tiny_multi: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rewardsmith.cli.main import app

    out, lib = tmp_path / "run", tmp_path / "lib.db"
    args = ["grpo", "train", "--policy", str(tiny_multi), "--data", str(STREAM), "--synthesize"]
    args += ["--library", str(lib), "--out-dir", str(out), "--steps", "4", "--quiet"]
    args += ["--prompts-per-step", "16", "-G", "2", "--max-new-tokens", "8", "--lora-rank", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    syntheses = _rows(out / SYNTHESIS_FILE)
    metrics = _rows(out / "metrics.jsonl")
    # tasks no built-in grades got admitted tools during training, each with its step, and
    # each is a library event
    admitted = [s for s in syntheses if s["admitted"]]
    assert {s["task"] for s in admitted} >= {"word_reversal"}
    with Library(lib) as library:
        events = [e for e in library.history() if e.kind == "train_synthesis"]
    assert [(e.detail["task"], e.detail["step"]) for e in events] == [
        (s["task"], s["step"]) for s in syntheses
    ]
    # samples with no tool yet were skipped and counted, never paid 0
    skipped = [r for r in metrics if r["skipped_frac"] > 0]
    assert skipped and all(
        any(v > 0 for k, v in r.items() if k.endswith("/not_scored_frac")) for r in skipped
    )
    # per-task metrics every step
    assert all(any(k.startswith("accuracy/") for k in r) for r in metrics)
    assert metrics[-1]["library/admitted"] == len(admitted)
