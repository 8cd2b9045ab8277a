"""Evaluation formats and metrics, checked by hand with a transparent score function."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from rewardsmith.errors import InputError
from rewardsmith.rm.evaluate import (
    BestOfNRow,
    EvalSet,
    Outcomes,
    best_of_n,
    compare_outcomes,
    evaluate_sets,
    load_eval_set,
    math_pairs,
    pairwise_accuracy,
    random_scores,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def by_length(prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
    """Longer completions score higher: easy to reason about by hand."""
    return [float(len(c)) for c in completions]


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_llmbar_label_names_the_better_output(tmp_path: Path) -> None:
    path = tmp_path / "Natural.json"
    path.write_text(
        json.dumps(
            [
                {"input": "q1", "output_1": "long answer", "output_2": "short", "label": 1},
                {"input": "q2", "output_1": "long answer", "output_2": "short", "label": 2},
                {"input": "q3", "output_1": "x", "output_2": "yyyy", "label": 2},
            ]
        )
    )
    s = load_eval_set(path)
    assert s.kind == "pairwise" and s.name == "Natural"
    assert pairwise_accuracy(s.pref, by_length) == {"accuracy": pytest.approx(2 / 3), "n": 3}


def test_hh_rlhf_prompt_is_the_dialogue_before_the_last_assistant_turn(tmp_path: Path) -> None:
    path = tmp_path / "hh.jsonl.gz"
    row = {
        "chosen": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: help me\n\nAssistant: Sure, here is how.",
        "rejected": "\n\nHuman: hi\n\nAssistant: hello\n\nHuman: help me\n\nAssistant: No.",
    }
    with gzip.open(path, "wt") as fh:
        fh.write(json.dumps(row) + "\n")
    (pref,) = load_eval_set(path).pref
    assert pref.prompt == "Human: hi\n\nAssistant: hello\n\nHuman: help me\n\nAssistant:"
    assert pref.chosen == ("Sure, here is how.",) and pref.rejected == ("No.",)


def test_rewardbench_best_of_4_needs_chosen_above_every_rejected(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rb2.jsonl",
        [
            # chosen is longest: counts
            {"prompt": "p", "chosen": ["abcdef"], "rejected": ["a", "ab", "abc"]},
            # beats two of three rejected: does not count
            {"prompt": "p", "chosen": ["abcd"], "rejected": ["a", "ab", "abcdefg"]},
            # a tie with one rejected: does not count
            {"prompt": "p", "chosen": ["abc"], "rejected": ["a", "abc", "b"]},
        ],
    )
    s = load_eval_set(path)
    assert s.kind == "best_of_4"
    (metrics,) = evaluate_sets([s], by_length).values()
    assert metrics["accuracy"] == pytest.approx(1 / 3) and metrics["n"] == 3
    assert metrics["groups"] == 3  # independent rows: each its own group
    assert 0.0 <= metrics["ci_low"] <= 1 / 3 <= metrics["ci_high"] <= 1.0


def test_best_of_n_columns_by_hand() -> None:
    from rewardsmith.rm.evaluate import BestOfNRow

    rows = [
        # longest response is correct; majority answer "1" is wrong; reference RM picks index 0
        BestOfNRow(
            "q",
            ("aaaa", "b", "c", "d"),
            (True, False, False, False),
            ("2", "1", "1", "3"),
            (0.9, 0.1, 0.2, 0.3),
        ),
        # nothing correct: every selector fails, the oracle too
        BestOfNRow("q2", ("aa", "b"), (False, False), ("5", "5"), (0.0, 1.0)),
    ]
    out = best_of_n(rows, by_length)
    points = {k: v for k, v in out.items() if not k.endswith(("_ci_low", "_ci_high"))}
    assert points == {
        "n": 2,
        "random": pytest.approx((1 / 4 + 0) / 2),
        "oracle": 0.5,
        "majority": 0.0,
        "reference_rm": 0.5,
        "model": 0.5,
        # per problem: the model's pick minus the other's, averaged
        "model_minus_random": pytest.approx(((1 - 1 / 4) + 0) / 2),
        "model_minus_majority": 0.5,
    }
    for name, value in points.items():  # every selector has an interval over problems
        if name != "n":
            assert out[f"{name}_ci_low"] <= value + 1e-9 <= out[f"{name}_ci_high"] + 2e-9
    assert len(math_pairs(rows)) == 3  # one correct x three incorrect, none for q2


def test_qwen_best_of_n_file_slice() -> None:
    # The slice keeps only idx, gt, response, score: no majority or reference-RM column.
    s = load_eval_set(FIXTURES / "math" / "qwen25_math_cot_slice.jsonl")
    assert s.kind == "best_of_n" and all(len(r.responses) == 8 for r in s.bon)
    # correct responses per problem, 8 each: 0, 3, 8, 6, 0, 8, 7, 4
    assert [sum(r.correct) for r in s.bon] == [0, 3, 8, 6, 0, 8, 7, 4]
    out = best_of_n(s.bon, None)
    assert out["random"] == pytest.approx(36 / 64)  # expected accuracy of a uniform pick
    assert out["oracle"] == pytest.approx(6 / 8)  # problems with any correct response
    assert not {"majority", "reference_rm", "model"} & out.keys()


def test_qwen_best_of_n_full_file_baselines() -> None:
    path = (
        FIXTURES.parent.parent.parent
        / "shared"
        / "data"
        / "math"
        / "qwen25_math_cot_100_8samples.jsonl"
    )
    if not path.is_file():
        pytest.skip("../shared/data is not beside the checkout")
    s = load_eval_set(path)
    out = best_of_n(s.bon, None)
    assert out["n"] == 100
    assert out["random"] <= out["majority"] <= out["oracle"]
    assert out["random"] <= out["reference_rm"] <= out["oracle"]
    assert len(math_pairs(s.bon)) == 128  # 10 problems have both correct and incorrect answers


def test_every_distinct_pair_is_scored_once(tmp_path: Path) -> None:
    calls: list[int] = []

    def counting(prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
        calls.append(len(prompts))
        return by_length(prompts, completions)

    path = write_jsonl(
        tmp_path / "rb.jsonl", [{"prompt": "p", "chosen": "aa", "rejected": "a"}] * 5
    )
    assert pairwise_accuracy(load_eval_set(path).pref, counting)["accuracy"] == 1.0
    assert calls == [2]


def test_constant_scores_get_zero_not_half(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "rb.jsonl", [{"prompt": "p", "chosen": "aa", "rejected": "a"}] * 4
    )
    flat = pairwise_accuracy(load_eval_set(path).pref, lambda p, c: [0.0] * len(p))
    assert flat["accuracy"] == 0.0


def test_random_scores_are_a_seeded_chance_level(tmp_path: Path) -> None:
    rows = [{"prompt": f"p{i}", "chosen": f"good {i}", "rejected": f"bad {i}"} for i in range(400)]
    pref = load_eval_set(write_jsonl(tmp_path / "rb.jsonl", rows)).pref
    first = pairwise_accuracy(pref, random_scores(0))["accuracy"]
    # 400 fair coin flips: within 0.5 +- 0.1 fails with probability ~6e-5 (and the seed is fixed)
    assert abs(first - 0.5) < 0.1
    assert pairwise_accuracy(pref, random_scores(0))["accuracy"] == first  # seeded
    assert pairwise_accuracy(pref, random_scores(1))["accuracy"] != first


def test_a_bad_line_is_named_by_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "rb.jsonl"
    path.write_text('{"prompt": "p", "chosen": "a", "rejected": "b"}\n{"prompt": \n')
    with pytest.raises(InputError, match=r"rb.jsonl:2: not valid JSON"):
        load_eval_set(path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(InputError, match="found none"):
        load_eval_set(tmp_path / "empty.jsonl")


def test_unknown_format_says_what_is_expected(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [{"foo": 1}])
    with pytest.raises(InputError, match="LLMBar"):
        load_eval_set(path)
    with pytest.raises(InputError, match="does not exist"):
        load_eval_set(tmp_path / "missing.jsonl")


# -- intervals and the paired comparison, over groups ---------------------------------------


def test_math_pairs_of_one_problem_form_one_group() -> None:
    rows = [
        BestOfNRow("q1", ("a", "bb", "ccc"), (True, False, False)),
        BestOfNRow("q2", ("a", "bb"), (False, True)),
    ]
    pairs = math_pairs(rows)
    assert [p.group for p in pairs] == ["problem 0", "problem 0", "problem 1"]
    s = EvalSet("toy", "best_of_n", bon=rows)
    outcomes: dict[str, Outcomes] = {}
    metrics = evaluate_sets([s], by_length, outcomes)["toy/pairs"]
    # by length: "a" loses both pairs of q1, "bb" beats "a" in q2
    assert outcomes["toy/pairs"].wins == (False, False, True)
    assert metrics["accuracy"] == pytest.approx(1 / 3) and metrics["groups"] == 2
    # resampling 2 groups: accuracy 0 (q1 twice), 1 (q2 twice) or 1/3 (both)
    assert metrics["ci_low"] == pytest.approx(0.0) and metrics["ci_high"] == pytest.approx(1.0)


def test_compare_outcomes_by_hand() -> None:
    groups = ("p0",) * 4 + ("p1",) * 4 + ("p2",) * 2
    a = Outcomes((True,) * 4 + (True, True, False, False) + (False, False), groups)
    b = Outcomes((False,) * 4 + (True, True, True, False) + (False, False), groups)
    out = compare_outcomes(a, b)
    assert out["difference"] == pytest.approx((4 - 1) / 10)  # +4 in p0, -1 in p1, 0 in p2
    assert (out["groups_better"], out["groups_worse"], out["groups_tied"]) == (1, 1, 1)
    assert out["sign_test_p"] == pytest.approx(1.0)
    assert out["ci_low"] < out["difference"] < out["ci_high"]
    # Seeded: the same inputs give the same interval.
    assert compare_outcomes(a, b) == out
    with pytest.raises(InputError, match="same rows"):
        compare_outcomes(a, Outcomes(b.wins, groups[::-1]))


def test_a_model_better_on_every_problem_has_a_positive_interval() -> None:
    groups = tuple(f"p{i}" for i in range(12) for _ in range(5))
    a = Outcomes(tuple(j < 4 for _ in range(12) for j in range(5)), groups)  # 4 of 5 each
    b = Outcomes(tuple(j < 2 for _ in range(12) for j in range(5)), groups)  # 2 of 5 each
    out = compare_outcomes(a, b)
    assert out["difference"] == pytest.approx(0.4)
    assert out["ci_low"] == pytest.approx(0.4) and out["ci_high"] == pytest.approx(0.4)
    assert out["groups_better"] == 12 and out["sign_test_p"] < 0.001
