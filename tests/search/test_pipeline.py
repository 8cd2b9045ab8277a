"""The whole pipeline on the tiny testbed with tiny GRPO budgets: successive halving
(proxy, then GRPO rungs that continue each other), ensembles with statistics, the audit,
the report and promotion into the library, through the CLI with its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from search_helpers import TINY_TASK
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.library.store import Library
from rewardsmith.search.results import RunDir
from rewardsmith.types import Sample


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory, tiny_cache: Path) -> Path:
    """A 1 x 4 auto-fidelity run, budgets 2 and 4 steps, then `search ensemble` (sizes 2, 3,
    2 seeds) and `search audit`."""
    monkey = pytest.MonkeyPatch()
    monkey.setenv("REWARDSMITH_TESTBED_CACHE", str(tiny_cache))

    root = tmp_path_factory.mktemp("pipeline")
    task = root / "task.json"
    task.write_text(json.dumps(TINY_TASK))
    out = root / "run"
    runner = CliRunner()
    args = ["search", "run", "--task", str(task), "--rounds", "1", "--per-round", "4"]
    args += ["--grpo-steps", "2,4", "--calibration", "1", "--out", str(out), "--threads", "1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    ens = ["search", "ensemble", str(out), "--sizes", "2,3", "--seeds", "2", "--steps", "3"]
    result = runner.invoke(app, [*ens, "--threads", "1"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["search", "audit", str(out)])
    assert result.exit_code in (0, 3), result.output
    yield out
    monkey.undo()


def test_successive_halving_promotes_by_proxy_then_by_f1(finished_run: Path) -> None:
    records = RunDir(finished_run).read_records()
    assert len(records) == 4 and all(r.admitted for r in records)
    by_proxy = sorted(records, key=lambda r: (-r.proxy["fitness"], r.name))
    trained = [r for r in records if r.grpo_rungs]
    calibration = [r for r in trained if r.details.get("calibration")]
    # ceil(4 / 2) = 2 promoted by the proxy, plus one calibration candidate below them
    assert {r.name for r in by_proxy[:2]} <= {r.name for r in trained}
    assert len(trained) == 3 and len(calibration) == 1
    assert calibration[0].name not in {r.name for r in by_proxy[:2]}
    second = [r for r in trained if len(r.grpo_rungs) == 2]
    assert len(second) == 2  # ceil(3 / 2)
    for r in trained:
        assert set(r.grpo) >= {"accuracy", "f1", "ci95", "steps", "seconds"}
        assert r.grpo["steps"] == (4 if r in second else 2)
        assert r.grpo_rungs[0]["steps"] == 2
    state = RunDir(finished_run).read_run()
    assert set(state["baseline"]) == {"2", "4"}
    # The untrained policy, judged once on the same validation problems.
    assert state["start"]["steps"] == 0 and 0.0 <= state["start"]["f1"] <= 1.0
    start = json.loads((finished_run / "runs" / "start" / "eval.json").read_text())
    assert start["steps"] == 0 and len(start["sets"]["validation"]["correct"]) == 12


def test_ensembles_compare_every_pair_on_the_test_set(finished_run: Path) -> None:
    summary = json.loads((finished_run / "ensembles" / "ensembles.json").read_text())
    configs = set(summary["test"])
    assert {"base", "top1", "top2", "diverse2", "random2", "top3", "diverse3", "random3"} == configs
    n = len(configs)
    assert len(summary["mcnemar"]) == n * (n - 1) // 2
    assert all(t["comparisons"] == n * (n - 1) // 2 for t in summary["mcnemar"])
    assert summary["best"] in ("top3", "diverse3")
    assert summary["seed_spread"][summary["best"]]["n"] == 2
    assert summary["seed_spread"]["base"]["n"] == 2
    for name, d in summary["test"].items():
        assert d["n"] == 12 and d["f1"]["low"] <= d["f1"]["value"] <= d["f1"]["high"], name
    assert set(summary["indistinguishable"]) == configs
    # The starting policy is judged on the test set too; each configuration against it,
    # outside the pairwise family.
    assert summary["start"]["test"]["n"] == 12
    assert set(summary["start"]["versus"]) == configs


def test_report_has_every_section_and_plot(finished_run: Path) -> None:
    result = CliRunner().invoke(app, ["search", "report", str(finished_run)])
    assert result.exit_code == 0, result.output
    report = (finished_run / "report.md").read_text()
    for section in (
        "## Rounds",
        "## Ranking",
        "## Multi-fidelity check",
        "## Ensembles",
        "### Exact McNemar",
        "### Indistinguishable",
        "## Hacking audit",
    ):
        assert section in report, section
    for png in ("f1_by_round.png", "ranks.png", "ensembles.png"):
        assert (finished_run / png).stat().st_size > 1000, png
    assert "Base rewards alone after 4 steps" in report
    # The two candidates trained to 4 steps are each tested against the base at 4 steps.
    assert "vs base: each candidate judged after 4 steps" in report
    assert "Starting policy, before GRPO: F1" in report and "| start (no GRPO) |" in report
    assert "vs start: each configuration against the starting policy" in report
    assert "Bonferroni-corrected over 2;" in report


def test_audit_covers_the_structural_rewards(finished_run: Path) -> None:
    audit = json.loads((finished_run / "audit.json").read_text())
    records = RunDir(finished_run).read_records()
    structural = {r.name for r in records if r.proxy["reference_free"]}
    assert {e["name"] for e in audit["rewards"]} == structural
    for e in audit["rewards"]:
        assert set(e["pool"]["right"]) >= {
            "line_count",
            "char_length",
            "arithmetic_density",
            "reward",
        }


def test_promote_adds_a_working_search_tool(finished_run: Path, tmp_path: Path) -> None:
    records = RunDir(finished_run).read_records()
    name = records[0].name
    db = tmp_path / "lib.db"
    runner = CliRunner()
    result = runner.invoke(
        app, ["search", "promote", str(finished_run), name, "--library", str(db)]
    )
    assert result.exit_code == 0, result.output
    with Library(db) as lib:
        record = lib.record(name)
        assert record.spec.provenance == "search"
        assert record.spec.validation["search"]["candidate"] == name
        tool = lib.get(name)
        (reward,) = tool.score(
            [Sample(completion="<thinking>1+1=2.</thinking><solution>2</solution>", reference="2")]
        )
        assert reward.status == "ok"
    result = runner.invoke(
        app, ["search", "promote", str(finished_run), "nope", "--library", str(db)]
    )
    assert result.exit_code != 0 and "no candidate 'nope'" in str(result.exception)
