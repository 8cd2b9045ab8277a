"""Synthesis from a scoring batch: one task without a `task` field forms one group, and a
verifier that pays none of the batch (or none of a style) is flagged."""

from __future__ import annotations

import pytest

from rewardsmith.synth.batch_groups import batch_flag, group_keys, prompt_template, reference_shape
from rewardsmith.types import Sample


# (prompt, reference) pairs of one task share a key; other tasks do not
@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (
            ("Convert October 23, 2019 to an ISO 8601 date.", "2019-10-23"),
            ("Convert March 5, 2021 to an ISO 8601 date.", "2021-03-05"),
            True,
        ),
        (
            ("Sort these words by length, shortest first: kiwi, apple, fig", "fig, kiwi, apple"),
            (
                "Sort these words by length, shortest first: plum, banana, date, lime",
                "date, lime, plum, banana",
            ),
            True,
        ),
        (('Reverse the word "river".', "revir"), ('Reverse the word "candle".', "eldnac"), True),
        # same template, another reference shape: another task
        (
            ("Convert October 23, 2019 to an ISO 8601 date.", "2019-10-23"),
            ("Convert October 23, 2019 to an ISO 8601 date.", "23 October"),
            False,
        ),
        (
            ("Convert October 23, 2019 to an ISO 8601 date.", "2019-10-23"),
            ("Sort these words by length, shortest first: kiwi, apple, fig", "fig, kiwi, apple"),
            False,
        ),
    ],
)
def test_group_key(a: tuple[str, str], b: tuple[str, str], same: bool) -> None:
    key_a, key_b = group_keys([Sample("x", a[0], a[1]), Sample("y", b[0], b[1])])
    assert (key_a == key_b) is same


@pytest.mark.parametrize(
    ("reference", "shape"),
    [("2019-10-23", "9-9-9"), ("a, bb, ccc", "a(, a)*"), ("fig, kiwi", "a(, a)*"), (None, "-")],
)
def test_reference_shape(reference: str | None, shape: str) -> None:
    assert reference_shape(reference) == shape


def test_prompt_template_masks_numbers_quotes_and_listed_items() -> None:
    assert prompt_template("Sort: b, a") == prompt_template("Sort: x, y, z")
    assert prompt_template('Reverse "abc" now') == prompt_template('Reverse "xy" now')


def samples(completions: list[str]) -> list[Sample]:
    return [Sample(c, "Sort these words: b, a", "a, b") for c in completions]


# (completions, scores) -> flagged or not
@pytest.mark.parametrize(
    ("completions", "scores", "flag"),
    [
        # pays nothing at all: flagged
        (["<answer>a, b</answer>"] * 2 + ["Sorted: a, b"] * 2, [0.0] * 4, "every one"),
        # pays tags, never a label and colon: flagged for that style
        (["<answer>a, b</answer>"] * 3 + ["Sorted: a, b"] * 3, [1, 1, 0, 0, 0, 0], "label_colon"),
        # pays some of each style: no flag
        (["<answer>a, b</answer>"] * 3 + ["Sorted: a, b"] * 3, [1, 0, 0, 1, 0, 0], ""),
        # too few to say anything
        (["<answer>a, b</answer>", "Sorted: a, b"], [0.0, 0.0], ""),
    ],
)
def test_batch_flag(completions: list[str], scores: list[float], flag: str) -> None:
    reason = batch_flag(samples(completions), [float(s) for s in scores])
    assert (flag in reason) if flag else reason == ""
