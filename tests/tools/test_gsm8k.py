"""GSM8KTool: the final number of a word-problem solution against the reference number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.errors import InvalidReferenceError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.gsm8k import GSM8KTool
from rewardsmith.types import Reward, Sample, ToolSpec

SPEC = ToolSpec(name="gsm8k")
TESTS = Path(__file__).resolve().parents[1]
SLICE = TESTS / "fixtures" / "gsm8k" / "test_slice.jsonl"
FULL_TEST_SET = TESTS.parent.parent / "shared" / "data" / "gsm8k" / "test.jsonl"

# A real gold solution (test set, line 1), used as completion and as reference.
JANET = (
    "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n"
    "She makes 9 * 2 = $<<9*2=18>>18 every day at the farmer\u2019s market.\n#### 18"
)


def score_one(completion: str, reference: str | None) -> Reward:
    return GSM8KTool(spec=SPEC).score([Sample(completion, reference=reference)])[0]


def load(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def final_number(solution: str) -> str:
    return solution.rpartition("####")[2].strip()


def plus_one(solution: str) -> str:
    """The same solution with its `#### N` answer changed to N + 1."""
    head, _, number = solution.rpartition("####")
    return f"{head}#### {int(number.strip().replace(',', '')) + 1}"


@pytest.mark.parametrize(
    ("completion", "reference", "expected"),
    [
        # the GSM8K format: "#### N" wins over every other number, including later ones
        (JANET, "18", 1.0),
        (JANET, JANET, 1.0),
        ("#### 18\nI double-checked: 9 * 2 = 18, so 19 is wrong.", "18", 1.0),
        ("Total = 19\n#### 18", "19", 0.0),
        # no "####": the last number of the completion
        ("She sells 9 eggs at $2 each, so she makes 18 dollars.", "18", 1.0),
        ("She sells 9 eggs at $2 each, so she makes 18 dollars.", "9", 0.0),
        # "The answer is N" and \boxed{N} mark the answer even when numbers follow
        ("The answer is 42. (Check: 42 / 2 = 21.)", "42", 1.0),
        ("So the final answer is: **$1,250**", "1250", 1.0),
        ("Thus $\\boxed{42}$ cookies, since 6 * 7 = 42 and 42 > 40.", "42", 1.0),
        ("\\boxed{\\$18.00}", "18", 1.0),
        ("\\boxed{\\frac{3}{4}}", "0.75", 1.0),
        # normalization: commas, currency, percent, units, trailing .0
        ("#### 1,000", "1000", 1.0),
        ("#### $5.50", "5.5", 1.0),
        ("The price is \u20ac12 per kilo.", "12", 1.0),
        ("He pays \u00a3300 a month.", "300", 1.0),
        ("The discount is 25%.", "25", 1.0),
        ("It takes 3 hours.", "3", 1.0),
        ("#### 18.0", "18", 1.0),
        ("#### 18.00", "$18", 1.0),
        # negatives: a leading minus counts, a hyphen between numbers does not
        ("The temperature fell to -5 degrees.", "-5", 1.0),
        ("The temperature fell to \u22125 degrees.", "-5", 1.0),
        ("Children aged 3-4", "4", 1.0),
        # decimals and fractions are compared exactly, with round-off tolerance only
        ("#### 0.5", "1/2", 1.0),
        ("#### 0.3333333333333", "1/3", 1.0),
        ("#### 0.33", "1/3", 0.0),
        # close integers stay different, however large
        ("#### 1000000001", "1000000000", 0.0),
        ("#### 17", "18", 0.0),
    ],
)
def test_extract_and_compare(completion: str, reference: str, expected: float) -> None:
    reward = score_one(completion, reference)
    assert reward.status == "ok"
    assert reward.score == expected, reward.reason


@pytest.mark.parametrize(
    "completion",
    [
        # no number anywhere: 0.0 with a reason, never an exception
        "",
        "I don't know.",
        "#### ",
        # a digit run too long to be an answer
        "1" * 5_000,
    ],
)
def test_no_answer_scores_zero(completion: str) -> None:
    reward = score_one(completion, "18")
    assert (reward.score, reward.status) == (0.0, "ok")
    assert reward.reason


@pytest.mark.parametrize(
    "reference",
    [
        # missing or blank
        None,
        "",
        "   ",
        # not a number, or several numbers without "####"
        "eighteen",
        "between 3 and 4",
        "Janet sells 9 eggs.\n#### many",
    ],
)
def test_bad_reference_is_invalid_reference(reference: str | None) -> None:
    reward = score_one("#### 18", reference)
    assert reward.status == "invalid_reference"
    assert reward.score is None
    assert reward.reason


@pytest.mark.parametrize(
    ("reference", "value"),
    [
        # bare numbers, as users write them
        ("72", 72),
        ("1,000", 1000),
        ("$5.50", 5.5),
        ("-3", -3),
        # a full solution: the number after the last "####"
        (JANET, 18),
        ("... so 2,125 in total.\n#### 2,125", 2125),
    ],
)
def test_parse_reference(reference: str, value: float) -> None:
    assert GSM8KTool(spec=SPEC).parse_reference(reference) == value


def test_parse_reference_rejects_text() -> None:
    with pytest.raises(InvalidReferenceError, match="not a number"):
        GSM8KTool(spec=SPEC).parse_reference("about five")


def test_megabyte_completion_returns() -> None:
    # only the tail is read (MAX_COMPLETION_CHARS), so the final answer still counts
    completion = "blah 7 " * 150_000 + "\n#### 18"
    assert len(completion) > 1_000_000
    assert score_one(completion, "18").score == 1.0


def test_batch_keeps_order_and_shares_reference_parsing() -> None:
    rewards = GSM8KTool(spec=SPEC).score(
        [Sample("#### 18", reference="18"), Sample("#### 19", reference="18"), Sample("#### 18")]
    )
    assert [r.score for r in rewards] == [1.0, 0.0, None]
    assert [r.status for r in rewards] == ["ok", "ok", "invalid_reference"]
    assert all(r.tool == "gsm8k@1" for r in rewards)


def test_builtin_builds_from_registry() -> None:
    (builtin,) = [b for b in BUILTINS if b.factory.endswith(":GSM8KTool")]
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, GSM8KTool)
    assert tool.score([Sample(JANET, reference="18")])[0].score == 1.0


def check_gold_solutions(rows: list[dict[str, str]]) -> None:
    """Every gold solution scores 1.0 against itself and its number; N + 1 scores 0.0."""
    tool = GSM8KTool(spec=SPEC)
    gold = tool.score([Sample(r["answer"], reference=r["answer"]) for r in rows])
    bare = tool.score([Sample(r["answer"], reference=final_number(r["answer"])) for r in rows])
    wrong = tool.score([Sample(plus_one(r["answer"]), reference=r["answer"]) for r in rows])
    assert [i for i, r in enumerate(gold) if r.score != 1.0] == []
    assert [i for i, r in enumerate(bare) if r.score != 1.0] == []
    assert [i for i, r in enumerate(wrong) if r.score != 0.0] == []


# The bundled slice always runs; the whole test set when ../shared/data is beside the checkout.
def test_gold_solutions_of_bundled_slice() -> None:
    rows = load(SLICE)
    assert len(rows) == 50
    check_gold_solutions(rows)


@pytest.mark.skipif(not FULL_TEST_SET.exists(), reason="../shared/data/gsm8k not present")
def test_gold_solutions_of_full_test_set() -> None:
    rows = load(FULL_TEST_SET)
    assert len(rows) == 1319
    check_gold_solutions(rows)
