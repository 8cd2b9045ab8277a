"""Typed search metrics: records read from a run folder have typed numbers and write back
the object they were read from (keys, order, keys a newer version added); keys an older
version did not write read as unmeasured, keys every version writes fail where they are read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.search.metrics import EnsembleRun, GRPOMetrics, ProxyMetrics
from rewardsmith.search.results import ENSEMBLES_DIR, ENSEMBLES_FILE, RunDir

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "search_run"


# -- a run folder an earlier version wrote (`tests/fixtures/search_run`) -------------------


def test_run_state_metrics_are_typed() -> None:
    state = RunDir(FIXTURE).read_state()
    stored = json.loads((FIXTURE / "run.json").read_text())
    assert isinstance(state.start, GRPOMetrics) and state.start.steps == 0
    assert set(state.baseline) == {"2", "4"}
    assert state.baseline["4"].f1 == stored["baseline"]["4"]["f1"]
    assert state.baseline["4"].f1_ci95 == tuple(stored["baseline"]["4"]["ci95"]["f1"])


def test_candidate_metrics_are_typed() -> None:
    records = RunDir(FIXTURE).read_records()
    lines = [json.loads(x) for x in (FIXTURE / "results.jsonl").read_text().splitlines()]
    for r, line in zip(records, lines, strict=True):
        assert isinstance(r.proxy, ProxyMetrics)
        assert r.proxy.fitness == line["proxy"]["fitness"]
        assert r.proxy.wrong_payout == line["proxy"]["wrong_payout"]
        assert all(isinstance(g, GRPOMetrics) for g in r.grpo_rungs)
        assert [g.steps for g in r.grpo_rungs] == [g["steps"] for g in line["grpo_rungs"]]
        assert r.to_dict() == line


def test_ensemble_runs_read_back_as_written() -> None:
    summary = json.loads((FIXTURE / ENSEMBLES_DIR / ENSEMBLES_FILE).read_text())
    for key, run in summary["runs"].items():
        typed = EnsembleRun.from_dict(run)
        assert typed.to_dict() == run and list(typed) == list(run), key
        assert typed.members == run["members"]
        validation = typed.on("validation")
        assert validation is not None and validation.f1 == run["sets"]["validation"]["f1"]


# -- records built from partial objects, as older versions and hand-made folders hold ----


def test_keys_an_older_version_did_not_write_read_as_unmeasured() -> None:
    # a proxy record from before the incentive checks
    proxy = ProxyMetrics.from_dict({"separation": 0.5, "probe_payout": 0.1, "fitness": 0.4})
    assert proxy.wrong_payout is None and proxy.misdirection is None
    assert proxy.reference_free is False
    assert GRPOMetrics.from_dict({"f1": 0.5}).training == {}
    assert GRPOMetrics.from_dict({"f1": 0.5}).on("validation") is None
    assert EnsembleRun.from_dict({"f1": 0.5}).members == []


def test_a_key_every_version_writes_fails_where_it_is_read() -> None:
    partial = GRPOMetrics.from_dict({"f1": 0.5})
    with pytest.raises(KeyError, match="accuracy"):
        _ = partial.accuracy


def test_unknown_keys_are_kept_in_place() -> None:
    data = {"f1": 0.5, "added_later": [1, 2], "accuracy": 0.25}
    assert list(GRPOMetrics.from_dict(data).to_dict().items()) == list(data.items())


def test_a_record_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(TypeError, match="expected an object"):
        ProxyMetrics.from_dict([1, 2])  # type: ignore[arg-type]
