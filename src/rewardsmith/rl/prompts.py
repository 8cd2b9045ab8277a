"""Training and evaluation prompts for GRPO: a question with its reference answer.

`load_items("testbed")` draws the `rl` split of the procedural problems (`rl.problems`);
any other source is a JSONL file read with `rewardsmith.jsonl`, one item per line. The
testbed's held-out set (`testbed_eval_problems`) shares no question with the warm-start set
or the first 20,000 GRPO prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.jsonl import iter_jsonl
from rewardsmith.rl import problems as P

#: Line fields read as the question and as the reference, first present wins.
QUESTION_FIELDS = ("question", "prompt")
REFERENCE_FIELDS = ("reference", "answer", "solution")
#: The task of the testbed's procedural problems.
TESTBED_TASK = "testbed"
#: Testbed prompts drawn when no count is given.
TESTBED_PROMPTS = 20_000


@dataclass(frozen=True)
class PromptItem:
    """One training or evaluation question with its reference answer."""

    question: str
    reference: str
    #: The line's `task` field (`testbed` for the procedural problems): what per-task metrics
    #: and rollout lines are keyed by.
    task: str | None = None


def testbed_train_problems(n: int, seed: int = 0) -> list[P.Problem]:
    """Prompts for GRPO on the testbed: the `rl` split."""
    return P.generate(n, seed, "rl")


def testbed_eval_problems(n: int, seed: int = 0, sft_problems: int = 50_000) -> list[P.Problem]:
    """The held-out set: `test`-split problems whose questions are in neither the warm-start
    set nor the first 20,000 GRPO prompts."""
    exclude = [*P.generate(sft_problems, seed, "sft"), *P.generate(TESTBED_PROMPTS, seed, "rl")]
    return P.split_problems(n, seed, "test", exclude=exclude)


def load_items(source: str, n: int | None = None, seed: int = 0) -> list[PromptItem]:
    """Training prompts: `testbed` (the `rl` split of the procedural problems, 20,000 by
    default) or a JSONL file with a question (`question` or `prompt`) and a reference
    (`reference`, `answer` or `solution`) per line, and optionally its `task`."""
    if source == "testbed":
        problems = testbed_train_problems(n or TESTBED_PROMPTS, seed)
        return [PromptItem(p.question, p.reference, TESTBED_TASK) for p in problems]
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"prompts {source!r}: expected 'testbed' or a JSONL file")
    items: list[PromptItem] = []
    for line_no, row in iter_jsonl(path):
        if not isinstance(row, dict):
            raise InputError(f"{path}:{line_no}: expected a JSON object")
        question = next((row[k] for k in QUESTION_FIELDS if row.get(k)), None)
        reference = next((row[k] for k in REFERENCE_FIELDS if k in row), None)
        if not isinstance(question, str) or reference is None:
            raise InputError(f"{path}:{line_no}: needs a question/prompt and a reference/answer")
        task = row.get("task")
        items.append(PromptItem(question, str(reference), task if isinstance(task, str) else None))
        if n and len(items) >= n:
            break
    return items
