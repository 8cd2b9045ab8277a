"""majority_vote: a group's most frequent final answer is paid, with no reference."""

from __future__ import annotations

import pytest

from rewardsmith.errors import ConfigError
from rewardsmith.library.registry import BUILTINS, build_tool
from rewardsmith.tools.majority import MajorityVoteTool, agreement, read_vote
from rewardsmith.types import Reward, Sample

PROMPT = "Tom has 4 bags with 8 apples each. How many apples does he have?"
OTHER = "A shelf holds 3 rows of 7 books. How many books are on the shelf?"


def vote(completions: list[str], tool: MajorityVoteTool | None = None) -> list[float | None]:
    """The scores of one group: every completion answers PROMPT."""
    rewards = (tool or MajorityVoteTool()).score([Sample(c, prompt=PROMPT) for c in completions])
    return [r.score for r in rewards]


@pytest.mark.parametrize(
    ("completions", "expected"),
    [
        # the testbed's format: the majority answer is paid, the minority is not
        (
            ["<solution>32</solution>", "<solution>32</solution>", "<solution>31</solution>"],
            [1.0, 1.0, 0.0],
        ),
        # one answer in many styles is one vote: 32, 32.0, \boxed{32}, #### 32, $32, prose
        (
            [
                "4 * 8 = 32\n#### 32",
                "\\boxed{32}",
                "The answer is 32.0",
                "He has $32 worth, i.e. 32 apples.",
                "<solution>31</solution>",
                "<solution>30</solution>",
                "Final answer: 32",
            ],
            [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0],
        ),
        # thousands commas and trailing zeros do not split a vote
        (["#### 1,000", "The answer is 1000.00", "#### 999"], [1.0, 1.0, 0.0]),
        # a tie pays nobody: paying both would pay the group for hedging across samples
        (["#### 31", "#### 32", "#### 31", "#### 32"], [0.0, 0.0, 0.0, 0.0]),
        # a hedge has no vote and cannot vote twice: "31 or 32" does not break the tie
        (["#### 31", "#### 32", "The answer is 31 or 32."], [0.0, 0.0, 0.0]),
        # ... nor make a minority answer the majority
        (
            ["#### 32", "#### 32", "#### 31", "It is 31 or 32", "\\boxed{31} \\boxed{30}"],
            [1.0, 1.0, 0.0, 0.0, 0.0],
        ),
        # no parseable answer is never paid, even when most of the group has none
        (["I do not know.", "", "#### 32", "#### 32", "no idea"], [0.0, 0.0, 1.0, 1.0, 0.0]),
        # every answer different: no answer has two votes, nobody is paid
        (["#### 30", "#### 31", "#### 32"], [0.0, 0.0, 0.0]),
        # a group with no answers at all pays nobody
        (["hmm", "well"], [0.0, 0.0]),
        # a negated value is no vote for it ("not 31" votes 32)
        (["The answer is not 31, it is 32.", "#### 32", "#### 31"], [1.0, 1.0, 0.0]),
        # the question given back is no answer: its last number (8) does not vote
        ([PROMPT, PROMPT, "#### 32", "#### 32"], [0.0, 0.0, 1.0, 1.0]),
    ],
)
def test_majority_pays_the_most_frequent_answer(
    completions: list[str], expected: list[float]
) -> None:
    assert vote(completions) == expected


