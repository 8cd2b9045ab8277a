"""reasoning-gym imported one dataset at a time: the same scores as the whole package, a later
`import reasoning_gym` still whole, and an index that does not fit the install never used.

Each case runs in a fresh interpreter: this test process has imported reasoning-gym whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import reasoning_gym

from rewardsmith.tools.reasoning_gym import ReasoningGymTool
from rewardsmith.tools.rg_datasets import _index_key, index_dir
from rewardsmith.types import Sample, ToolSpec

SPEC = ToolSpec(name="reasoning_gym")

# (dataset, seed): entries the child scores after importing only the datasets' own modules,
# in this order, in one fresh process
CASES = [
    # its module's first import is `from reasoning_gym import utils`: a submodule looked up
    # on the package that is not imported whole yet
    ("chain_sum", 2),
    # the two of examples/mixed.jsonl: their modules import no plotting, no sympy
    ("basic_arithmetic", 3),
    ("letter_counting", 4),
    # a dataset that reads data files of the package when it is built
    ("word_sorting", 5),
    # grids turned back into tuples, in a module of another subpackage
    ("arc_agi", 6),
    # its imports form a cycle only the package's own order resolves: read from the whole
    # package (last: from here on reasoning-gym is imported whole)
    ("acre", 7),
]
LIGHT = ("chain_sum", "basic_arithmetic", "letter_counting")

CHILD = """
import json, sys
from rewardsmith.tools.reasoning_gym import ReasoningGymTool
from rewardsmith.types import Sample, ToolSpec

cases = json.load(open(sys.argv[1]))
tool = ReasoningGymTool(ToolSpec(name="reasoning_gym"))
out = {"scores": [], "heavy": []}
for case in cases:
    samples = [Sample(f"<answer>{a}</answer>", reference=case["reference"]) for a in case["answers"]]
    out["scores"].append([r.score for r in tool.score(samples)])
    if case["light"]:
        out["heavy"] += [m for m in ("matplotlib", "sympy", "cellpylib") if m in sys.modules]
import pytest
import reasoning_gym
out["version"] = reasoning_gym.__version__
out["registered"] = len(reasoning_gym.factory.DATASETS)
out["made"] = reasoning_gym.create_dataset("chain_sum", size=1, seed=1)[0]["answer"]
print(json.dumps(out))
"""


def _cases(tmp_path: Path) -> tuple[Path, list[list[float | None]]]:
    """The cases as JSON for the child, and their scores here, where reasoning-gym is
    imported whole."""
    cases, expected = [], []
    for dataset, seed in CASES:
        item = reasoning_gym.create_dataset(dataset, size=1, seed=seed)[0]
        answers = [item["answer"], item["answer"] + "0", "nonsense"]
        reference = json.dumps(item, default=list)
        samples = [Sample(f"<answer>{a}</answer>", reference=reference) for a in answers]
        expected.append([r.score for r in ReasoningGymTool(SPEC).score(samples)])
        cases.append({"reference": reference, "answers": answers, "light": dataset in LIGHT})
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    return path, expected


def _child(cases: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(cases)],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
        timeout=300,
    )
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_one_dataset_at_a_time_scores_as_the_whole_package(tmp_path: Path) -> None:
    cases, expected = _cases(tmp_path)
    first = _child(cases)  # builds the index by importing the package whole
    assert list(index_dir().glob("*.json")), "the index was not stored"
    second = _child(cases)  # imports each dataset's module alone
    for run in (first, second):
        assert run["scores"] == expected
        # a later `import reasoning_gym` is the whole package, as without the index
        assert run["registered"] == len(reasoning_gym.factory.DATASETS)
        assert run["version"] == reasoning_gym.__version__
        assert run["made"] == reasoning_gym.create_dataset("chain_sum", size=1, seed=1)[0]["answer"]
    assert second["heavy"] == []


# Index files that do not fit the install (from the real one): each is ignored or its entry
# not trusted, and the scores stay those of the whole package.
PLANTED = [
    # a module outside the package
    lambda index: {**index, "basic_arithmetic": "os"},
    # another dataset's module: it does not register this one, so the package is imported
    lambda index: {**index, "basic_arithmetic": "reasoning_gym.algorithmic.letter_counting"},
    # not an index at all
    lambda index: "not json",
]


def test_an_index_that_does_not_fit_is_not_trusted(tmp_path: Path) -> None:
    cases, expected = _cases(tmp_path)
    _child(cases)
    path = index_dir() / f"{_index_key()}.json"
    real = json.loads(path.read_text())["index"]
    for plant in PLANTED:
        planted = plant(real)
        if isinstance(planted, str):
            path.write_text(planted)
        else:
            path.write_text(json.dumps({"key": _index_key(), "index": planted}))
        assert _child(cases)["scores"] == expected, planted


ALONE = """
import json, sys
from rewardsmith.tools.reasoning_gym import _restore_tuples, _score_fn
name, path = sys.argv[1], sys.argv[2]
entry = json.load(open(path))
entry = {**entry, "metadata": _restore_tuples(name, entry.get("metadata") or {})}
score = _score_fn(name, "null")
print(json.dumps([float(score(entry["answer"], entry)), float(score("nonsense", entry))]))
"""


@pytest.mark.slow
def test_every_dataset_scores_the_same_alone(tmp_path: Path) -> None:
    # Each dataset in a fresh process of its own (~1 min for ~100): its scorer, built from
    # its module alone, scores its gold answer and a wrong one as the whole package's does.
    _child(_cases(tmp_path)[0])  # stores the index
    differ = []
    for name in sorted(reasoning_gym.factory.DATASETS):
        try:
            item = reasoning_gym.create_dataset(name, size=1, seed=1)[0]
            score = reasoning_gym.get_score_answer_fn(name)
            expected = [float(score(item["answer"], item)), float(score("nonsense", item))]
        except Exception:  # composite needs a config; a scorer may refuse a word
            continue
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(item, default=list))
        done = subprocess.run(
            [sys.executable, "-c", ALONE, name, str(path)],
            capture_output=True,
            text=True,
            env=dict(os.environ),
            timeout=300,
        )
        got = json.loads(done.stdout.splitlines()[-1]) if done.returncode == 0 else done.stderr
        if got != expected:
            differ.append((name, expected, got))
    assert differ == []
