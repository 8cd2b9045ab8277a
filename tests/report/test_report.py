"""Plots of evaluation results and the Markdown page of a run folder, from the JSON the
commands write (the shapes of `rm eval -o` and of an `rm train` folder's rbs_config.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.report.eval_plots import plot_grpo_eval, plot_rm_eval
from rewardsmith.report.markdown import write_report

PNG = b"\x89PNG\r\n\x1a\n"

RM_EVAL = {
    "model": "runs/rm",
    "windows": {"prompt_max_tokens": 256},
    "limit": None,
    "data": ["llmbar.jsonl", "bon.jsonl"],
    "results": {
        "trained": {
            "llmbar": {
                "accuracy": 0.62,
                "n": 100.0,
                "groups": 100.0,
                "ci_low": 0.52,
                "ci_high": 0.71,
            },
            "bon/best_of_n": {"model": 0.41, "n": 50.0, "random": 0.25, "oracle": 0.9},
        },
        "untrained": {
            "llmbar": {"accuracy": 0.5, "n": 100.0, "groups": 100.0, "ci_low": 0.4, "ci_high": 0.6},
            "bon/best_of_n": {"model": 0.27, "n": 50.0, "random": 0.25, "oracle": 0.9},
        },
    },
    "trained_minus_untrained": {
        "llmbar": {
            "difference": 0.12,
            "ci_low": -0.01,
            "ci_high": 0.25,
            "groups_better": 20,
            "groups_worse": 8,
            "sign_test_p": 0.04,
        }
    },
}

GRPO_EVAL = {
    "data": "testbed",
    "n": 40,
    "seed": 0,
    "policies": [
        {
            "policy": "testbed",
            "n": 40,
            "correct": 10,
            "parseable": 30,
            "precision": 0.33,
            "accuracy": {"value": 0.25, "low": 0.12, "high": 0.4},
            "f1": {"value": 0.29, "low": 0.15, "high": 0.43},
            "seconds": 3.0,
        },
        {
            "policy": "runs/a/model",
            "n": 40,
            "correct": 20,
            "parseable": 36,
            "precision": 0.56,
            "accuracy": {"value": 0.5, "low": 0.35, "high": 0.65},
            "f1": {"value": 0.53, "low": 0.38, "high": 0.67},
            "seconds": 3.2,
        },
    ],
    "comparisons": [
        {
            "baseline": "testbed",
            "policy": "runs/a/model",
            "b": 2,
            "c": 12,
            "p_value": 0.013,
            "p_bonferroni": 0.013,
            "comparisons": 1,
        }
    ],
    "items": [],
}


def test_rm_eval_plot_is_a_png(tmp_path: Path) -> None:
    path = plot_rm_eval(RM_EVAL, tmp_path / "eval.png")
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5000


def test_grpo_eval_plot_is_a_png(tmp_path: Path) -> None:
    path = plot_grpo_eval(GRPO_EVAL, tmp_path / "sub" / "eval.png")
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5000


def test_plots_of_nothing_say_so() -> None:
    with pytest.raises(InputError, match="no columns"):
        plot_rm_eval({"results": {}}, "unused.png")
    with pytest.raises(InputError, match="no policies"):
        plot_grpo_eval({"policies": []}, "unused.png")


def test_report_of_an_rm_run_with_its_evaluation(tmp_path: Path) -> None:
    rbs = {
        "kind": "cross",
        "windows": {"prompt_max_tokens": 256, "completion_max_tokens": 128},
        "train": {"backbone": "minilm", "batch_size": 8, "lr": 2e-5, "seed": 0},
        "result": {"steps": 40, "seconds": 12.5, "final": {"loss": 0.41, "acc": 0.8}},
        "corpus": ["docs.txt"],
    }
    (tmp_path / "rbs_config.json").write_text(json.dumps(rbs))
    (tmp_path / "eval.json").write_text(json.dumps(RM_EVAL))
    (tmp_path / "unrelated.json").write_text("[1, 2]")  # ignored, not an error
    page = write_report(tmp_path).read_text()
    assert page.startswith("# rewardsmith report")
    assert "## Reward model (`rm train`)" in page and "| backbone | minilm |" in page
    assert "| loss | 0.41 |" in page
    assert "## Reward-model evaluation (`rm eval`, `eval.json`)" in page
    assert (
        "| llmbar | 100 | 0.620 [0.52, 0.71] | 0.500 [0.40, 0.60] | +0.120 [-0.01, +0.25] |" in page
    )
    assert "![eval](eval.png)" in page and (tmp_path / "eval.png").read_bytes()[:8] == PNG


def test_report_of_a_grpo_eval_has_the_mcnemar_table(tmp_path: Path) -> None:
    (tmp_path / "cmp.json").write_text(json.dumps(GRPO_EVAL))
    page = write_report(tmp_path).read_text()
    assert "| testbed | 0.250 [0.120, 0.400] |" in page
    assert "| runs/a/model | 2 | 12 | 0.013 | 0.013 |" in page


def test_a_folder_with_no_run_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match="nothing to report"):
        write_report(tmp_path)
    with pytest.raises(InputError, match="not a folder"):
        write_report(tmp_path / "notes.txt")


def test_a_search_run_folder_points_to_search_report(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "results.jsonl").write_text("")
    with pytest.raises(InputError, match=f"rewardsmith search report {tmp_path}"):
        write_report(tmp_path)


def test_step_axes_have_whole_number_ticks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # three steps: matplotlib's default locator would put ticks at 1.25, 1.5, ...
    from rewardsmith.report import grpo_plot
    from rewardsmith.report.pyplot import pyplot

    metrics = tmp_path / "metrics.jsonl"
    rows = [
        {"step": s, "reward": 0.1 * s, "accuracy": 0.2, "completion_length": 9} for s in (1, 2, 3)
    ]
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    figures: list[object] = []
    plt = pyplot()
    real = plt.subplots

    def keep(*args: object, **kwargs: object) -> object:
        fig, axes = real(*args, **kwargs)
        figures.append(axes)
        return fig, axes

    monkeypatch.setattr(plt, "subplots", keep)
    grpo_plot.plot_metrics(metrics, tmp_path / "m.png")
    for ax in figures[0]:  # type: ignore[attr-defined]
        ticks = [t for t in ax.get_xticks() if 1 <= t <= 3]
        assert ticks and all(float(t).is_integer() for t in ticks), ticks
