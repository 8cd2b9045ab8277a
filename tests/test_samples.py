"""The one sample reader and its inverse: what the client sends and the server's workers
pass on reads back to the same sample (the accept/refuse table, through the CLI and a real
server, is tests/server/test_sample_rules.py)."""

from __future__ import annotations

import pytest

from rewardsmith.errors import SampleError
from rewardsmith.samples import as_samples, sample_from_dict, sample_to_dict
from rewardsmith.types import Sample

ROUND_TRIP = [
    # the least a sample has, and every field
    Sample(completion=""),
    Sample(completion="c", prompt="p", reference="r", task="t", meta={"k": [1]}, id="7"),
    # chat prompts, messages kept as given; group is a meta entry
    Sample(completion="c", prompt=[{"role": "user", "content": "q"}, {"content": "x"}]),
    Sample(completion="c", meta={"group": "step-1/prompt-0"}),
    # a reference that was JSON once is text now, and stays text
    Sample(completion="c", reference='{"answer": 72}'),
]


@pytest.mark.parametrize("sample", ROUND_TRIP)
def test_a_sample_reads_back_from_its_json_unchanged(sample: Sample) -> None:
    assert sample_from_dict(sample_to_dict(sample)) == sample


def test_a_bad_sample_names_its_field_and_its_place_in_the_batch() -> None:
    with pytest.raises(SampleError) as bad:
        sample_from_dict({"completion": "c", "meta": []})
    assert (bad.value.field, str(bad.value)) == ("meta", "'meta' must be an object, got an array")
    with pytest.raises(SampleError, match=r"^sample 1: 'id' must be a string or an integer"):
        as_samples([{"completion": "c"}, {"completion": "c", "id": 1.5}])
