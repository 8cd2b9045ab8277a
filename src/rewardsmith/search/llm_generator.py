"""The LLM generator: an OpenAI-compatible model writes each candidate's source.

One chat call per candidate (`REWARDSMITH_LLM_BASE_URL`, `REWARDSMITH_LLM_MODEL`,
`REWARDSMITH_LLM_API_KEY`, or a given `LLMClient`). The request holds, in this order:

1. the task's description and examples: prompts the policy sees, their references, and one
   right and one wrong response sampled from the policy (the proxy pool), as quoted data
   (`rewardsmith.llm.quoting`: policy output is never an instruction to the generator);
2. the reward signature, what the reward is added to and how candidates are judged, and the
   sandbox's rules (allowed imports, forbidden names);
3. the ranking summary of earlier rounds (`search.feedback`: metrics per fidelity level,
   per-component training statistics, rejected candidates with stage and reason, names
   used), clipped to fit `prompt_chars`;
4. which candidate of the round to write.

The code is the answer's first fenced block (else the text from the first `import`/`def`
line; `synth.codeverify_llm.extract_code`); a first line `# name: ...` names it. The source
is never run here: the search loop sends it through the 4-stage check, and a rejected one
is fed back in the next round's summary. `told()` is exactly the request's messages.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from rewardsmith.llm.client import LLMClient
from rewardsmith.llm.quoting import DATA_RULE, clip_head, data_block
from rewardsmith.sandbox.policy import ALLOWED_IMPORTS, FORBIDDEN_CALLS
from rewardsmith.search.feedback import Feedback
from rewardsmith.search.generator import Proposal, candidate_name
from rewardsmith.search.response_pool import PoolItem
from rewardsmith.search.task import SearchTask
from rewardsmith.synth.codeverify_llm import extract_code

log = logging.getLogger(__name__)

SYSTEM = (
    "You write Python reward functions for reinforcement learning of language models with "
    "GRPO. Reply with one Python code block that holds the whole module, and nothing else. "
    + DATA_RULE
)
#: Tokens per answer: a reward function fits in a few hundred.
MAX_TOKENS = 700
#: Characters of the whole request; a small model's context must hold it and the answer.
PROMPT_CHARS = 6000
EXAMPLES_SHOWN = 3
RESPONSE_CHARS = 240
TEMPERATURE = 0.7
#: Seconds one answer may take: a local model on a busy CPU writes 700 tokens in minutes
#: (the client's default 60 s would give up, and its retry would queue behind the
#: unfinished request).
TIMEOUT_S = 600.0
_NAME_LINE = re.compile(r"#\s*name\s*:\s*([A-Za-z][A-Za-z0-9_\- ]{0,40})")


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n] + " ..."


def task_section(task: SearchTask, pool: Sequence[PoolItem]) -> str:
    """The task's description and a few examples with a right and a wrong response."""
    groups: dict[int, list[PoolItem]] = {}
    for item in pool:
        if item.probe is None:
            groups.setdefault(item.group, []).append(item)
    examples = []
    for members in groups.values():
        right = next((m for m in members if m.correct), None)
        wrong = next((m for m in members if not m.correct), None)
        if right is None and wrong is None:
            continue
        first = members[0]
        example = {
            "prompt": clip_head(first.prompt, 300),
            "reference": clip_head(first.reference or "", 300),
        }
        if right is not None:
            example["a right response"] = clip_head(right.completion, RESPONSE_CHARS)
        if wrong is not None:
            example["a wrong response"] = clip_head(wrong.completion, RESPONSE_CHARS)
        examples.append(example)
        if len(examples) == EXAMPLES_SHOWN:
            break
    return (
        f"Task: {task.description}\n\nExamples (quoted data; the responses are the "
        f"policy's):\n{data_block(examples)}"
    )


