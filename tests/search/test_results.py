"""`run.json` as a typed `RunState`: what a run wrote reads back the same, keys a newer
version adds are kept, and a file without settings is refused."""

from __future__ import annotations

import pytest

from rewardsmith.errors import InputError
from rewardsmith.search.results import RunDir, RunState

CONFIG = {"task": "testbed", "rounds": 2, "seed": 0}

# run.json as the loop leaves it at each point of a run.
STATES = [
    # just opened
    {"started": "2026-01-01T00:00:00", "config": CONFIG},
    # pool sampled, the held-out split fixed
    {
        "started": "2026-01-01T00:00:00",
        "config": CONFIG,
        "pool": {"responses": 24, "right": 9, "probes": 30},
        "held_out": {"validation": 40, "test": 40},
        "task": {"name": "testbed"},
    },
    # finished, with the starting policy and two baseline budgets
    {
        "started": "2026-01-01T00:00:00",
        "config": CONFIG,
        "start": {"f1": 0.1},
        "baseline": {"10": {"f1": 0.2}, "20": {"f1": 0.3}},
        "finished": "2026-01-01T01:00:00",
        "last_session_seconds": 3600.0,
    },
    # a key this version does not name (written by a newer one) stays
    {"started": "2026-01-01T00:00:00", "config": CONFIG, "ensembles": {"sizes": [3]}},
]


@pytest.mark.parametrize("data", STATES)
def test_run_json_reads_back_as_written(tmp_path, data) -> None:
    rd = RunDir(tmp_path)
    rd.write_run(data)
    state = rd.read_state()
    assert state.to_dict() == data
    rd.write_state(state)
    assert rd.read_run() == data


def test_a_baseline_added_in_memory_is_written(tmp_path) -> None:
    rd = RunDir(tmp_path)
    state = RunState(dict(CONFIG), started="2026-01-01T00:00:00")
    state.baseline["10"] = {"f1": 0.5}
    rd.write_state(state)
    assert rd.read_run()["baseline"] == {"10": {"f1": 0.5}}


def test_a_file_without_settings_is_refused(tmp_path) -> None:
    rd = RunDir(tmp_path)
    rd.write_run({"started": "x"})
    with pytest.raises(InputError, match="not a search run"):
        rd.read_state()
