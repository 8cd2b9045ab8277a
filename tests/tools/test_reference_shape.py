"""A reference of another tool's kind is `invalid_reference` with a reason, never a number
read out of its JSON (issue 17: `--tool math` scored a code sample 1.0 `ok`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from rewardsmith.library.store import Library
from rewardsmith.tools.reference_shape import foreign_reference
from rewardsmith.types import Sample

TEST_LIST = json.dumps(["assert f() == 4"])
HUMANEVAL = json.dumps(
    {
        "task_id": "HumanEval/0",
        "prompt": "def f():\n",
        "test": "def check(candidate):\n    assert candidate() == 4\n",
        "entry_point": "f",
    }
)
MBPP = json.dumps({"test_list": ["assert f(2) == 4"], "test_imports": []})
STDIO = json.dumps({"inputs": ["2\n"], "outputs": ["4\n"]})
RG_ENTRY = json.dumps({"question": "What is 2+2?", "answer": "4", "metadata": {"source": "x"}})
TEST_CODE = "assert f() == 4\nassert f() != 5"

FOREIGN = {
    "JSON list of unit tests": TEST_LIST,
    "HumanEval record": HUMANEVAL,
    "MBPP record": MBPP,
    "stdin/stdout cases": STDIO,
    "reasoning-gym entry": RG_ENTRY,
    "Python test code": TEST_CODE,
}


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    lib = Library(Path(tmp_path_factory.mktemp("lib")) / "lib.db")
    yield lib
    lib.close()


# Every answer-reading tool refuses every foreign shape, with a reason naming what it is; a
# completion "4" (which the JSON contains) must not score.
@pytest.mark.parametrize("tool", ["math", "gsm8k", "translation"])
@pytest.mark.parametrize("what", sorted(FOREIGN))
def test_a_foreign_reference_is_invalid_reference(library: Library, tool: str, what: str) -> None:
    completion = "def f():\n    return 4\n\nThe answer is 4" if tool != "translation" else "4"
    [reward] = library.get(tool).score([Sample(completion=completion, reference=FOREIGN[what])])
    assert reward.status == "invalid_reference", reward
    assert reward.score is None
    assert f"the `{tool}` tool expects" in reward.reason


# References of each tool's own kind are still read (no false alarms).
OWN = [
    ("math", "\\frac{1}{2}", "\\boxed{\\frac{1}{2}}", 1.0),
    ("math", "[1, 2]", "The interval is \\boxed{[1, 2]}", 1.0),  # JSON-looking interval
    ("math", "\\{1, 2\\}", "\\boxed{\\{1,2\\}}", 1.0),
    ("math", "(3, 4]", "\\boxed{(3,4]}", 1.0),
    ("gsm8k", "Natalia sold 48 clips.\n#### 72", "so #### 72", 1.0),
    ("gsm8k", "$1,000", "The total is $1,000.", 1.0),
    ("translation", json.dumps(["The cat sat.", "A cat was sitting."]), "The cat sat.", 1.0),
    ("translation", "Define the function first.", "Define the function first.", 1.0),
]


@pytest.mark.parametrize(("tool", "reference", "completion", "score"), OWN)
def test_own_references_still_score(
    library: Library, tool: str, reference: str, completion: str, score: float
) -> None:
    [reward] = library.get(tool).score([Sample(completion=completion, reference=reference)])
    assert reward.status == "ok", reward
    assert reward.score == pytest.approx(score)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (TEST_LIST, "unit tests"),
        (HUMANEVAL, "HumanEval record"),
        (json.dumps({"answer": 4}), "JSON object"),
        (json.dumps([{"a": 1}]), "list of objects"),
        (json.dumps(["1", "2"]), "list of strings"),
        ("def check(candidate):\n    pass", "Python test code"),
        ("[1, 2]", ""),
        ("{1, 2}", ""),
        ("72", ""),
        ("The definition of insanity.", ""),
    ],
)
def test_foreign_reference_names_the_shape(text: str, kind: str) -> None:
    found = foreign_reference(text)
    assert (kind in found) if kind else found == ""
