"""Training and evaluation prompts for GRPO: a question with its reference answer.

`load_items("testbed")` draws the `rl` split of the procedural problems (`rl.problems`),
`load_items("testbed-multi")` the `rl` split of the multi-task mix (`rl.multitask`, each item
with its task family); any other source is a JSONL file read with `rewardsmith.jsonl`, one
item per line. The held-out sets (`testbed_eval_problems`, `multitask_eval_tasks`) share no
question with the warm-start set or the first 20,000 GRPO prompts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.jsonl import iter_jsonl
from rewardsmith.rl import multitask as M
from rewardsmith.rl import problems as P
from rewardsmith.rl.families import Task

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
    #: The line's `task` field (`testbed` for the procedural problems, the family for
    #: `testbed-multi`): what routing, per-task metrics and rollout lines are keyed by.
    task: str | None = None


def testbed_train_problems(n: int, seed: int = 0) -> list[P.Problem]:
    """Prompts for GRPO on the testbed: the `rl` split."""
    return P.generate(n, seed, "rl")


def testbed_eval_problems(n: int, seed: int = 0, sft_problems: int = 50_000) -> list[P.Problem]:
    """The held-out set: `test`-split problems whose questions are in neither the warm-start
    set nor the first 20,000 GRPO prompts."""
    exclude = [*P.generate(sft_problems, seed, "sft"), *P.generate(TESTBED_PROMPTS, seed, "rl")]
    return P.split_problems(n, seed, "test", exclude=exclude)


#: The multi-task testbed's warm-start size (`rl.testbed.TESTBED_MULTI.sft_problems`), whose
#: questions its held-out set leaves out.
MULTI_SFT_PROBLEMS = 60_000


def multitask_eval_tasks(
    per_family: int, seed: int = 0, sft_problems: int = MULTI_SFT_PROBLEMS
) -> list[Task]:
    """The multi-task held-out set: `per_family` `test` tasks of each family, none of whose
    questions is in the warm-start set or the first 20,000 GRPO prompts; grouped by family
    in `rl.multitask.MIX` order."""
    exclude = [*M.draw(sft_problems, seed, "sft"), *M.draw(TESTBED_PROMPTS, seed, "rl")]
    out: list[Task] = []
    for name in M.MIX:
        out.extend(M.held_out(per_family, seed, (name,), exclude=exclude))
    return out


def load_items(source: str, n: int | None = None, seed: int = 0) -> list[PromptItem]:
    """Training prompts: `testbed` (the `rl` split of the procedural problems, 20,000 by
    default), `testbed-multi` (the `rl` split of the multi-task mix, with each item's task)
    or a JSONL file with a question (`question` or `prompt`), a reference (`reference`,
    `answer` or `solution`) and optionally a `task` per line."""
    if source == "testbed":
        problems = testbed_train_problems(n or TESTBED_PROMPTS, seed)
        return [PromptItem(p.question, p.reference, TESTBED_TASK) for p in problems]
    if source == "testbed-multi":
        tasks = M.draw(n or TESTBED_PROMPTS, seed, "rl")
        return [PromptItem(t.question, t.reference, t.family) for t in tasks]
    path = Path(source)
    if not path.is_file():
        raise ConfigError(
            f"prompts {source!r}: expected 'testbed', 'testbed-multi' or a JSONL file"
        )
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
