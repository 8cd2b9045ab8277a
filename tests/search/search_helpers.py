"""Hand-made pools and programs for search tests: testbed problems answered right, with a
wrong final answer, and with a wrong equation and answer."""

from __future__ import annotations

from rewardsmith.rl import problems as P
from rewardsmith.search.program import RewardProgram, Term, render_program
from rewardsmith.search.response_pool import PoolItem


def crafted_pool(groups: int = 6, seed: int = 3) -> list[PoolItem]:
    """Per problem: two right responses, one with a wrong answer after right reasoning, one
    whose last equation and answer are both wrong."""
    items: list[PoolItem] = []
    for g, p in enumerate(P.generate(groups, seed, "test")):
        right = p.completion
        wrong_answer = right.replace(
            f"<solution>{p.answer}</solution>", f"<solution>{p.answer + 1}</solution>"
        )
        wrong_step = right.replace(f"={p.answer}.", f"={p.answer + 2}.").replace(
            f"<solution>{p.answer}</solution>", f"<solution>{p.answer + 2}</solution>"
        )
        for text, ok in ((right, True), (right, True), (wrong_answer, False), (wrong_step, False)):
            items.append(PoolItem(g, p.prompt, p.reference, text, ok, True))
    return items


def misdirection_pool(mixed: int = 4, all_wrong: int = 4, seed: int = 5) -> list[PoolItem]:
    """The round-1 failure's setting: wrong answers come with a habit right ones lack (a
    line of text before the tags). `mixed` groups: two right responses, two wrong ones
    with the habit; `all_wrong` groups: every response wrong, two with the habit."""
    items: list[PoolItem] = []
    for g, p in enumerate(P.generate(mixed + all_wrong, seed, "test")):
        right = p.completion

        def wrong(by: int, text: str = right, answer: int = p.answer) -> str:
            return text.replace(
                f"<solution>{answer}</solution>", f"<solution>{answer + by}</solution>"
            )

        habit = "Hmm, I am not sure about this one.\n"
        if g < mixed:
            answers = [
                (right, True),
                (right, True),
                (habit + wrong(1), False),
                (habit + wrong(2), False),
            ]
        else:
            answers = [
                (wrong(1), False),
                (wrong(3), False),
                (habit + wrong(1), False),
                (habit + wrong(2), False),
            ]
        items += [PoolItem(g, p.prompt, p.reference, text, ok, True) for text, ok in answers]
    return items


def program_source(*terms: Term, name: str = "prog") -> str:
    return render_program(RewardProgram(tuple(terms)), name=name)


CONSTANT_SOURCE = """
BOUNDS = (0.0, 1.0)


def reward(completions, references, prompts=None, **kwargs):
    return [0.5 for _ in completions]
"""


# A task file's fields: the tiny testbed, a small pool, small held-out sets, short
# completions (tests/search/conftest.py writes it; `testbed-tiny` is built once per session).
TINY_TASK = {
    "name": "tiny",
    "description": "Arithmetic word problems; answer in <solution> tags.",
    "policy": "testbed-tiny",
    "validation_size": 12,
    "test_size": 12,
    "pool_prompts": 4,
    "pool_group": 4,
    "eval_max_new_tokens": 24,
    "grpo": {"max_new_tokens": 16, "lora_rank": 0, "prompts_per_step": 2, "group_size": 2},
}