def rules_section(task: SearchTask) -> str:
    """The signature, what the reward joins, and the sandbox's rules."""
    base = ", ".join(task.base_rewards)
    return (
        "Write a new reward function: a Python module that defines\n\n"
        "    BOUNDS = (low, high)\n"
        "    def reward(completions, references, prompts=None, **kwargs) -> list[float]\n\n"
        "returning one float per completion, each within BOUNDS (references and prompts are "
        "lists of the same length; a reference may be None). The reward is added to the "
        f"base rewards ({base}: exact format, approximate format, answer check) and the sum "
        "trains the policy with GRPO; candidates are ranked by held-out F1 after training. "
        "Reward what makes answers right: a reward the policy can collect without being "
        "right (length, repetition, copying numbers) will be exploited and ranks low.\n\n"
        "Rules: import only these modules: "
        + ", ".join(sorted(ALLOWED_IMPORTS))
        + ". Do not use names that start with an underscore, and do not call "
        + ", ".join(sorted(c for c in FORBIDDEN_CALLS if not c.startswith("_")))
        + ". No classes, no file or network access. The function must return the same "
        "scores when called twice on the same inputs."
    )


class LLMGenerator:
    """Candidates written by an OpenAI-compatible model (see the module docstring)."""

    kind = "llm"

    def __init__(
        self,
        task: SearchTask,
        pool: Sequence[PoolItem],
        client: LLMClient | None = None,
        *,
        seed: int = 0,
        max_tokens: int = MAX_TOKENS,
        prompt_chars: int = PROMPT_CHARS,
    ) -> None:
        self.task = task
        self.pool = pool
        self.client = client or LLMClient(timeout=TIMEOUT_S)
        self.seed = seed
        self.max_tokens = max_tokens
        self.prompt_chars = prompt_chars

    def request(self, feedback: Feedback) -> str:
        """The user message before the per-candidate line (the summary clipped to fit)."""
        head = task_section(self.task, self.pool) + "\n\n" + rules_section(self.task)
        for shown in (15, 8, 4, 2, 0):
            summary = feedback.render(shown=shown)
            text = head + "\n\n" + summary
            if len(text) + len(SYSTEM) <= self.prompt_chars:
                return text
        return _clip(head + "\n\n" + feedback.render(shown=0), self.prompt_chars)

    def told(self, feedback: Feedback, count: int) -> str:
        messages = ["Then one request per candidate, the same with this last paragraph:"]
        messages += [f"- {self._ask(i, count, feedback.round)}" for i in range(1, count + 1)]
        return (
            "## system\n\n"
            + SYSTEM
            + "\n\n## user\n\n"
            + self.request(feedback)
            + "\n\n"
            + "\n".join(messages)
            + "\n"
        )

    @staticmethod
    def _ask(index: object, count: object, round_no: int) -> str:
        return (
            f"Write candidate {index} of {count} for round {round_no}; make it different from "
            "the candidates above. Start the module with a comment line "
            "`# name: short_snake_case_name`."
        )

    def propose(
        self, round_no: int, count: int, feedback: Feedback, start: int = 1
    ) -> list[Proposal]:
        """Candidates `start`..`count` of the round (a resumed round asks only for those
        it lacks)."""
        base = self.request(feedback)
        out = []
        for index in range(start, count + 1):
            messages = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": base + "\n\n" + self._ask(index, count, round_no)},
            ]
            answer = self.client.chat(
                messages,
                max_tokens=self.max_tokens,
                temperature=TEMPERATURE,
                extra={"seed": self.seed * 1000 + round_no * 100 + index},
            )
            source = extract_code(answer.text)
            found = _NAME_LINE.search(answer.text)
            name = candidate_name(round_no, index, found.group(1) if found else "llm")
            log.info("LLM candidate %s: %d characters of code", name, len(source))
            out.append(
                Proposal(
                    name,
                    source,
                    f"written by {answer.model}",
                    details={
                        "model": answer.model,
                        "prompt_tokens": answer.prompt_tokens,
                        "completion_tokens": answer.completion_tokens,
                        "seconds": round(answer.seconds, 1),
                        "answer_chars": len(answer.text),
                    },
                )
            )
        return out
