"""Typed search metrics: records read from a run folder have typed numbers and write back
the object they were read from (keys, order, keys a newer version added); keys an older
version did not write read as unmeasured, keys every version writes fail where they are read."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from rewardsmith.rl.stats import Interval
from rewardsmith.search.metrics import (
    EnsembleRun,
    EnsembleSummary,
    GRPOMetrics,
    PolicyEval,
    ProxyMetrics,
)
from rewardsmith.search.results import ENSEMBLES_DIR, ENSEMBLES_FILE, CandidateRecord, RunDir

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


# -- each property reads its own key (every value distinct, so a mix-up shows) ------------

PROXY = {
    "separation": 0.61,
    "probe_payout": 0.12,
    "fitness": 0.33,
    "wrong_payout": 0.07,
    "misdirection": 0.09,
    "reference_free": True,
    "seconds": 1.5,
    "cpu_seconds": 1.25,
}
GRPO = {
    "accuracy": 0.41,
    "f1": 0.47,
    "ci95": {"accuracy": [0.31, 0.51], "f1": [0.37, 0.57]},
    "steps": 60,
    "seconds": 12.5,
    "cpu_seconds": 11.0,
    "training": {"accuracy": {"first": 0.1, "last": 0.2, "change": 0.1}},
    "sets": {"validation": {"accuracy": 0.43, "f1": 0.49, "ci95": {}}},
}
TESTED = {
    "n": 12,
    "accuracy": {"value": 0.25, "low": 0.05, "high": 0.45},
    "f1": {"value": 0.3, "low": 0.1, "high": 0.5},
}
SUMMARY = {
    "steps": 3,
    "runs": {"top3": {**GRPO, "name": "top3", "seed": 0, "members": ["a", "b", "c"]}},
    "notes": ["size 5: only 4 admitted candidates"],
    "configs": {"top3": {"kind": "top", "size": 3, "members": ["a", "b", "c"]}},
    "best": "top3",
    "seed_spread": {"top3": {"n": 2, "mean": 0.4, "sd": 0.1, "values": [0.3, 0.5]}},
    "test": {"top3": TESTED},
    "mcnemar": [{"a": "base", "b": "top3", "significant": False}],
    "indistinguishable": {"top3": ["base"]},
    "start": {"test": {**TESTED, "n": 11}, "versus": {"top3": {"only_it": 2}}},
}

READS = [
    # a candidate's proxy numbers
    (ProxyMetrics, PROXY, "separation", 0.61),
    (ProxyMetrics, PROXY, "probe_payout", 0.12),
    (ProxyMetrics, PROXY, "fitness", 0.33),
    (ProxyMetrics, PROXY, "wrong_payout", 0.07),
    (ProxyMetrics, PROXY, "misdirection", 0.09),
    (ProxyMetrics, PROXY, "reference_free", True),
    (ProxyMetrics, PROXY, "seconds", 1.5),
    (ProxyMetrics, PROXY, "cpu_seconds", 1.25),
    # a GRPO run judged
    (GRPOMetrics, GRPO, "accuracy", 0.41),
    (GRPOMetrics, GRPO, "f1", 0.47),
    (GRPOMetrics, GRPO, "f1_ci95", (0.37, 0.57)),
    (GRPOMetrics, GRPO, "steps", 60),
    (GRPOMetrics, GRPO, "seconds", 12.5),
    (GRPOMetrics, GRPO, "cpu_seconds", 11.0),
    (GRPOMetrics, GRPO, "training", GRPO["training"]),
    # an ensemble configuration's run, and the whole ensembles.json
    (EnsembleRun, SUMMARY["runs"]["top3"], "members", ["a", "b", "c"]),
    (EnsembleSummary, SUMMARY, "steps", 3),
    (EnsembleSummary, SUMMARY, "best", "top3"),
    (EnsembleSummary, SUMMARY, "notes", SUMMARY["notes"]),
    (EnsembleSummary, SUMMARY, "pairwise", SUMMARY["mcnemar"]),
    (EnsembleSummary, SUMMARY, "indistinguishable", {"top3": ["base"]}),
    (EnsembleSummary, SUMMARY, "seed_spread", SUMMARY["seed_spread"]),
    (EnsembleSummary, SUMMARY, "against_start", {"top3": {"only_it": 2}}),
]


@pytest.mark.parametrize(("kind", "data", "name", "value"), READS)
def test_each_property_reads_its_key(kind, data, name, value) -> None:
    assert getattr(kind.from_dict(data), name) == value


def test_nested_records_read_their_own_parts() -> None:
    assert GRPOMetrics.from_dict(GRPO).on("validation") == GRPO["sets"]["validation"]
    summary = EnsembleSummary.from_dict(SUMMARY)
    assert summary.runs["top3"].f1 == 0.47 and summary.size("top3") == 3
    assert summary.size("top9") == "?"
    tested = summary.tested["top3"]
    assert tested.accuracy == Interval(0.25, 0.05, 0.45) and tested.f1 == Interval(0.3, 0.1, 0.5)
    assert summary.start_tested is not None and summary.start_tested["n"] == 11
    judged = PolicyEval.from_dict(
        {"steps": 4, "sets": {"test": {"correct": [True, False], "parseable": [True, True],
                                       "completions": ["a", "b"]}}}
    )  # fmt: skip
    assert judged.steps == 4 and judged.judged_on("test") and not judged.judged_on("validation")
    assert judged.correct("test") == [True, False] and judged.parseable("test") == [True, True]
    assert judged.first_set() == ([True, False], ["a", "b"])


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


def test_a_record_copies_and_pickles_like_the_dict_it_was() -> None:
    record = CandidateRecord(round=1, name="a", generator="offline", proxy=PROXY, grpo=GRPO)
    for copied in (copy.deepcopy(record), pickle.loads(pickle.dumps(record))):
        assert copied == record and isinstance(copied.grpo, GRPOMetrics)
        assert copied.to_dict() == record.to_dict()


def test_a_record_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(TypeError, match="expected an object"):
        ProxyMetrics.from_dict([1, 2])  # type: ignore[arg-type]
