"""`grpo eval` and `grpo train` end to end on the tiny testbed, the TRL backend for two steps,
and the metrics plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")

from rewardsmith.cli.main import app  # noqa: E402
from rewardsmith.errors import InputError  # noqa: E402
from rewardsmith.report.grpo_plot import moving_average, read_metrics  # noqa: E402
from rewardsmith.rl.evaluate import EvalResult, compare, evaluate_policy  # noqa: E402
from rewardsmith.rl.grpo import GRPOConfig  # noqa: E402
from rewardsmith.rl.policies import load_pretrained  # noqa: E402
from rewardsmith.rl.problems import generate  # noqa: E402
from rewardsmith.rl.prompts import load_items  # noqa: E402

runner = CliRunner()


def test_evaluate_policy_judges_every_item(tiny_testbed: Path) -> None:
    policy = load_pretrained(tiny_testbed)
    problems = generate(6, 0, "test")
    result = evaluate_policy(policy, problems, max_new_tokens=8, batch_size=4)
    assert len(result.correct) == len(result.completions) == 6
    summary = result.summary()
    assert summary["n"] == 6 and summary["parseable"] <= 6
    assert set(summary["accuracy"]) == {"value", "low", "high"}


def test_compare_applies_bonferroni_over_the_comparisons() -> None:
    base = EvalResult("a", [False] * 12, [True] * 12)
    better = EvalResult("b", [True] * 10 + [False] * 2, [True] * 12)
    same = EvalResult("c", [False] * 12, [True] * 12)
    first, second = compare(base, [better, same])
    assert (first.b, first.c, first.comparisons) == (0, 10, 2)
    assert first.p_adjusted == pytest.approx(min(1.0, 2 * first.p_value))
    assert second.p_value == 1.0


def test_moving_average() -> None:
    assert moving_average([1, 2, 3, 4], window=2) == [1, 1.5, 2.5, 3.5]


def test_metrics_for_the_plot_name_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "reward": 0.5}\n\n{"step": 2, "reward": 0.75}\n')
    assert [r["reward"] for r in read_metrics(path)] == [0.5, 0.75]
    path.write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "rew\n')
    with pytest.raises(InputError, match=r"metrics.jsonl:2: not valid JSON"):
        read_metrics(path)
    path.write_text("")
    with pytest.raises(InputError, match="holds no metrics"):
        read_metrics(path)


def test_cli_train_then_eval(tiny_testbed: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["grpo", "train", "--policy", str(tiny_testbed), "--out-dir", str(out), "--steps", "2"]
    args += ["--prompts-per-step", "2", "-G", "2", "--max-new-tokens", "8", "--lora-rank", "0"]
    args += ["--reward", "gsm8k,format_tags", "--library", str(tmp_path / "lib.db"), "--quiet"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2]
    assert (out / "metrics.png").stat().st_size > 1000
    assert (out / "model" / "config.json").exists()

    report_path = tmp_path / "eval.json"
    args = ["grpo", "eval", "-p", str(tiny_testbed), "-p", str(out / "model"), "--n", "4"]
    args += ["--max-new-tokens", "8", "-o", str(report_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "McNemar" in result.output
    report = json.loads(report_path.read_text())
    assert [p["n"] for p in report["policies"]] == [4, 4]
    assert report["comparisons"][0]["comparisons"] == 1
    assert len(report["items"]) == 4
    # the plot beside the results: accuracy with intervals and the McNemar table
    assert (tmp_path / "eval.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # one Markdown page per folder: the training run, then the evaluation results
    result = runner.invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.md").read_text()
    assert "## GRPO training" in page and "![metrics](metrics.png)" in page
    assert "reward/gsm8k" in page  # the metrics table, first and last steps
    result = runner.invoke(app, ["report", str(tmp_path), "-o", str(tmp_path / "r" / "e.md")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r" / "e.md").read_text()
    assert "## Policy evaluation" in page and "Exact McNemar" in page
    assert f"]({tmp_path.resolve().as_posix()}/eval.png)" in page  # linked from elsewhere


def test_cli_refuses_an_unknown_backend(tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["grpo", "train", "--out", str(tmp_path), "--backend", "verl", "--quiet"]
    )
    assert result.exit_code != 0
    assert "embedded or trl" in str(result.exception or result.output)


def test_trl_backend_trains_two_steps_and_logs_our_metrics(
    tiny_testbed: Path, tmp_path: Path
) -> None:
    pytest.importorskip("trl")
    from rewardsmith.rl.trl_backend import train_trl

    config = GRPOConfig(
        steps=2, prompts_per_step=2, group_size=2, max_new_tokens=8, lora_rank=0, seed=0
    )
    result = train_trl(
        load_pretrained(tiny_testbed),
        ["gsm8k", "format_tags"],
        load_items("testbed", 8),
        config,
        tmp_path / "trl",
        library=tmp_path / "lib.db",
    )
    assert result.steps == 2
    rows = [json.loads(x) for x in (tmp_path / "trl" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("reward/gsm8k", "reward/format_tags", "accuracy", "time/step", "loss"):
        assert key in rows[-1], key
    assert result.model_dir is not None and (result.model_dir / "config.json").exists()