def test_groups_are_prompts_or_group_fields() -> None:
    """Each prompt votes on its own; a `group` field wins over the prompt."""
    samples = [
        # prompt A: 32 wins
        Sample("#### 32", prompt=PROMPT),
        Sample("#### 32", prompt=PROMPT),
        Sample("#### 21", prompt=PROMPT),
        # prompt B: 21 wins there (the 32s of prompt A do not count)
        Sample("#### 21", prompt=OTHER),
        Sample("#### 21", prompt=OTHER),
        Sample("#### 32", prompt=OTHER),
        # an explicit group joins samples whatever their prompt (and splits a prompt)
        Sample("#### 5", prompt="x", meta={"group": "g1"}),
        Sample("#### 5", prompt="y", meta={"group": "g1"}),
        Sample("#### 6", prompt=PROMPT, meta={"group": 7}),
        Sample("#### 6", prompt=PROMPT, meta={"group": "7"}),
    ]
    scores = [r.score for r in MajorityVoteTool().score(samples)]
    assert scores == [1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize(
    "samples",
    [
        # no prompt and no group: every sample is alone
        [Sample("#### 32"), Sample("#### 32")],
        # the only sample of its prompt
        [Sample("#### 32", prompt=PROMPT)],
        # the only sample of its group
        [Sample("#### 32", prompt=PROMPT, meta={"group": "a"})],
    ],
)
def test_a_vote_of_one_is_not_applicable(samples: list[Sample]) -> None:
    rewards = MajorityVoteTool().score(samples)
    assert all(r.score is None and r.status == "not_applicable" for r in rewards)
    assert "alone in its group" in rewards[0].reason


def test_reasons_and_vote_shares_say_what_happened() -> None:
    rewards: list[Reward] = MajorityVoteTool().score(
        [Sample(c, prompt=PROMPT) for c in ("#### 32", "\\boxed{32}", "#### 31", "31 or 32")]
    )
    assert rewards[0].reason == "majority answer 32 (2/4 votes)"
    assert rewards[2].reason.startswith("answer 31 is not the majority")
    assert rewards[3].reason.startswith("no vote: hedged")
    assert [r.components["vote_share"] for r in rewards] == [0.5, 0.5, 0.25, 0.0]
    assert rewards[0].tool == "majority_vote@1"


@pytest.mark.parametrize(
    ("completions", "expected"),
    [
        # text answers: case, spacing and `$` do not split a vote
        (["The answer is Paris.", "**Answer:** paris", "Final answer: Lyon"], [1.0, 1.0, 0.0]),
        # a plain number keeps its value in text mode: 32 and 32.0 are one vote
        (["Final answer: 32.0", "<answer>32</answer>", "Final answer: 31"], [1.0, 1.0, 0.0]),
        # a hedge of words has no vote
        (["The answer is Paris or Lyon.", "The answer is Lyon.", "Final answer: Paris"], [0.0] * 3),
    ],
)
def test_text_answers(completions: list[str], expected: list[float]) -> None:
    assert vote(completions, MajorityVoteTool(answers="text")) == expected


def test_min_votes_raises_the_bar() -> None:
    strict = MajorityVoteTool(min_votes=3)
    assert vote(["#### 32", "#### 32", "#### 31"], strict) == [0.0, 0.0, 0.0]
    assert vote(["#### 32", "#### 32", "#### 32", "#### 1"], strict) == [1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize(
    "params",
    [
        {"answers": "latex"},  # no such reading
        {"min_votes": 1},  # a lone answer would be paid
        {"min_votes": True},
        {"timeout_seconds": 0},
    ],
)
def test_bad_config_is_refused(params: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        MajorityVoteTool(**params)  # type: ignore[arg-type]


def test_registered_as_a_builtin_without_reference() -> None:
    builtin = next(b for b in BUILTINS if b.spec.name == "majority_vote")
    tool = build_tool(builtin.spec, builtin.config())
    assert isinstance(tool, MajorityVoteTool)
    assert not builtin.spec.needs_reference and not builtin.spec.exemplars  # never routed to
    # a reference, even a wrong one, changes nothing: the tool never reads it
    samples = [Sample("#### 32", prompt=PROMPT, reference="31") for _ in range(2)]
    assert [r.score for r in tool.score(samples)] == [1.0, 1.0]


@pytest.mark.parametrize(
    ("completions", "expected"),
    [
        # everyone agrees
        (["#### 32", "\\boxed{32}", "32.0"], 1.0),
        # two of four agree
        (["#### 32", "#### 32", "#### 31", "#### 30"], 0.5),
        # no answer and hedges never agree
        (["", "31 or 32", "#### 32", "hmm"], 0.25),
        (["", "nothing"], 0.0),
    ],
)
def test_agreement(completions: list[str], expected: float) -> None:
    assert agreement([read_vote(c, PROMPT) for c in completions]) == expected


def test_jsonl_lines_vote_by_their_group_field() -> None:
    """`rewardsmith score` lines: a top-level `group` (as rollout files have) groups them."""
    from rewardsmith.scoring import score

    lines = [
        {"prompt": "p1", "completion": "#### 4", "group": "step-1/prompt-0"},
        {"prompt": "p2", "completion": "#### 4", "group": "step-1/prompt-0"},
        {"prompt": "p3", "completion": "#### 5", "group": "step-1/prompt-0"},
        {"prompt": "p1", "completion": "#### 5", "group": 2},
        {"prompt": "p1", "completion": "#### 5", "group": 2},
    ]
    assert [r.score for r in score(lines, tool=MajorityVoteTool())] == [1.0, 1.0, 0.0, 1.0, 1.0]
