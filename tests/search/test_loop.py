"""The search loop end to end on the tiny testbed (proxy fidelity): every RUNDIR file, the
feedback each round gets, resume without redoing work, and runs that must not start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rewardsmith.cli.main import app
from rewardsmith.errors import ConfigError
from rewardsmith.search.loop import Search, SearchConfig
from rewardsmith.search.results import RunDir
from rewardsmith.search.task import run_task

RESULT_FIELDS = {"round", "name", "admitted", "stage", "reason", "proxy", "grpo"}


def _run(task: Path, out: Path, **kw) -> list:
    resume = kw.pop("resume", False)
    config = SearchConfig(
        task=str(task), **{"rounds": 2, "per_round": 3, "fidelity": "proxy", **kw}
    )
    search = Search(config, out, resume=resume)
    try:
        return search.run()
    finally:
        search.close()


@pytest.mark.slow  # end to end, 40-90 s on 2 shared cores (issue 27)
def test_quick_run_writes_every_file(tiny_task: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["search", "run", "--task", str(tiny_task), "--rounds", "2", "--per-round", "3"]
    args += ["--fidelity", "proxy", "--out", str(out), "--threads", "1"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and {r["round"] for r in lines} == {1, 2}
    for r in lines:
        assert set(r) >= RESULT_FIELDS
        assert (out / "candidates" / f"{r['name']}.py").is_file()
        assert r["admitted"] is True and r["stage"] == 4 and r["reason"] == "admitted"
        assert {"separation", "probe_payout"} <= set(r["proxy"])
        assert r["grpo"] is None  # proxy fidelity: no GRPO
    for name in ("round_1.md", "round_2.md"):
        assert (out / "feedback" / name).is_file()
    # what round 2 was told names every round-1 candidate with its proxy numbers
    told = (out / "feedback" / "round_2.md").read_text()
    for r in lines[:3]:
        assert r["name"] in told
    assert "No candidates yet" in (out / "feedback" / "round_1.md").read_text()
    report = (out / "report.md").read_text()
    assert "## Rounds" in report and "## Multi-fidelity check" in report
    assert (out / "f1_by_round.png").stat().st_size > 0 and (out / "ranks.png").stat().st_size > 0
    # round 2 breeds from round 1: each bred child names its parents
    bred = [r for r in lines if r["round"] == 2 and r["parents"]]
    assert bred and all(p in {x["name"] for x in lines[:3]} for r in bred for p in r["parents"])


@pytest.mark.slow  # end to end, 40-90 s on 2 shared cores (issue 27)
def test_resume_continues_without_redoing_candidates(tiny_task: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _run(tiny_task, out, rounds=1)
    rd = RunDir(out)
    first = {r.name: r for r in rd.read_records()}
    sources = {n: rd.source_path(n).stat().st_mtime_ns for n in first}
    # an interruption: the last candidate was written but never checked or scored
    records = rd.read_records()
    records[-1].admitted, records[-1].stage, records[-1].proxy = None, None, None
    rd.write_records(records)
    _run(tiny_task, out, rounds=2, resume=True)
    after = {r.name: r for r in rd.read_records()}
    assert len(after) == 6
    for name, record in first.items():
        # nothing regenerated; finished candidates keep their numbers (timings included)
        assert rd.source_path(name).stat().st_mtime_ns == sources[name]
        assert after[name].proxy is not None
        if name != records[-1].name:
            assert after[name].proxy == record.proxy
    assert after[records[-1].name].admitted is True


def test_a_resumed_run_and_its_ensembles_keep_the_task_settings_it_started_with(
    tiny_task: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _run(tiny_task, out, rounds=1)
    started = json.loads(tiny_task.read_text())
    changed = {**started, "grpo": {**started.get("grpo", {}), "lr": 0.5}}
    tiny_task.write_text(json.dumps(changed))  # a default or the file changed since
    state = RunDir(out).read_run()
    assert run_task(state).grpo == started.get("grpo", {})  # what ensembles and audit use
    config = SearchConfig(task=str(tiny_task), rounds=1, per_round=3, fidelity="proxy")
    search = Search(config, out, resume=True)
    try:
        assert search.task.grpo == started.get("grpo", {})
    finally:
        search.close()
    # A run folder from before the task was stored falls back to --task.
    assert run_task({"config": state["config"]}).grpo["lr"] == 0.5


def test_a_folder_holding_a_run_needs_resume_and_the_same_settings(
    tiny_task: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    _run(tiny_task, out, rounds=1, per_round=1)
    with pytest.raises(ConfigError, match="--resume"):
        _run(tiny_task, out, rounds=1, per_round=1)
    with pytest.raises(ConfigError, match="per_round"):
        _run(tiny_task, out, rounds=1, per_round=2, resume=True)
    with pytest.raises(ConfigError, match="nothing to resume"):
        _run(tiny_task, tmp_path / "empty", resume=True)


def test_bad_flags_exit_2_with_the_reason(tiny_task: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["search", "run", "--task", str(tiny_task), "--out", str(tmp_path / "x")]
    for extra, needle in (
        (["--fidelity", "fast"], "--fidelity"),
        (["--grpo-steps", "50,20"], "--grpo-steps"),
        (["--generator", "gpt"], "--generator"),
        (["--eta", "1"], "--eta"),
    ):
        result = runner.invoke(app, base + extra)
        assert result.exit_code != 0
        assert isinstance(result.exception, ConfigError) and needle in str(result.exception)
    result = runner.invoke(
        app, ["search", "run", "--task", "nope.json", "--out", str(tmp_path / "y")]
    )
    assert isinstance(result.exception, ConfigError) and "task file" in str(result.exception)
