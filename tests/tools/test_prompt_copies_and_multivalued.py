"""Cases a held-out audit (GSM8K test and MATH-500 lines the bundled examples never used)
found: an echoed question paid by its own numbers, a several-valued reference paid by a
hedge that math-verify read whole as one decimal, and LaTeX thousands spacing read as the
end of a sentence."""

from __future__ import annotations

import pytest

from rewardsmith.library.store import Library
from rewardsmith.types import Sample

ROOTS = (
    "Find all the integer roots of\n\\[x^4 + 5x^3 + 9x^2 - x - 14 = 0.\\]Enter all the "
    "integer roots, separated by commas."
)
CEIL = "Evaluate $\\lceil{\\sqrt{20}}\\rceil^2$."
SARA = (
    "Sara wants to buy herself a new jacket and 2 pairs of shoes. Her parents pay her $4 each "
    "time she mows the lawn. If Sara already had $10 saved before she started babysitting, how "
    "many times must she mow the lawn before she can afford the jacket and shoes?"
)
SARA_LAST = SARA[SARA.index("If Sara") :]
BIG = "11,\\! 111,\\! 111,\\! 100"

CASES = [
    # a several-valued reference: extra values or a hedge are not the answer
    ("math", "Final answer: -2,1, 15x - 80, -13x+3", ROOTS, "-2,1", 0.0),
    ("math", "I think it is 15x - 80 or -2,1.", ROOTS, "-2,1", 0.0),
    ("math", "Final answer: -2, 1", ROOTS, "-2,1", 1.0),
    ("math", "The integer roots are $-2$ and $1$, so\n\\boxed{-2, 1}", ROOTS, "-2,1", 1.0),
    # the question given back holds no answer, however its numbers evaluate
    ("math", CEIL, CEIL, "25", 0.0),
    ("math", f"{CEIL}\nSo the answer is 25.", CEIL, "25", 1.0),
    ("gsm8k", SARA_LAST, SARA, "10", 0.0),
    ("gsm8k", f"{SARA_LAST} The answer follows from the question above.", SARA, "10", 0.0),
    ("gsm8k", f"{SARA_LAST}\nShe has to mow it 10 times.", SARA, "10", 1.0),
    ("gsm8k", "She must mow the lawn 10 times.", SARA, "10", 1.0),
    # LaTeX thousands spacing inside a marked answer
    ("math", f"Final answer: {BIG}", "q", BIG, 1.0),
    ("math", f"The answer is {BIG}.", "q", BIG, 1.0),
    ("math", "The answer is 11,111,111,100.", "q", BIG, 1.0),
]


@pytest.mark.parametrize(("tool", "completion", "prompt", "reference", "score"), CASES)
def test_held_out_audit_cases(
    library: Library, tool: str, completion: str, prompt: str, reference: str, score: float
) -> None:
    reward = library.get(tool).score([Sample(completion, prompt, reference)])[0]
    assert reward.score == score, reward.reason
