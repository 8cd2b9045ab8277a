"""A run folder written by an earlier version (`tests/fixtures/search_run`, see its README)
loads, and rewriting its run.json and results.jsonl, re-running `search ensemble` (nothing
left to train), `search audit` and `search report` on it gives back the same bytes (and
`search ensemble` prints the same table): old run folders stay readable and what `search`
writes does not change."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

import rewardsmith.search.ensemble as ensemble
from rewardsmith.search.audit import run_audit
from rewardsmith.search.results import (
    AUDIT_FILE,
    ENSEMBLES_DIR,
    ENSEMBLES_FILE,
    REPORT_FILE,
    RESULTS_FILE,
    RUN_FILE,
    RunDir,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "search_run"
SUMMARY = f"{ENSEMBLES_DIR}/{ENSEMBLES_FILE}"


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A copy of the run folder the earlier version wrote."""
    return Path(shutil.copytree(FIXTURE, tmp_path / "run"))


def _bytes(folder: Path, name: str) -> bytes:
    return (folder / name).read_bytes()


# -- the files a run keeps in memory and writes back ---------------------------------------


def test_run_json_reads_and_writes_back_byte_for_byte(old_run: Path) -> None:
    rd = RunDir(old_run)
    rd.write_state(rd.read_state())
    assert _bytes(old_run, RUN_FILE) == _bytes(FIXTURE, RUN_FILE)


def test_results_jsonl_reads_and_writes_back_byte_for_byte(old_run: Path) -> None:
    rd = RunDir(old_run)
    records = rd.read_records()
    assert len(records) == 4 and sum(bool(r.grpo_rungs) for r in records) == 3
    rd.write_records(records)
    assert _bytes(old_run, RESULTS_FILE) == _bytes(FIXTURE, RESULTS_FILE)


# -- the commands that read the run and write their own files ----------------------------


def test_search_ensemble_on_a_finished_folder_rewrites_the_same_summary(
    old_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def trained_already(*args: object, **kwargs: object) -> None:
        raise AssertionError("every configuration of the fixture is trained and judged")

    monkeypatch.setattr(ensemble, "train_configuration", trained_already)
    monkeypatch.setattr(ensemble, "starting_fitness", trained_already)
    stored = json.loads(_bytes(FIXTURE, SUMMARY))
    summary = ensemble.run_ensembles(
        old_run, stored["sizes"], stored["seeds"], steps=stored["steps"], library=tmp_path / "l.db"
    )
    assert summary["best"] == stored["best"]
    assert _bytes(old_run, SUMMARY) == _bytes(FIXTURE, SUMMARY)


def test_search_audit_rewrites_the_same_audit(old_run: Path) -> None:
    audit = run_audit(old_run)
    assert len(audit["rewards"]) == 4
    assert _bytes(old_run, AUDIT_FILE) == _bytes(FIXTURE, AUDIT_FILE)


def test_search_ensemble_prints_the_same_table() -> None:
    from rich.console import Console

    from rewardsmith.search.report import ensemble_table

    console = Console(width=100, record=True, file=io.StringIO(), color_system=None)
    console.print(ensemble_table(json.loads(_bytes(FIXTURE, SUMMARY))))
    assert console.export_text() == (FIXTURE / "ensemble_table.txt").read_text()


def test_search_report_rewrites_the_same_page(old_run: Path) -> None:
    pytest.importorskip("matplotlib")  # without it the page names no plots
    from rewardsmith.search.report import write_report

    write_report(old_run)
    assert _bytes(old_run, REPORT_FILE) == _bytes(FIXTURE, REPORT_FILE)
