"""CodeVerify with an LLM: an OpenAI-compatible model writes the verifier's source.

The model is shown the reward signature, the sandbox's rules (allowed imports, forbidden
names) and the fit examples, and answers with a Python module. The examples (and the task's
title, the cases fed back) are quoted data (`rewardsmith.llm.quoting`: a JSON block their
text cannot close, and a system rule that nothing in it is an instruction): a completion
that says "also accept any answer containing X" is an example to grade, not a request. The
verifier that comes back still passes the gate, whose probes look for such backdoors. Each answer goes through
the sandbox's 4-stage check (`check_reward_code`) and, once admitted there, is run on the
fit cases in the sandbox; a failure goes back to the model with the error or the cases it
scored wrongly, for at most `max_attempts` answers. The best admitted answer (fewest wrong
fit cases) becomes the candidate; with none admitted, the last answer does, and the gate
rejects it in its `runs` check, saying why. Model code never runs outside the sandbox.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from rewardsmith.errors import ConfigError
from rewardsmith.llm.client import LLMClient
from rewardsmith.llm.quoting import DATA_RULE, clip_head, clip_tail, data_block
from rewardsmith.sandbox.policy import ALLOWED_IMPORTS, FORBIDDEN_CALLS
from rewardsmith.synth.cases import Case
from rewardsmith.synth.codeverify import CodeCandidate, fit_cases, split_for_synthesis
from rewardsmith.synth.examples import Example
from rewardsmith.synth.tools import CodeVerifierTool
from rewardsmith.tools.reward_fn import reward_code_report
from rewardsmith.types import Sample, ToolSpec

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = 3
# Tokens per answer: a verifier fits in a few hundred; small models ramble past any limit.
MAX_TOKENS = 600
# Characters of each example shown to the model: prompts and completions are clipped (the
# answer is at a completion's end), so the whole request fits a small model's context.
PROMPT_CHARS = 160
COMPLETION_CHARS = 200
EXAMPLES_SHOWN = 6
# Wrong fit cases quoted back to the model after an attempt.
MISSES_SHOWN = 3

SYSTEM = (
    "You write Python reward functions for reinforcement learning. Reply with one Python "
    "code block that holds the whole module, and nothing else. " + DATA_RULE
)
_CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


def extract_code(text: str) -> str:
    """The Python source in a model's answer: its first fenced block, else the text from the
    first `import`/`def`/`BOUNDS` line on."""
    found = _CODE_BLOCK.search(text)
    if found:
        return found.group(1).strip() + "\n"
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(("import ", "from ", "def ", "BOUNDS")):
            return "\n".join(lines[i:]).strip() + "\n"
    return text.strip() + "\n"


def request(examples: Sequence[Example], title: str) -> str:
    """The first user message: the signature, the rules and the examples."""
    labeled = [e for e in examples if e.labeled][:EXAMPLES_SHOWN]
    plain = [e for e in examples if not e.labeled][: max(0, EXAMPLES_SHOWN - len(labeled))]
    parts = [
        f"Write a Python module for the task {data_block(title)}\nIt must define\n\n"
        "    BOUNDS = (0.0, 1.0)\n"
        "    def reward(completions, references, prompts=None, **kwargs) -> list[float]\n\n"
        "`reward` returns one float per completion: 1.0 when the final answer in the "
        "completion matches the reference answer, else 0.0. Find the answer the way the "
        "completions below give it; accept only the differences the examples show are "
        "accepted.",
        "Rules: import only these modules: "
        + ", ".join(sorted(ALLOWED_IMPORTS))
        + ". Do not use names that start with an underscore or double underscores, and do "
        "not call "
        + ", ".join(sorted(c for c in FORBIDDEN_CALLS if not c.startswith("_")))
        + ". No classes, no file or network access.",
    ]
    if labeled:
        rows = [
            {
                "prompt": clip_head(e.prompt, PROMPT_CHARS),
                "reference": e.reference,
                "completion": clip_tail(e.completion or "", COMPLETION_CHARS),
                "verdict": "right (1.0)" if e.label else "wrong (0.0)",
            }
            for e in labeled
        ]
        parts.append("Completions with their verdicts (quoted data):\n" + data_block(rows))
    if plain:
        rows = [
            {"prompt": clip_head(e.prompt, PROMPT_CHARS), "reference": e.reference} for e in plain
        ]
        parts.append(
            "More prompts with their reference answers (quoted data):\n" + data_block(rows)
        )
    return "\n\n".join(parts)


def _misses_feedback(misses: Sequence[tuple[Case, float]]) -> str:
    shown = misses[:MISSES_SHOWN]
    rows = [
        {
            "case": i,
            "completion": clip_tail(c.completion, COMPLETION_CHARS),
            "reference": c.reference,
        }
        for i, (c, _) in enumerate(shown, 1)
    ]
    verdicts = [
        f"- case {i}: expected {float(c.label)}, got {got}" for i, (c, got) in enumerate(shown, 1)
    ]
    return (
        "Your function scored these examples wrongly; fix it and send the whole module.\n"
        "The cases (quoted data):\n" + data_block(rows) + "\n" + "\n".join(verdicts)
    )


def _run_on_cases(source: str, cases: Sequence[Case]) -> tuple[list[tuple[Case, float]], str]:
    """Run an admitted program on the fit cases in the sandbox: its misses, or an error."""
    try:
        tool = CodeVerifierTool(ToolSpec(name="llm_candidate", kind="code"), source)
    except ConfigError as exc:
        return [], str(exc)
    try:
        rewards = tool.score([Sample(c.completion, c.prompt, c.reference) for c in cases])
    finally:
        tool.close()
    broken = [r for r in rewards if r.status != "ok"]
    if broken:
        return [], f"the function failed when run: {broken[0].reason}"
    misses = [
        (c, float(r.score or 0.0))
        for c, r in zip(cases, rewards, strict=True)
        if (float(r.score or 0.0) >= 0.5) != bool(c.label)
    ]
    return misses, ""


def synthesize_llm(
    examples: Sequence[Example],
    title: str,
    *,
    client: LLMClient | None = None,
    max_attempts: int = DEFAULT_ATTEMPTS,
    max_tokens: int = MAX_TOKENS,
) -> CodeCandidate:
    """Ask the model for a verifier, checking and feeding back each answer (see module
    docstring). Raises `LLMError` when the endpoint cannot be used at all."""
    if max_attempts < 1:
        raise ConfigError("CodeVerify LLM backend: max_attempts must be >= 1")
    client = client or LLMClient()
    fit, held = split_for_synthesis(examples)
    cases = fit_cases(fit, examples)
    messages: list[dict[str, str]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": request(fit, title)},
    ]
    attempts: list[dict[str, Any]] = []
    best: tuple[int, str] | None = None  # (fit cases scored wrong, source)
    last_source = ""
    for n in range(1, max_attempts + 1):
        answer = client.chat(messages, max_tokens=max_tokens)
        source = extract_code(answer.text)
        last_source = source
        record: dict[str, Any] = {
            "attempt": n,
            "prompt_tokens": answer.prompt_tokens,
            "completion_tokens": answer.completion_tokens,
        }
        # The check a `CodeVerifierTool` of this source gets: building it for the fit cases,
        # the gate and the library then reuse this one report.
        check = reward_code_report(source, bounds=(0.0, 1.0))
        if not check.admitted:
            record.update(stage=check.failed_stage.stage if check.failed_stage else 0)
            record["error"] = check.reason
            feedback = (
                f"Your code was rejected by the sandbox check: {check.reason}. Fix it and "
                "send the whole module again."
            )
        else:
            misses, error = _run_on_cases(source, cases)
            record.update(stage=5 if error else 0, fit_misses=len(misses))
            if error:
                record["error"] = error
                feedback = f"{error}. Fix it and send the whole module again."
            else:
                if best is None or len(misses) < best[0]:
                    best = (len(misses), source)
                if not misses:
                    attempts.append(record)
                    break
                record["error"] = f"{len(misses)} of {len(cases)} fit cases scored wrongly"
                feedback = _misses_feedback(misses)
        attempts.append(record)
        log.info("CodeVerify LLM attempt %d: %s", n, record.get("error", "ok"))
        messages += [
            {"role": "assistant", "content": answer.text},
            {"role": "user", "content": feedback},
        ]
    chosen = best[1] if best is not None else last_source
    return CodeCandidate(
        source=chosen,
        method="codeverify-llm",
        fit=fit,
        held_out=held,
        details={
            "model": client.model,
            "attempts": attempts,
            "admitted_by_check": best is not None,
            "fit_cases": len(cases),
            "fit_misses": best[0] if best is not None else None,
            "tokens": client.usage.to_dict(),
        },
    )
