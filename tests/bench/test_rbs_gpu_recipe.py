"""bench/rbs_gpu_recipe.py, the RBS GPU recipe: one command trains a reward model and runs the
evaluation that can decide. Here end to end on CPU at a tiny size, on a 2-layer random decoder
with SmolLM2's chat tokens (the SmolLM2 path: chat format, last-token head, packed prefixes):
what a user reads afterwards must be there, with its intervals, and the training must stop at
the data scale it was given."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))
pytest.importorskip("transformers")

import rbs_gpu_recipe  # noqa: E402
from rm_fixtures import make_tiny_decoder  # noqa: E402

# GSM8K-style rows (question, answer with calculator annotations): the corpus reads train.jsonl,
# the pair sets test.jsonl.
GSM8K = [
    {
        "question": "Janet's ducks lay 16 eggs per day. She eats 3 and bakes with 4. She sells "
        "the rest for $2 each. How much does she make every day?",
        "answer": "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
        "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18",
    },
    {
        "question": "Josh buys a house for $80,000 and puts in $50,000 in repairs. This raised "
        "its value by 150%. How much profit did he make?",
        "answer": "The cost was 80,000+50,000=$<<80000+50000=130000>>130,000\n"
        "The value rose by 80,000*1.5=<<80000*1.5=120000>>120,000\n"
        "So the new value is 120,000+80,000=$<<120000+80000=200000>>200,000\n"
        "So he made a profit of 200,000-130,000=$<<200000-130000=70000>>70,000\n#### 70000",
    },
    {
        "question": "James runs 3 sprints 3 times a week, 60 meters each. How many meters "
        "does he run a week?",
        "answer": "He sprints 3*3=<<3*3=9>>9 times\nSo he runs 9*60=<<9*60=540>>540 meters\n"
        "#### 540",
    },
]


@pytest.fixture(scope="module")
def recipe_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    root = tmp_path_factory.mktemp("recipe")
    backbone = make_tiny_decoder(root / "backbone")
    gsm8k = root / "gsm8k"
    gsm8k.mkdir()
    for name in ("train.jsonl", "test.jsonl"):
        (gsm8k / name).write_text("".join(json.dumps(r) + "\n" for r in GSM8K))
    out = root / "out"
    rbs_gpu_recipe.main(
        [
            *["--out-dir", str(out), "--backbone", str(backbone), "--tiny"],
            *["--tokens", "600", "--gsm8k-dir", str(gsm8k), "--device", "cpu", "--threads", "1"],
        ]
    )
    return out, json.loads((out / "results.json").read_text())


def test_training_stops_at_the_data_scale_it_was_given(recipe_run) -> None:  # type: ignore[no-untyped-def]
    out, results = recipe_run
    t = results["training"]
    # steps = ceil(tokens / (B x mean pair tokens)): the pairs read hold about 600 tokens
    assert t["steps"] == math.ceil(600 / (4 * t["mean_pair_tokens"]))
    assert t["corpus_tokens"] >= 0.5 * 600 and t["pairs"] == 4 * t["steps"]
    assert t["seed_paper_tokens"] == 11_000_000
    # the trained model is a Hugging Face folder with its RBS record
    model = out / "rm"
    assert (model / "config.json").is_file() and (model / "rbs_config.json").is_file()
    assert json.loads((model / "rbs_config.json").read_text())["train"]["negatives"] is None


def test_pair_sets_report_trained_untrained_and_random_heads_with_intervals(recipe_run) -> None:  # type: ignore[no-untyped-def]
    _, results = recipe_run
    rows = {(r["set"], r["kind"]): r for r in results["pairs"]}
    # both sources, both kinds of wrong solution, and their union
    for name in ("testbed_pairs", "gsm8k_pairs"):
        assert {(name, k) for k in ("all", "final", "step")} <= rows.keys()
    for row in rows.values():
        if row["set"] == "bo8":
            continue  # the policy's own right vs wrong samples: may have one problem only
        for column in ("trained", "untrained", "backbone_likelihood"):
            ci = row[column]
            assert ci["low"] is not None and ci["low"] <= ci["value"] <= ci["high"]
        gain = row["gain"]
        assert gain["low"] <= gain["value"] <= gain["high"]
        assert len(row["random_heads"]) == 1  # --tiny: one extra head seed
    # 4 held-out testbed problems x 2 kinds x 2 copies
    assert rows[("testbed_pairs", "all")]["n"] == 16
    assert rows[("testbed_pairs", "all")]["groups"] == 4


def test_best_of_n_has_every_baseline_and_the_acceptance_is_checked(recipe_run) -> None:  # type: ignore[no-untyped-def]
    out, results = recipe_run
    bon = results["best_of_n"]
    assert bon["n"] == 4
    picks = ("model", "untrained_model", "backbone_likelihood_pick", "random", "majority")
    for pick in (*picks, "oracle", "model_minus_random"):
        assert bon[pick]["low"] <= bon[pick]["value"] <= bon[pick]["high"], pick
    assert bon["random"]["value"] <= bon["oracle"]["value"]
    acceptance = results["acceptance"]
    assert set(acceptance) == {
        "testbed_pairs/final: gain interval above 0",
        "testbed_pairs/step: gain interval above 0",
        "gsm8k_pairs/final: gain interval above 0",
        "gsm8k_pairs/step: gain interval above 0",
        "best-of-N: model - random interval above 0",
    }
    assert all(isinstance(v, bool) for v in acceptance.values())
    page = (out / "results.md").read_text()
    assert "| testbed_pairs | final |" in page and "## Acceptance (issue 28)" in page
    # every stage is written down as the shell command that reproduces it
    commands = (out / "commands.sh").read_text()
    for stage in ("rm corpus", "rm pairs", "rbs_best_of_n.py", "rm train", "rm eval", "likelihood"):
        assert stage in commands
    # a shell script: each line a comment or a command (the in-process stage is a comment)
    for line in commands.splitlines()[2:]:
        assert line.startswith(("# ", "rewardsmith ", "python bench/")), line
    assert set(results["seconds"]) >= {"corpus", "train", "eval trained + untrained"}


def test_resume_reuses_the_data_and_continues_the_training(recipe_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # a GPU lent 10 minutes a command trains in several calls: --resume --train-only
    done, results = recipe_run
    out = tmp_path / "out"
    shutil.copytree(done, out)
    (out / "rm" / "rbs_config.json").unlink()  # what a run stopped mid-training leaves
    argv = ["--out-dir", str(out), "--backbone", results["settings"]["backbone"], "--tiny"]
    argv += ["--tokens", "600", "--gsm8k-dir", results["settings"]["gsm8k_dir"]]
    rbs_gpu_recipe.main([*argv, "--device", "cpu", "--resume", "--train-only"])
    commands = (out / "commands.sh").read_text()
    assert "rm corpus" not in commands and "rm pairs" not in commands
    assert "rbs_best_of_n.py" not in commands and "--resume" in commands
    resumed = json.loads((out / "rm" / "rbs_config.json").read_text())["result"]
    assert resumed["steps"] == results["training"]["steps"]


@pytest.mark.slow
def test_grpo_with_the_rm_is_compared_with_the_warm_start_and_the_verifier(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["--out-dir", str(out), "--backbone", "testbed", "--tiny", "--no-gsm8k"]
    rbs_gpu_recipe.main([*argv, "--device", "cpu", "--threads", "1", "--grpo-steps", "1"])
    grpo = json.loads((out / "results.json").read_text())["grpo"]
    names = [p["policy"] for p in grpo["policies"]]
    assert names[0] == "testbed" and "grpo_rm" in names[1] and "grpo_verifier" in names[2]
    assert grpo["n"] == 8 and len(grpo["vs_warm_start"]) == 2  # exact McNemar each
    # the RM run rewarded with the registered RM tool, never with the verifier
    rewards = json.loads((out / "grpo_rm" / "grpo_config.json").read_text())["rewards"]
    assert rewards == ["rbs_recipe", "format_tags"]
    acceptance = json.loads((out / "results.json").read_text())["acceptance"]
    assert "GRPO with the RM: not worse than the warm start" in acceptance
