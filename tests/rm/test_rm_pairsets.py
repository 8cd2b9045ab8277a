"""Evaluation pairs (`rm.pairsets`) and worked-solution corpora (`rm.corpora`).

A wrong copy must differ from the true solution only in its arithmetic: for `final` in the
last result and what restates it, for `step` in one intermediate result and what follows
from it. The corpus is text only: no label field, no wrong solution in it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from rewardsmith.rm import corpora, pairsets
from rewardsmith.rm.evaluate import evaluate_sets, load_eval_set

TESTBED = "<thinking>3*6=18. 14+18=32.</thinking><solution>32</solution>"
THREE = "<thinking>7+4=11. 11+9=20. 20-3=17.</thinking><solution>17</solution>"
JANET = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer's market.\n#### 18"
)
HOUSE = (
    "The cost was 80,000+50,000=$<<80000+50000=130000>>130,000\n"
    "The value rose by 80,000*1.5=<<80000*1.5=120000>>120,000\n"
    "So the new value is 120,000+80,000=$<<120000+80000=200000>>200,000\n"
    "So he made a profit of 200,000-130,000=$<<200000-130000=70000>>70,000\n#### 70000"
)


def _steps(text: str) -> list[tuple[int, str, int, int]]:
    return [
        (int(a), op, int(b), int(c))
        for a, op, b, c in re.findall(r"(\d+)([+\-*])(\d+)=(\d+)", text)
    ]


def _true(a: int, op: str, b: int, c: int) -> bool:
    return {"+": a + b, "-": a - b, "*": a * b}[op] == c


@pytest.mark.parametrize("seed", range(5))
def test_testbed_final_changes_only_the_last_result(seed: int) -> None:
    wrong = pairsets.testbed_wrong(TESTBED, "final", random.Random(seed))
    assert wrong is not None
    first, last = _steps(wrong)
    assert first == (3, "*", 6, 18)  # the earlier line is untouched
    assert last[:3] == (14, "+", 18) and not _true(*last)
    assert wrong.endswith(f"<solution>{last[3]}</solution>")


@pytest.mark.parametrize("seed", range(5))
def test_testbed_step_carries_the_slip_to_the_answer(seed: int) -> None:
    wrong = pairsets.testbed_wrong(THREE, "step", random.Random(seed))
    assert wrong is not None
    steps = _steps(wrong)
    # exactly one calculation is wrong; every later one is right given the wrong number
    assert [_true(*s) for s in steps].count(False) == 1
    bad = next(i for i, s in enumerate(steps) if not _true(*s))
    assert bad < len(steps) - 1
    for prev, nxt in zip(steps, steps[1:], strict=False):
        assert nxt[0] == prev[3]  # the chain reads the previous (possibly wrong) result
    answer = int(re.search(r"<solution>(\d+)</solution>", wrong).group(1))  # type: ignore[union-attr]
    assert answer == steps[-1][3] != 17


def test_gsm8k_copies_are_shown_without_annotations() -> None:
    rng = random.Random(0)
    final = pairsets.gsm8k_wrong(JANET, "final", rng)
    step = pairsets.gsm8k_wrong(JANET, "step", rng)
    assert final is not None and step is not None
    assert "<<" not in final + step
    lines = final.splitlines()
    assert lines[0] == "Janet sells 16 - 3 - 4 = 9 duck eggs a day."  # unchanged
    wrong_total = re.search(r"\$(\d+) every", lines[1]).group(1)  # type: ignore[union-attr]
    assert wrong_total != "18" and lines[2] == f"#### {wrong_total}"
    # the slip in the first line is carried into the second and the answer
    first = int(re.search(r"= (\d+) duck", step).group(1))  # type: ignore[union-attr]
    assert first != 9 and f"She makes {first} * 2 = ${first * 2} every" in step
    assert step.endswith(f"#### {first * 2}")


def test_gsm8k_step_keeps_thousands_commas_and_recomputes() -> None:
    wrong = pairsets.gsm8k_wrong(HOUSE, "step", random.Random(3))
    assert wrong is not None
    answer = int(wrong.rsplit("#### ", 1)[1])
    assert answer != 70000 and "," in wrong.splitlines()[0]


def test_build_pairs_groups_kinds_and_skips(tmp_path: Path) -> None:
    problems = [("a", "Q1", TESTBED), ("b", "Q2", "<solution>5</solution>"), ("c", "Q3", THREE)]
    rows = pairsets.build_pairs(problems, pairsets.testbed_wrong, n_problems=5, per_kind=2)
    # "b" has no calculation to make wrong: skipped whole, never half-used
    assert {r.group for r in rows} == {"problem a", "problem c"}
    assert [r.kind for r in rows].count("final") == 4 and [r.kind for r in rows].count("step") == 4
    assert all(r.chosen != r.rejected for r in rows)
    assert len({(r.group, r.rejected) for r in rows}) == len(rows)  # distinct copies
    path = pairsets.write_pairs(rows, tmp_path / "pairs.jsonl")
    s = load_eval_set(path)
    # rm eval: the whole set and each kind, intervals over the 2 problems
    got = evaluate_sets([s], lambda p, c: [float(len(c)) for c in c])
    assert set(got) == {"pairs", "pairs/final", "pairs/step"}
    assert got["pairs"]["n"] == 8 and got["pairs"]["groups"] == 2
    assert got["pairs/final"]["n"] == 4 and got["pairs/step"]["groups"] == 2


def test_same_seed_same_pairs() -> None:
    problems = [("a", "Q1", TESTBED), ("c", "Q3", THREE)]
    one = pairsets.build_pairs(problems, pairsets.testbed_wrong, n_problems=2, seed=1)
    two = pairsets.build_pairs(problems, pairsets.testbed_wrong, n_problems=2, seed=1)
    assert one == two


def test_corpus_is_plain_text_interleaved(tmp_path: Path) -> None:
    gsm = tmp_path / "gsm.jsonl"
    gsm.write_text(json.dumps({"question": "How many?", "answer": JANET}) + "\n")
    testbed = list(corpora.worked_documents([("Question: Q\nAnswer: ", TESTBED)] * 3))
    out = tmp_path / "corpus.jsonl"
    counts = corpora.write_corpus(
        out, {"testbed": testbed, "gsm8k": corpora.gsm8k_documents(gsm)}, seed=0
    )
    assert counts == {"testbed": 3, "gsm8k": 1}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(set(r) == {"text"} for r in rows)  # no label of any kind
    texts = [r["text"] for r in rows]
    assert f"Question: Q\nAnswer:\n\n{TESTBED}" in texts
    gsm_doc = next(t for t in texts if t.startswith("How many?"))
    assert "<<" not in gsm_doc and gsm_doc.endswith("#### 18")
    assert gsm_doc.split("\n\n", 1)[0] == "How many?"  # the boundary split finds the question


def test_a_blank_line_inside_a_problem_does_not_cut_it() -> None:
    doc = corpora.document("Line one.\n\nLine two?", "Answer.")
    assert doc.split(corpora.SEPARATOR, 1) == ["Line one.\nLine two?", "Answer."]
