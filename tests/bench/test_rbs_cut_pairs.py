"""bench/rbs_cut_pairs.py: the `rm pairs` sets in the shape RBS trains on. The prompt must be
the document up to the first number where the wrong copy departs, never cut inside a number,
and both completions must continue that same prompt."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from rbs_cut_pairs import cut_row  # noqa: E402

PROMPT = "Question: Ada buys 9 pens at 8 dollars each and pays with 116 dollars.\nAnswer: "
TRUE = "<thinking>9*8=72. 116-72=44.</thinking><solution>44</solution>"


@pytest.mark.parametrize(
    ("rejected", "prompt_end", "chosen", "wrong"),
    [
        # wrong final answer: 44 and 42 share their first digit, the cut goes before it
        (
            "<thinking>9*8=72. 116-72=42.</thinking><solution>42</solution>",
            "116-72=",
            "44.</thinking><solution>44</solution>",
            "42.</thinking><solution>42</solution>",
        ),
        # wrong intermediate step carried through: the cut is at the first wrong result
        (
            "<thinking>9*8=69. 116-69=47.</thinking><solution>47</solution>",
            "<thinking>9*8=",
            "72. 116-72=44.</thinking><solution>44</solution>",
            "69. 116-69=47.</thinking><solution>47</solution>",
        ),
        # a wrong number of more digits than the true one
        (
            "<thinking>9*8=72. 116-72=440.</thinking><solution>440</solution>",
            "116-72=",
            "44.</thinking><solution>44</solution>",
            "440.</thinking><solution>440</solution>",
        ),
    ],
)
def test_the_prompt_is_the_document_up_to_the_first_wrong_number(
    rejected: str, prompt_end: str, chosen: str, wrong: str
) -> None:
    row = {"prompt": PROMPT, "chosen": TRUE, "rejected": rejected, "group": "p0", "kind": "k"}
    out = cut_row(row)
    assert out is not None
    # the document as the corpus writes it (question, blank line, solution), cut there
    assert out["prompt"].startswith("Question: Ada") and "\n\n<thinking>" in out["prompt"]
    assert out["prompt"].endswith(prompt_end)
    assert (out["chosen"], out["rejected"]) == (chosen, wrong)
    assert (out["group"], out["kind"]) == ("p0", "k")  # still resampled by problem


def test_identical_completions_give_no_pair() -> None:
    assert cut_row({"prompt": PROMPT, "chosen": TRUE, "rejected": TRUE}) is None


def test_the_backbone_likelihood_is_reported_on_whole_and_cut_pairs(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from rbs_cut_pairs import likelihood_report

    wrong = {
        "final": "<thinking>9*8=72. 116-72=42.</thinking><solution>42</solution>",
        "step": "<thinking>9*8=69. 116-69=47.</thinking><solution>47</solution>",
    }
    rows = [
        {"prompt": PROMPT, "chosen": TRUE, "rejected": bad, "group": "p0", "kind": kind}
        for kind, bad in wrong.items()
    ]
    pairs = tmp_path / "testbed_pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = likelihood_report(pairs, "testbed")
    assert set(report) == {
        *("testbed_pairs", "testbed_pairs/final", "testbed_pairs/step"),
        *("cut", "cut/final", "cut/step"),
    }
    # the shared text has the same likelihood in both completions: cutting it off changes
    # no verdict
    for kind in ("", "/final", "/step"):
        assert report[f"cut{kind}"]["accuracy"] == report[f"testbed_pairs{kind}"]["accuracy"]
    assert report["cut"]["n"] == 2
